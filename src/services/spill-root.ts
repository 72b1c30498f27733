/**
 * The spill root (DESIGN §3, G7): `<root>/spillway/owner-<bootId8>-<pid>-<startTicks>/`, one owner
 * dir per process, each with an `owner.json` marker, and the start-up sweep that removes the owner
 * dirs of processes that are provably dead.
 *
 * In-process cleanup can never cover `kill -9`, the OOM killer or a power cut, so every process
 * that opens a spill root first sweeps it. The sweep must never touch a live or foreign file:
 * `kill(pid, 0)` means nothing once pids are reused, so an owner is identified by boot id, pid and
 * the kernel's start time of that pid together, and anything we cannot judge is kept.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Stats } from 'node:fs';
import { addSuppressed, CleanupError, MisuseError, SpillwayError } from './errors.ts';
import { fsSeam } from './fs.ts';

/** The contents of `owner.json`: who created an owner dir, precisely enough to prove it dead. */
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

/** What one sweep did. Paths are absolute; `errors` never stop a sweep. */
export interface SweepReport {
  swept: string[];
  kept: string[];
  errors: { path: string; message: string }[];
}

/** A spill root that must not be used: missing, a symlink, not a directory, or unsafe. */
export class SpillRootError extends SpillwayError {}

const require = createRequire(import.meta.url);
const VERSION = (require('../../package.json') as { version: string }).version;

const UNKNOWN_BOOT = 'unknown';
/** A marker-less owner dir this young may still be being created by its (live) owner. */
const YOUNG_DIR_MS = 10 * 60 * 1000;
/** No honest owner.json is this large; refusing bigger ones bounds what a sweep reads. */
const MAX_MARKER_BYTES = 64 * 1024;
const OWNER_RE = /^owner-([0-9a-z]{1,8})-(\d{1,10})-(\d{1,20})$/;
const SWEPT_RE = /^swept-([0-9a-z]{1,8}-\d{1,10}-\d{1,20})-[0-9a-f]{8}$/;

// ---------------------------------------------------------------------------------------------
// Identity

interface Identity {
  pid: number;
  bootId: string;
  startTicks: number;
  pidNamespace: number | undefined;
}

/** Parses `/proc/<pid>/stat`: the comm field may hold spaces and ')', so split after the last ')'. */
function parseProcStat(
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
    const bootId = fsSeam.readFileSync('/proc/sys/kernel/random/boot_id').toString('utf8').trim();
    const stat = parseProcStat(fsSeam.readFileSync('/proc/self/stat').toString('utf8'));
    // A /proc mounted from another pid namespace would describe some other process as "self":
    // then nothing read from it may be trusted to judge pids.
    if (!/^[0-9a-f-]{8,64}$/.test(bootId) || stat === undefined || stat.pid !== process.pid) {
      return unknown;
    }
    return { pid: process.pid, bootId, startTicks: stat.startTicks, pidNamespace: undefined };
  } catch {
    return unknown;
  }
}

// Read once, at import, before any test can arm a fault on the seam: a process's identity never
// changes, and a poisoned cache would name the owner dir wrongly.
const self: Identity = readOwnIdentity();
/** The pid namespace needs an async stat; open() and the sweep await this before judging. */
const identityReady: Promise<void> =
  self.bootId === UNKNOWN_BOOT
    ? Promise.resolve()
    : fsSeam.stat('/proc/self/ns/pid').then(
        (s) => {
          self.pidNamespace = s.ino;
        },
        () => undefined,
      );

function bootPrefix(bootId: string): string {
  return bootId === UNKNOWN_BOOT ? UNKNOWN_BOOT : bootId.replace(/-/g, '').slice(0, 8);
}

