/**
 * The sweep (G7): removes the owner dirs of provably dead processes from `<root>/spillway/` and
 * finishes interrupted sweeps. It renames before it deletes (the rename is the claim between
 * concurrent sweepers), never follows a symlink, never leaves `<root>/spillway/`, and logs and
 * continues on errors.
 */
import { randomBytes } from '../node-crypto.ts';
import { join, resolve } from 'node:path';
import type { Stats } from '../fs.ts';
import { CleanupError, SpillRootError, errnoOf } from '../errors.ts';
import { fsSeam, type FileSystem } from '../fs.ts';
import {
  OWNER_DIR_RE,
  UNKNOWN_BOOT,
  ownIdentity,
  ownerDirName,
  type OwnerMarker,
} from './identity.ts';
import { isHeldHere, judge, type Verdict } from './liveness.ts';
import { checkRoot, checkSpillwayDir, foreignReason, message } from './validation.ts';

/** A marker-less owner dir this young may still be being created by its (live) owner. */
const YOUNG_DIR_MS = 10 * 60 * 1000;
/** No honest owner.json is this large; refusing bigger ones bounds what a sweep reads. */
const MAX_MARKER_BYTES = 64 * 1024;
/** `swept-<owner>-<rand8>`: an owner dir claimed by a sweep and not yet fully removed. */
export const SWEPT_RE = /^swept-([0-9a-z]{1,8}-\d{1,10}-\d{1,20})-[0-9a-f]{8}$/;

/**
 * What one sweep did. Paths are absolute; `errors` never stop a sweep.
 *
 * @example
 * ```ts
 * const { swept, kept, errors }: SweepReport = await sweepSpillRoot('/var/tmp');
 * ```
 */
export interface SweepReport {
  swept: string[];
  kept: string[];
  errors: { path: string; message: string }[];
}

export type Log = (line: string) => void;

export const defaultLog: Log = (line) => {
  if (process.env.SPILLWAY_DEBUG) console.error(line);
};

export function rand8(): string {
  return randomBytes(4).toString('hex');
}

/** Reads and validates an owner dir's marker, never following a symlink. */
export async function readMarker(
  ownerPath: string,
  fs: FileSystem = fsSeam,
): Promise<OwnerMarker | string> {
  const file = join(ownerPath, 'owner.json');
  let st: Stats;
  try {
    st = await fs.lstat(file);
  } catch (e) {
    return errnoOf(e) === 'ENOENT'
      ? 'owner.json is missing'
      : `owner.json cannot be read (${errnoOf(e) ?? message(e)})`;
  }
  if (!st.isFile()) return 'owner.json is not a regular file';
  if (st.size > MAX_MARKER_BYTES) return `owner.json is too large (${st.size} bytes)`;
  let text: string;
  try {
    text = (await fs.readFile(file)).toString('utf8');
  } catch (e) {
    return `owner.json cannot be read (${errnoOf(e) ?? message(e)})`;
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

/** Renames `path` to a fresh `swept-*` name, then removes it. False if someone else got it first. */
async function claimAndRemove(
  fs: FileSystem,
  dir: string,
  path: string,
  stem: string,
): Promise<boolean> {
  // The rename is the claim: of two sweepers only one can move the entry, the other gets ENOENT.
  // A crash after it leaves a `swept-*` dir that any later sweep finishes.
  const claimed = join(dir, `swept-${stem}-${rand8()}`);
  try {
    await fs.rename(path, claimed);
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return false;
    throw e;
  }
  try {
    await fs.rm(claimed);
  } catch (e) {
    throw new CleanupError(`claimed ${path} as ${claimed} but could not remove it: ${message(e)}`, {
      cause: e,
    });
  }
  return true;
}

/** What the sweep decides about one owner dir, and what it knows of it. */
export interface OwnerDecision {
  /** `sweep`: provably dead; `keep`: alive, ours, foreign or undecidable; `gone`: vanished. */
  readonly action: 'sweep' | 'keep' | 'gone';
  readonly reason: string;
  /** The marker, when it was readable and names this dir. */
  readonly marker: OwnerMarker | undefined;
  /** The dir's mtime, when it could be read. */
  readonly mtimeMs: number | undefined;
  /** Not Spillway's to enter (a symlink, another user's dir): kept and never looked into. */
  readonly foreign: boolean;
}

/**
 * Judges the owner dir `name` in `dir` exactly as the sweep would, touching nothing: shared by
 * the sweep and by its dry run (`listSpillRoot`), so the listing says what a sweep would do.
 */
export async function decideOwner(
  dir: string,
  name: string,
  match: RegExpExecArray,
  fs: FileSystem = fsSeam,
): Promise<OwnerDecision> {
  const path = join(dir, name);
  const keep = (reason: string, marker?: OwnerMarker, mtimeMs?: number): OwnerDecision => ({
    action: 'keep',
    reason,
    marker,
    mtimeMs,
    foreign: false,
  });
  let st: Stats;
  try {
    st = await fs.lstat(path);
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') {
      return {
        action: 'gone',
        reason: 'another sweeper got it',
        marker: undefined,
        mtimeMs: undefined,
        foreign: false,
      };
    }
    throw e;
  }
  const marker = await readMarker(path, fs).catch(() => 'owner.json cannot be read');
  const good = typeof marker !== 'string' && ownerDirName(marker) === name ? marker : undefined;
  if (name === ownerDirName(ownIdentity()) || isHeldHere(path)) {
    return keep('this process', good, st.mtimeMs);
  }
  const foreign = foreignReason(st);
  if (foreign !== undefined) {
    return { ...keep(`${foreign}; left alone`, undefined, st.mtimeMs), foreign: true };
  }

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
      return keep(
        `${problem}; dir is ${Math.round(age / 1000)} s old, may still be being created`,
        undefined,
        st.mtimeMs,
      );
    }
    const byName = judge(
      { bootId: match[1]!, pid: Number(match[2]), startTicks: Number(match[3]) },
      true,
    );
    verdict = { alive: byName.alive, reason: `${problem}; judged by its name: ${byName.reason}` };
  }
  return {
    action: verdict.alive ? 'keep' : 'sweep',
    reason: verdict.reason,
    marker: good,
    mtimeMs: st.mtimeMs,
    foreign: false,
  };
}

