/**
 * The dry run of the sweep: who owns what in a spill root, how much of it there is, and what a
 * sweep would delete — judged by the very function the sweep uses ({@link decideOwner}), so the
 * listing cannot disagree with the sweep it previews. It deletes, renames and creates nothing,
 * and never follows a symlink.
 */
import { basename, dirname, join, resolve, sep } from 'node:path';
import type { Stats } from '../fs.ts';
import { SpillRootError, errnoOf } from '../errors.ts';
import { fsSeam, listFiles } from '../fs.ts';
import { OWNER_DIR_RE } from './identity.ts';
import { SWEPT_RE, decideOwner } from './sweep.ts';
import { checkRoot, checkSpillwayDir, message } from './validation.ts';

/**
 * One task dir inside an owner dir.
 *
 * @example
 * ```ts
 * const biggest = owner.tasks.toSorted((a, b) => b.bytes - a.bytes)[0];
 * ```
 */
export interface TaskDirListing {
  readonly path: string;
  /** Files in it (spill segments, remainders being written), at any depth. */
  readonly files: number;
  readonly bytes: number;
}

/**
 * One owner dir: a process's share of the spill root.
 *
 * @example
 * ```ts
 * const dead = listing.owners.filter((o: OwnerListing) => !o.alive);
 * ```
 */
export interface OwnerListing {
  readonly path: string;
  /** The owning pid, from `owner.json` or, without a usable one, from the dir's name. */
  readonly pid: number;
  /** False only when the owner is provably dead: exactly the dirs a sweep deletes. */
  readonly alive: boolean;
  /** Why the sweep would keep or delete it. */
  readonly reason: string;
  /** Milliseconds since the owner dir was created (`owner.json`), else since its mtime. */
  readonly ageMs: number | undefined;
  readonly tasks: readonly TaskDirListing[];
  /** Every file under the owner dir, `owner.json` and the task dirs' files included. */
  readonly files: number;
  readonly bytes: number;
}

/**
 * What {@link listSpillRoot} found.
 *
 * @example
 * ```ts
 * const { owners, wouldSweep }: SpillRootListing = await listSpillRoot('/var/tmp');
 * ```
 */
export interface SpillRootListing {
  /** `<root>/spillway`, the only dir Spillway writes in a root. */
  readonly dir: string;
  readonly owners: readonly OwnerListing[];
  /** Owner dirs a sweep would delete now (their owner is provably dead). */
  readonly wouldSweep: readonly string[];
  /** Leftovers of an interrupted sweep (`swept-…`), which a sweep would finish deleting. */
  readonly interruptedSweeps: readonly string[];
  /** Entries that could not be judged or measured; a listing never stops at one. */
  readonly errors: readonly { path: string; message: string }[];
}

/** An owner dir's files and task dirs, from one walk of it (symlinks are never followed). */
async function measureOwner(
  ownerPath: string,
): Promise<{ tasks: TaskDirListing[]; files: number; bytes: number }> {
  const files = await listFiles(ownerPath);
  const tasks: TaskDirListing[] = [];
  let names: string[];
  try {
    names = await fsSeam.readdir(ownerPath);
  } catch (e) {
    if (errnoOf(e) !== 'ENOENT') throw e;
    names = [];
  }
  for (const name of names.sort()) {
    if (!name.startsWith('task-')) continue;
    const path = join(ownerPath, name);
    const st = await fsSeam.lstat(path).catch(() => undefined);
    // A symlink named like a task dir is not Spillway's and is never followed.
    if (st === undefined || !st.isDirectory()) continue;
    const inside = files.filter((f) => f.path.startsWith(`${path}${sep}`));
    tasks.push({ path, files: inside.length, bytes: inside.reduce((n, f) => n + f.size, 0) });
  }
  return { tasks, files: files.length, bytes: files.reduce((n, f) => n + f.size, 0) };
}

/**
 * The spill root a path names: the root itself, or the root above a `spillway` dir, an owner dir
 * or a task dir inside it (the dir `ownership()` shows), so each of them lists the same root.
 *
 * @example
 * ```ts
 * spillRootOf('/tmp/spillway/owner-1a2b3c4d-42-99/task-7-a1b2c3'); // '/tmp'
 * ```
 */