function ownerDirName(id: { bootId: string; pid: number; startTicks: number }): string {
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

interface Verdict {
  alive: boolean;
  reason: string;
}

/**
 * Judges an owner. `prefixOnly` is set when the boot id comes from a dir name (8 hex digits): a
 * different prefix still proves another boot, and an equal prefix from another boot would only
 * lead to "dead" verdicts that are true anyway, since nothing from an earlier boot still runs.
 */
function judge(
  id: { pid: number; bootId: string; startTicks: number; pidNamespace?: number },
  prefixOnly: boolean,
): Verdict {
  if (!Number.isSafeInteger(id.pid) || id.pid <= 0) {
    return { alive: true, reason: `pid ${String(id.pid)} is not a pid; cannot judge` };
  }
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
      const code = (e as NodeJS.ErrnoException).code;
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
      if ((e as NodeJS.ErrnoException).code === 'ESRCH') {
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

// ---------------------------------------------------------------------------------------------
// Validation

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | undefined)?.code;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

const myUid: number | undefined =
  typeof process.getuid === 'function' ? process.getuid() : undefined;

/** Checks the spill root itself; returns its lstat (dev/ino identify it for the cache). */
async function checkRoot(root: string): Promise<Stats> {
  let st: Stats;
  try {
    st = await fsSeam.lstat(root);
  } catch (e) {
    throw new SpillRootError(
      code(e) === 'ENOENT'
        ? `spill root ${root} does not exist`
        : `spill root ${root} cannot be inspected: ${message(e)}`,
      { cause: e },
    );
  }
  if (st.isSymbolicLink()) {
    throw new SpillRootError(
      `spill root ${root} is a symlink; refusing it (pass the real directory instead)`,
    );
  }
  if (!st.isDirectory()) throw new SpillRootError(`spill root ${root} is not a directory`);
  if ((st.mode & 0o002) !== 0 && (st.mode & 0o1000) === 0) {
    throw new SpillRootError(
      `spill root ${root} is world-writable without the sticky bit (mode ${(st.mode & 0o7777).toString(8)}); any user could replace its entries, refusing it`,
    );
  }
  return st;
}

/**
 * Checks `<root>/spillway`: a real dir, ours, writable by nobody else. Anyone who could write
 * there could plant entries that the sweep or the spill writer would then act on.
 */
function checkSpillwayDir(dir: string, st: Stats): void {
  if (st.isSymbolicLink()) throw new SpillRootError(`${dir} is a symlink; refusing it`);
  if (!st.isDirectory()) throw new SpillRootError(`${dir} is not a directory`);
  if (myUid !== undefined && st.uid !== myUid) {
    throw new SpillRootError(
      `${dir} belongs to uid ${st.uid}, not to this user (uid ${myUid}); use another --spill-root`,
    );
  }
  if ((st.mode & 0o022) !== 0) {
    throw new SpillRootError(
      `${dir} is writable by group or others (mode ${(st.mode & 0o777).toString(8)}); expected 700`,
    );
  }
}

/** Creates `<root>/spillway` (0700) if needed and checks it. */
async function ensureSpillwayDir(dir: string): Promise<void> {
  try {
    await fsSeam.mkdir(dir, { mode: 0o700 });
  } catch (e) {
    if (code(e) !== 'EEXIST') {
      throw new SpillRootError(`cannot create ${dir}: ${message(e)}`, { cause: e });
    }
  }
  checkSpillwayDir(dir, await fsSeam.lstat(dir));
}

// ---------------------------------------------------------------------------------------------
// Sweep

type Log = (line: string) => void;

const defaultLog: Log = (line) => {
  if (process.env.SPILLWAY_DEBUG) console.error(line);
};

function rand8(): string {
  return randomBytes(4).toString('hex');
}

/** Reads and validates an owner dir's marker, never following a symlink. */
async function readMarker(ownerPath: string): Promise<OwnerMarker | string> {
  const file = join(ownerPath, 'owner.json');
  let st: Stats;
  try {
    st = await fsSeam.lstat(file);
  } catch (e) {
    return code(e) === 'ENOENT'
      ? 'owner.json is missing'
      : `owner.json cannot be read (${code(e) ?? message(e)})`;
  }
  if (!st.isFile()) return 'owner.json is not a regular file';
  if (st.size > MAX_MARKER_BYTES) return `owner.json is too large (${st.size} bytes)`;
  let text: string;
  try {
    text = (await fsSeam.readFile(file)).toString('utf8');
  } catch (e) {
    return `owner.json cannot be read (${code(e) ?? message(e)})`;
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    // Not the parser's message: it quotes the file, and the file is not ours to echo.
    return 'owner.json is not valid JSON';
  }
  const m = data as Partial<OwnerMarker> | null;
  if (
    typeof m !== 'object' ||
    m === null ||
    !Number.isSafeInteger(m.pid) ||
    (m.pid as number) <= 0 ||
    typeof m.bootId !== 'string' ||
    !(m.bootId === UNKNOWN_BOOT || /^[0-9a-f-]{8,64}$/.test(m.bootId)) ||
    !Number.isSafeInteger(m.startTicks) ||
    (m.startTicks as number) < 0 ||
    (m.pidNamespace !== undefined && !Number.isSafeInteger(m.pidNamespace))
  ) {
    return 'owner.json lacks a valid pid, bootId or startTicks';
  }
  return {
    pid: m.pid as number,
    bootId: m.bootId,
    startTicks: m.startTicks as number,
    version: typeof m.version === 'string' ? m.version : '',
    createdAt: typeof m.createdAt === 'string' ? m.createdAt : '',
    ...(m.pidNamespace !== undefined ? { pidNamespace: m.pidNamespace } : {}),
  };
}

/** Owner dirs that this process holds open: always kept, whatever their marker says. */
const openOwnerDirs = new Set<string>();

/** Whether an entry is a real directory of ours; otherwise says why it is left alone. */
function foreignReason(st: Stats): string | undefined {
  if (st.isSymbolicLink()) return 'a symlink (not followed)';
  if (!st.isDirectory()) return 'not a directory';
  if (myUid !== undefined && st.uid !== myUid) return `owned by uid ${st.uid}, not us`;
  return undefined;
}

/** Renames `path` to a fresh `swept-*` name, then removes it. False if someone else got it first. */
async function claimAndRemove(dir: string, path: string, stem: string): Promise<boolean> {
  // The rename is the claim: of two sweepers only one can move the entry, the other gets ENOENT.
  // A crash after it leaves a `swept-*` dir that any later sweep finishes.
  const claimed = join(dir, `swept-${stem}-${rand8()}`);
  try {
    await fsSeam.rename(path, claimed);
  } catch (e) {
    if (code(e) === 'ENOENT') return false;
    throw e;
  }
  try {
    await fsSeam.rm(claimed);
  } catch (e) {
    throw new CleanupError(`claimed ${path} as ${claimed} but could not remove it: ${message(e)}`, {
      cause: e,
    });
  }
  return true;
}

async function sweepOwner(
  dir: string,
  name: string,
  match: RegExpExecArray,
  report: SweepReport,
  log: Log,
): Promise<void> {
  const path = join(dir, name);
  const keep = (why: string): void => {
    report.kept.push(path);
    log(`spillway sweep: kept ${path}: ${why}`);
  };
  if (name === ownerDirName(self) || openOwnerDirs.has(path)) return keep('this process');
  let st: Stats;
  try {
    st = await fsSeam.lstat(path);
  } catch (e) {
    if (code(e) === 'ENOENT') return; // another sweeper got it
    throw e;
  }
  const foreign = foreignReason(st);
  if (foreign !== undefined) return keep(`${foreign}; left alone`);

  const marker = await readMarker(path);
  let problem = typeof marker === 'string' ? marker : undefined;
  if (typeof marker !== 'string' && ownerDirName(marker) !== name) {
    problem = `owner.json names ${ownerDirName(marker)}, not this dir`;
  }
  let verdict: Verdict;
  if (problem === undefined) {
    verdict = judge(marker as OwnerMarker, false);
  } else {
    const age = Date.now() - st.mtimeMs;
    if (age < YOUNG_DIR_MS) {
      return keep(`${problem}; dir is ${Math.round(age / 1000)} s old, may still be being created`);
    }
    const byName = judge(
      { bootId: match[1], pid: Number(match[2]), startTicks: Number(match[3]) },
      true,
    );
    verdict = { alive: byName.alive, reason: `${problem}; judged by its name: ${byName.reason}` };
  }
  if (verdict.alive) return keep(verdict.reason);
  if (await claimAndRemove(dir, path, name.slice('owner-'.length))) {
    report.swept.push(path);
    log(`spillway sweep: swept ${path}: ${verdict.reason}`);
  } else {
    log(`spillway sweep: ${path} was claimed by another sweeper`);
  }
}

async function finishSwept(
  dir: string,
  name: string,
  match: RegExpExecArray,
  report: SweepReport,
  log: Log,
): Promise<void> {
  const path = join(dir, name);
  let st: Stats;
  try {
    st = await fsSeam.lstat(path);
  } catch (e) {
    if (code(e) === 'ENOENT') return;
    throw e;
  }
  const foreign = foreignReason(st);
  if (foreign !== undefined) {
    log(`spillway sweep: left ${path} alone: ${foreign}`);
    return;
  }
  // Re-claim under a new name so two sweepers never remove the same tree at once.
  if (await claimAndRemove(dir, path, match[1])) {
    report.swept.push(path);
    log(`spillway sweep: finished ${path}, left by an interrupted sweep`);
  }
}

async function sweepSpillwayDir(dir: string, log: Log): Promise<SweepReport> {
  await identityReady;
  const report: SweepReport = { swept: [], kept: [], errors: [] };
  const fail = (path: string, e: unknown): void => {
    report.errors.push({ path, message: message(e) });
    log(`spillway sweep: error at ${path}: ${message(e)}`);
  };
  let names: string[];
  try {
    names = await fsSeam.readdir(dir);
  } catch (e) {
    if (code(e) !== 'ENOENT') fail(dir, e);
    return report;
  }
  for (const name of names.sort()) {
    try {
      const owner = OWNER_RE.exec(name);
      if (owner !== null) {
        await sweepOwner(dir, name, owner, report, log);
        continue;
      }
      const swept = SWEPT_RE.exec(name);
      if (swept !== null) await finishSwept(dir, name, swept, report, log);
      // Any other name is not Spillway's: never touched.
    } catch (e) {
      fail(join(dir, name), e);
    }
  }
  return report;
}

/**
 * Sweeps `<root>/spillway/`: removes the owner dirs of provably dead processes and finishes
 * interrupted sweeps. Live, undecidable and foreign entries are kept; symlinks are never followed;
 * nothing outside `<root>/spillway/` is touched. Safe to run concurrently with other sweepers and
 * with live owners. Per-entry errors are reported and logged, never thrown; only an unusable root
 * throws a {@link SpillRootError}.
 *
 * @example
 * ```ts
 * const report = await sweepSpillRoot(resolveSpillRoot(), { log: console.error });
 * console.log(JSON.stringify(report)); // {"swept":[…],"kept":[…],"errors":[]}
 * ```
 */
export async function sweepSpillRoot(
  root: string,
  options: { log?: (line: string) => void } = {},
): Promise<SweepReport> {
  const resolved = resolve(root);
  await checkRoot(resolved);
  const dir = join(resolved, 'spillway');
  let st: Stats;
  try {
    st = await fsSeam.lstat(dir);
  } catch (e) {
    if (code(e) === 'ENOENT') return { swept: [], kept: [], errors: [] };
    throw new SpillRootError(`cannot inspect ${dir}: ${message(e)}`, { cause: e });
  }
  checkSpillwayDir(dir, st);
  return sweepSpillwayDir(dir, options.log ?? defaultLog);
}

/**
 * The spill root to use: `explicit` (`--spill-root`), else `SPILLWAY_SPILL_ROOT`, else the OS
 * temp dir; always absolute.
 *
 * @example
 * ```ts
 * const root = resolveSpillRoot(args['spill-root']); // '/tmp' by default
 * ```
 */
export function resolveSpillRoot(explicit?: string): string {
  if (explicit !== undefined && explicit !== '') return resolve(explicit);
  const env = process.env.SPILLWAY_SPILL_ROOT;
  if (env !== undefined && env !== '') return resolve(env);
  return resolve(tmpdir());
}

// ---------------------------------------------------------------------------------------------
// SpillRoot

/** Owner dirs to remove when the process exits; an entry leaves only once it is really gone. */
const exitDirs = new Set<string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' fires on every normal ending, process.exit() from a signal handler included; nothing
  // async can run there, hence the sync removal. SIGINT/SIGTERM handlers belong to the CLI.
  process.on('exit', () => {
    for (const dir of exitDirs) {
      try {
        fsSeam.rmSync(dir);
      } catch {
        // Nothing to report to at exit; the next start's sweep removes what is left.
      }
    }
  });
}

interface CacheEntry {
  root: SpillRoot;
  ready: Promise<SpillRoot>;
}

/** One instance per spill root, keyed by device and inode so aliases of one dir share it. */
const cache = new Map<string, CacheEntry>();
/** Closes in flight, by key: a new open of the same root waits so it cannot race the removal. */
const closing = new Map<string, Promise<void>>();
/** Which instance holds an owner dir path, to notice a root that was deleted and recreated. */
const byOwnerDir = new Map<string, SpillRoot>();

/**
 * The process's view of one spill root: `<root>/spillway/owner-<bootId8>-<pid>-<startTicks>/`.
 *
 * @example
 * ```ts
 * const spill = await SpillRoot.open(resolveSpillRoot());
 * const taskDir = spill.taskDirPath('task-7'); // created later by the spill writer
 * await spill.close(); // or let process exit remove it
 * ```
 */
export class SpillRoot {
  /** The resolved spill root. */
  readonly root: string;
  /** This process's owner dir inside it. */
  readonly ownerDir: string;
  #lastSweep: SweepReport | undefined;
  #closePromise: Promise<void> | undefined;
  #detached = false;

  private constructor(
    root: string,
    private readonly key: string,
  ) {
    this.root = root;
    this.ownerDir = join(root, 'spillway', ownerDirName(self));
  }

  /** The report of the start-up sweep; `undefined` if it was opened with `sweep: false`. */
  get lastSweep(): SweepReport | undefined {
    return this.#lastSweep;
  }

  /**
   * Opens a spill root: validates it (an existing real directory, not a symlink, not
   * world-writable unless sticky), creates `<root>/spillway` (0700), sweeps it (unless
   * `sweep: false`), creates this process's owner dir (0700) with `owner.json` written
   * atomically, and registers its removal at process exit. A second call for the same directory
   * returns the same instance (its options are then ignored). The log is silent unless
   * `SPILLWAY_DEBUG` is set.
   *
   * @throws {@link SpillRootError} when the root is unusable.
   * @example
   * ```ts
   * const spill = await SpillRoot.open('/var/tmp', { log: (line) => logger.info(line) });
   * console.log(spill.lastSweep?.swept); // owner dirs of dead processes that were removed
   * ```
   */
  static async open(
    root: string,
    options: { sweep?: boolean; log?: (line: string) => void } = {},
  ): Promise<SpillRoot> {
    const resolved = resolve(root);
    await identityReady;
    const st = await checkRoot(resolved);
    const key = `${st.dev}:${st.ino}`;
    const existing = cache.get(key);
    if (existing !== undefined) {
      const live = await existing.ready
        .then(
          async (instance) => {
            // A root deleted behind our back and made anew often gets the same inode: the cached
            // instance then points at an owner dir that no longer exists. Start afresh.
            await fsSeam.lstat(instance.ownerDir);
            return instance;
          },
          () => undefined,
        )
        .catch(() => undefined);
      if (live !== undefined) return live;
      if (cache.get(key) === existing) cache.delete(key);
      return SpillRoot.open(root, options);
    }
    const instance = new SpillRoot(resolved, key);
    const entry: CacheEntry = { root: instance, ready: instance.#init(options) };
    cache.set(key, entry);
    entry.ready.catch(() => {
      if (cache.get(key) === entry) cache.delete(key);
    });
    return entry.ready;
  }

  async #init(options: { sweep?: boolean; log?: (line: string) => void }): Promise<SpillRoot> {
    await closing.get(this.key)?.catch(() => undefined);
    const spillwayDir = join(this.root, 'spillway');
    await ensureSpillwayDir(spillwayDir);
    if (options.sweep !== false) {
      this.#lastSweep = await sweepSpillwayDir(spillwayDir, options.log ?? defaultLog);
    }
    const previous = byOwnerDir.get(this.ownerDir);
    if (previous !== undefined && previous !== this) {
      // The root was deleted and recreated under an open instance: its dir is gone, and its
      // close() must not remove the one we are about to create.
      previous.#detached = true;
      if (cache.get(previous.key)?.root === previous) cache.delete(previous.key);
    }
    byOwnerDir.set(this.ownerDir, this);
    openOwnerDirs.add(this.ownerDir);
    exitDirs.add(this.ownerDir);
    installExitHook();
    try {
      await this.#createOwnerDir();
    } catch (e) {
      const error =
        e instanceof SpillRootError
          ? e
          : new SpillRootError(`cannot create owner dir ${this.ownerDir}: ${message(e)}`, {
              cause: e,
            });
      try {
        await fsSeam.rm(this.ownerDir);
        exitDirs.delete(this.ownerDir);
      } catch (cleanup) {
        addSuppressed(error, cleanup);
      }
      openOwnerDirs.delete(this.ownerDir);
      if (byOwnerDir.get(this.ownerDir) === this) byOwnerDir.delete(this.ownerDir);
      throw error;
    }
    return this;
  }

  async #createOwnerDir(): Promise<void> {
    try {
      await fsSeam.mkdir(this.ownerDir, { mode: 0o700 });
    } catch (e) {
      if (code(e) !== 'EEXIST') throw e;
      // Only this process can hold this name: it is left over from one of our instances whose
      // close failed. Start it afresh rather than inherit its contents.
      const st = await fsSeam.lstat(this.ownerDir);
      if (foreignReason(st) !== undefined) {
        throw new SpillRootError(`${this.ownerDir} exists and is ${foreignReason(st)}`);
      }
      await fsSeam.rm(this.ownerDir);
      await fsSeam.mkdir(this.ownerDir, { mode: 0o700 });
    }
    // tmp + rename: a sweeper reads either no marker (and keeps a young dir) or a whole one.
    const tmp = join(this.ownerDir, `.owner.json.tmp-${rand8()}`);
    await fsSeam.writeFile(tmp, `${JSON.stringify(currentOwner(), null, 2)}\n`, 0o600);
    await fsSeam.rename(tmp, join(this.ownerDir, 'owner.json'));
  }

  /**
   * A fresh task dir path, `<ownerDir>/task-<id>-<rand6>`. Not created: the spill writer creates
   * it lazily (mode 0700, exclusively). Characters of `taskId` that are unsafe in a file name are
   * replaced by `_`, so the path always stays inside the owner dir.
   *
   * @example
   * ```ts
   * spill.taskDirPath('7'); // '/tmp/spillway/owner-4349367f-4745-45362/task-7-a1b2c3'
   * ```
   */
  taskDirPath(taskId: string): string {
    if (this.#closePromise !== undefined || this.#detached) {
      throw new MisuseError(`spill root ${this.root} is closed`);
    }
    const safe = taskId.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 64);
    return join(this.ownerDir, `task-${safe}-${randomBytes(3).toString('hex')}`);
  }

  /**
   * Removes the owner dir and everything in it and drops the instance from the cache, so a later
   * {@link SpillRoot.open} starts afresh. Idempotent: later calls return the first call's promise.
   *
   * @throws {@link CleanupError} when the owner dir could not be removed (process exit retries).
   * @example
   * ```ts
   * await spill.close();
   * await spill.close(); // no-op
   * ```
   */
  async close(): Promise<void> {
    this.#closePromise ??= this.#close();
    return this.#closePromise;
  }

  async #close(): Promise<void> {
    if (cache.get(this.key)?.root === this) cache.delete(this.key);
    const done = (async () => {
      if (this.#detached) return;
      try {
        await fsSeam.rm(this.ownerDir);
      } catch (e) {
        throw new CleanupError(`could not remove owner dir ${this.ownerDir}: ${message(e)}`, {
          cause: e,
        });
      }
      exitDirs.delete(this.ownerDir);
      openOwnerDirs.delete(this.ownerDir);
      if (byOwnerDir.get(this.ownerDir) === this) byOwnerDir.delete(this.ownerDir);
    })();
    closing.set(this.key, done);
    try {
      await done;
    } finally {
      if (closing.get(this.key) === done) closing.delete(this.key);
    }
  }
}
