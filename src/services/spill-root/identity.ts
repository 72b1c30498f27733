/**
 * Who a process is, precisely enough to prove it dead later (G7): boot id, pid, the kernel's
 * start time of that pid and its pid namespace, as written to each owner dir's `owner.json`.
 * `kill(pid, 0)` means nothing once pids are reused; these together do.
 */
import { fsSeam } from '../fs.ts';
import { VERSION } from '../../version.ts';

/** The boot id of a platform without one (no /proc). */
export const UNKNOWN_BOOT = 'unknown';

/** `owner-<bootId8>-<pid>-<startTicks>`: the name of an owner dir, in three groups. */
export const OWNER_DIR_RE = /^owner-([0-9a-z]{1,8})-(\d{1,10})-(\d{1,20})$/;

/**
 * The contents of `owner.json`: who created an owner dir, precisely enough to prove it dead.
 *
 * @example
 * ```ts
 * const marker: OwnerMarker = JSON.parse(await readFile(join(ownerDir, 'owner.json'), 'utf8'));
 * ```
 */
export interface OwnerMarker {
  pid: number;
  /** `/proc/sys/kernel/random/boot_id`; `'unknown'` where the platform has none. */
  bootId: string;
  /** Field 22 of `/proc/<pid>/stat` (start time in clock ticks since boot); 0 when unknown. */
  startTicks: number;
  /** The Spillway version that wrote the marker. */
  version: string;
  /** ISO-8601 time the owner dir was created. */
  createdAt: string;
  /**
   * Inode of `/proc/self/ns/pid`. Pids only mean something inside one pid namespace: two
   * containers on one kernel share a boot id but not their pids, so an owner from another
   * namespace is never judged by pid. Absent where it cannot be read.
   */
  pidNamespace?: number;
}

/** What identifies a process across pid reuse: boot, pid, start time, pid namespace. */
export interface Identity {
  pid: number;
  bootId: string;
  startTicks: number;
  pidNamespace: number | undefined;
}

/** Parses `/proc/<pid>/stat`: the comm field may hold spaces and ')', so split after the last ')'. */
export function parseProcStat(
  text: string,
): { pid: number; state: string; startTicks: number } | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const pid = Number(text.slice(0, text.indexOf(' ')));
  // Fields after the comm start at field 3 (state); starttime is field 22.
  const rest = text.slice(close + 2).split(' ');
  const startTicks = Number(rest[19]);
  if (!Number.isSafeInteger(pid) || !Number.isSafeInteger(startTicks)) return undefined;
  return { pid, state: rest[0] ?? '', startTicks };
}

function readOwnIdentity(): Identity {
  const unknown: Identity = {
    pid: process.pid,
    bootId: UNKNOWN_BOOT,
    startTicks: 0,
    pidNamespace: undefined,
  };
  try {
    const bootId = fsSeam.readProcText('/proc/sys/kernel/random/boot_id').trim();
    const stat = parseProcStat(fsSeam.readProcText('/proc/self/stat'));
    // A /proc mounted from another pid namespace would describe some other process as "self":
    // then nothing read from it may be trusted to judge pids.
    if (!/^[0-9a-f-]{8,64}$/.test(bootId) || stat === undefined || stat.pid !== process.pid) {
      return unknown;
    }
    let pidNamespace: number | undefined;
    try {
      pidNamespace = fsSeam.procInode('/proc/self/ns/pid');
    } catch {
      // No namespaces to tell apart (an old kernel, a restricted /proc): judged as before.
    }
    return { pid: process.pid, bootId, startTicks: stat.startTicks, pidNamespace };
  } catch {
    return unknown;
  }
}

let self: Identity | undefined;

/**
 * This process's identity, read from /proc on first use (importing the package reads nothing)
 * and kept: it never changes. Read through the seam's /proc readers, which no fault reaches: a
 * fault a test arms on the seam must not poison it and name the owner dir wrongly.
 */
export function ownIdentity(): Identity {
  self ??= readOwnIdentity();
  return self;
}

export function bootPrefix(bootId: string): string {
  return bootId === UNKNOWN_BOOT ? UNKNOWN_BOOT : bootId.replace(/-/g, '').slice(0, 8);
}

export function ownerDirName(id: { bootId: string; pid: number; startTicks: number }): string {
  return `owner-${bootPrefix(id.bootId)}-${id.pid}-${id.startTicks}`;
}

/**
 * This process's identity, as written to `owner.json`.
 *
 * @example
 * ```ts
 * const me = currentOwner();
 * console.log(`owner-${me.bootId.slice(0, 8)}-${me.pid}-${me.startTicks}`);
 * ```
 */
export function currentOwner(): OwnerMarker {
  const self = ownIdentity();
  const marker: OwnerMarker = {
    pid: self.pid,
    bootId: self.bootId,
    startTicks: self.startTicks,
    version: VERSION,
    createdAt: new Date().toISOString(),
  };
  if (self.pidNamespace !== undefined) marker.pidNamespace = self.pidNamespace;
  return marker;
}