export function spillRootOf(path: string): string {
  const parts = [path, dirname(path), dirname(dirname(path)), dirname(dirname(dirname(path)))];
  const names = parts.map((p) => basename(p));
  if (names[0] === 'spillway') return parts[1]!;
  if (/^owner-/.test(names[0]!) && names[1] === 'spillway') return parts[2]!;
  if (/^task-/.test(names[0]!) && /^owner-/.test(names[1]!) && names[2] === 'spillway') {
    return parts[3]!;
  }
  return path;
}

/**
 * Lists the owners of a spill root — pid, alive or provably dead and why, age, their task dirs
 * with files and bytes — and what a sweep would delete, deleting nothing (`spillway sweep
 * --dry-run`). `root` may also be a `spillway`, owner or task dir inside the root (the path
 * `recovery.ownership()` shows): the root above it is listed. An unusable root throws a
 * {@link SpillRootError}; a missing `<root>/spillway` is an empty listing; no root is a
 * `TypeError`.
 *
 * @example
 * ```ts
 * import { listSpillRoot } from 'spillway';
 *
 * const listing = await listSpillRoot('/var/tmp');
 * for (const owner of listing.owners) {
 *   console.log(owner.pid, owner.alive ? 'alive' : 'dead', owner.tasks.length, owner.bytes);
 * }
 * console.log('a sweep would delete', listing.wouldSweep);
 * ```
 */
export async function listSpillRoot(root: string): Promise<SpillRootListing> {
  if (typeof root !== 'string' || root === '') {
    const error = new TypeError(
      `listSpillRoot(root): root must be a spill root, or a spillway, owner or task dir in one (a non-empty string); got ${root === '' ? "''" : typeof root}`,
    ) as TypeError & { code: string };
    error.code = 'ERR_INVALID_ARG_TYPE';
    throw error;
  }
  const given = resolve(root);
  // A root that holds a `spillway` dir is a root, whatever its own name.
  const isRoot = await fsSeam.lstat(join(given, 'spillway')).then(
    () => true,
    () => false,
  );
  const resolved = isRoot ? given : spillRootOf(given);
  await checkRoot(resolved);
  const dir = join(resolved, 'spillway');
  const owners: OwnerListing[] = [];
  const interruptedSweeps: string[] = [];
  const errors: { path: string; message: string }[] = [];
  const empty = { dir, owners, wouldSweep: [], interruptedSweeps, errors };
  let st: Stats;
  try {
    st = await fsSeam.lstat(dir);
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return empty;
    throw new SpillRootError(`cannot inspect ${dir}: ${message(e)}`, { cause: e });
  }
  checkSpillwayDir(dir, st);
  let names: string[];
  try {
    names = await fsSeam.readdir(dir);
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return empty;
    throw new SpillRootError(`cannot list ${dir}: ${message(e)}`, { cause: e });
  }
  for (const name of names.sort()) {
    const path = join(dir, name);
    try {
      const match = OWNER_DIR_RE.exec(name);
      if (match === null) {
        if (SWEPT_RE.test(name)) interruptedSweeps.push(path);
        continue;
      }
      const decision = await decideOwner(dir, name, match);
      if (decision.action === 'gone') continue;
      const created = decision.marker ? Date.parse(decision.marker.createdAt) : Number.NaN;
      const since = Number.isFinite(created) ? created : decision.mtimeMs;
      // A foreign entry (a symlink, another user's dir) is listed but never entered.
      const enter = !decision.foreign;
      owners.push({
        path,
        pid: decision.marker?.pid ?? Number(match[2]),
        alive: decision.action === 'keep',
        reason: decision.reason,
        ageMs: since === undefined ? undefined : Math.max(0, Date.now() - since),
        ...(enter ? await measureOwner(path) : { tasks: [], files: 0, bytes: 0 }),
      });
    } catch (e) {
      errors.push({ path, message: message(e) });
    }
  }
  const wouldSweep = owners.filter((o) => !o.alive).map((o) => o.path);
  return {
    dir,
    owners,
    wouldSweep: [...wouldSweep, ...interruptedSweeps],
    interruptedSweeps,
    errors,
  };
}