async function sweepOwner(
  dir: string,
  name: string,
  match: RegExpExecArray,
  report: SweepReport,
  log: Log,
  fs: FileSystem,
): Promise<void> {
  const path = join(dir, name);
  const decision = await decideOwner(dir, name, match, fs);
  if (decision.action === 'gone') return;
  if (decision.action === 'keep') {
    report.kept.push(path);
    log(`spillway sweep: kept ${path}: ${decision.reason}`);
    return;
  }
  if (await claimAndRemove(fs, dir, path, name.slice('owner-'.length))) {
    report.swept.push(path);
    log(`spillway sweep: swept ${path}: ${decision.reason}`);
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
  fs: FileSystem,
): Promise<void> {
  const path = join(dir, name);
  let st: Stats;
  try {
    st = await fs.lstat(path);
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return;
    throw e;
  }
  const foreign = foreignReason(st);
  if (foreign !== undefined) {
    log(`spillway sweep: left ${path} alone: ${foreign}`);
    return;
  }
  // Re-claim under a new name so two sweepers never remove the same tree at once.
  if (await claimAndRemove(fs, dir, path, match[1])) {
    report.swept.push(path);
    log(`spillway sweep: finished ${path}, left by an interrupted sweep`);
  }
}

export async function sweepSpillwayDir(
  dir: string,
  log: Log,
  signal?: AbortSignal,
  fs: FileSystem = fsSeam,
): Promise<SweepReport> {
  const report: SweepReport = { swept: [], kept: [], errors: [] };
  const fail = (path: string, e: unknown): void => {
    report.errors.push({ path, message: message(e) });
    log(`spillway sweep: error at ${path}: ${message(e)}`);
  };
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (e) {
    if (errnoOf(e) !== 'ENOENT') fail(dir, e);
    return report;
  }
  for (const name of names.sort()) {
    if (signal?.aborted === true) {
      // Its opener was cancelled: what is left is the next start's to sweep.
      log(`spillway sweep: stopped early (cancelled); the next start sweeps the rest of ${dir}`);
      break;
    }
    try {
      const owner = OWNER_DIR_RE.exec(name);
      if (owner !== null) {
        await sweepOwner(dir, name, owner, report, log, fs);
        continue;
      }
      const swept = SWEPT_RE.exec(name);
      if (swept !== null) await finishSwept(dir, name, swept, report, log, fs);
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
    if (errnoOf(e) === 'ENOENT') return { swept: [], kept: [], errors: [] };
    throw new SpillRootError(`cannot inspect ${dir}: ${message(e)}`, { cause: e });
  }
  checkSpillwayDir(dir, st);
  return sweepSpillwayDir(dir, options.log ?? defaultLog);
}
