/**
 * Whether an owner may still be alive (G7). An owner is "alive" unless provably dead: another
 * boot id, no such pid on this boot, or the pid now held by a process with another start time.
 * Anything that cannot be judged (unreadable `/proc`, another pid namespace, unknown boot)
 * counts as alive, so a sweep errs towards keeping.
 */
import { errnoOf } from '../errors.ts';
import { fsSeam } from '../fs.ts';
import {
  UNKNOWN_BOOT,
  bootPrefix,
  ownIdentity,
  parseProcStat,
  type OwnerMarker,
} from './identity.ts';

export interface Verdict {
  alive: boolean;
  reason: string;
}

/**
 * Judges an owner. `prefixOnly` is set when the boot id comes from a dir name (8 hex digits): a
 * different prefix still proves another boot, and an equal prefix from another boot would only
 * lead to "dead" verdicts that are true anyway, since nothing from an earlier boot still runs.
 */
export function judge(
  id: { pid: number; bootId: string; startTicks: number; pidNamespace?: number },
  prefixOnly: boolean,
): Verdict {
  if (!Number.isSafeInteger(id.pid) || id.pid <= 0) {
    return { alive: true, reason: `pid ${String(id.pid)} is not a pid; cannot judge` };
  }
  const self = ownIdentity();
  const mine = prefixOnly ? bootPrefix(self.bootId) : self.bootId;
  if (self.bootId !== UNKNOWN_BOOT && id.bootId !== UNKNOWN_BOOT) {
    if (id.bootId !== mine) {
      return { alive: false, reason: `boot id ${id.bootId} is not this boot (${mine})` };
    }
    if (id.pidNamespace !== undefined && id.pidNamespace !== self.pidNamespace) {
      return {
        alive: true,
        reason: `owner is in pid namespace ${id.pidNamespace}, not ours (${String(self.pidNamespace)}); its pid cannot be judged from here`,
      };
    }
    let text: string;
    try {
      text = fsSeam.readFileSync(`/proc/${id.pid}/stat`).toString('utf8');
    } catch (e) {
      const code = errnoOf(e);
      // ESRCH: the process exited while we read its stat file.
      if (code === 'ENOENT' || code === 'ESRCH') {
        return { alive: false, reason: `no process ${id.pid} on this boot` };
      }
      return { alive: true, reason: `cannot read /proc/${id.pid}/stat (${String(code)})` };
    }
    const stat = parseProcStat(text);
    if (stat === undefined) {
      return { alive: true, reason: `cannot parse /proc/${id.pid}/stat` };
    }
    if (stat.startTicks !== id.startTicks) {
      return {
        alive: false,
        reason: `pid ${id.pid} now belongs to a process started at tick ${stat.startTicks}, not ${id.startTicks} (pid reused)`,
      };
    }
    // A zombie is kept too: its thread group may still run, and the next sweep gets it once reaped.
    return { alive: true, reason: `pid ${id.pid} still runs, started at tick ${id.startTicks}` };
  }
  if (self.bootId === UNKNOWN_BOOT && id.bootId === UNKNOWN_BOOT && process.platform !== 'linux') {
    // No /proc (macOS, BSD): no pid namespaces either, so "no such pid" still proves death. A
    // live pid may be a reuse, but that only errs towards keeping.
    try {
      process.kill(id.pid, 0);
    } catch (e) {
      if (errnoOf(e) === 'ESRCH') {
        return { alive: false, reason: `no process ${id.pid}` };
      }
    }
    return { alive: true, reason: `pid ${id.pid} exists (start time unknown on this platform)` };
  }
  return { alive: true, reason: 'boot id unknown; cannot judge' };
}

/**
 * Whether an owner may still be alive. It is "alive" unless provably dead: another boot id, no
 * such pid on this boot, or the pid now held by a process with another start time. Anything that
 * cannot be judged (unreadable `/proc`, another pid namespace, unknown boot) counts as alive.
 *
 * @example
 * ```ts
 * isOwnerAlive(currentOwner()); // true
 * isOwnerAlive({ ...currentOwner(), startTicks: 1 }); // false: our pid, another start time
 * ```
 */
export function isOwnerAlive(marker: OwnerMarker): boolean {
  return judge(marker, false).alive;
}

/** Owner dirs that this process holds open: always kept, whatever their marker says. */
const openHere = new Set<string>();

/** This process holds `ownerDir` open from now on: no sweep of its own may take it. */
export function holdOwnerDir(ownerDir: string): void {
  openHere.add(ownerDir);
}

/** This process no longer holds `ownerDir`. */
export function releaseOwnerDir(ownerDir: string): void {
  openHere.delete(ownerDir);
}

/** Whether this process holds `ownerDir` open. */
export function isHeldHere(ownerDir: string): boolean {
  return openHere.has(ownerDir);
}
