/**
 * What makes a spill root safe to use: a real directory, not a symlink, not world-writable
 * unless sticky, and a `spillway/` dir inside it that is ours and writable by nobody else.
 * Anyone who could write there could plant entries that the sweep or the writer would act on.
 */
import type { Stats } from '../fs.ts';
import { errnoOf, SpillRootError } from '../errors.ts';
import { fsSeam, type FileSystem } from '../fs.ts';

/** An error's message, or the thrown value as text. */
export function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

const myUid: number | undefined =
  typeof process.getuid === 'function' ? process.getuid() : undefined;

/** Checks the spill root itself; returns its lstat (dev/ino identify it for the cache). */
export async function checkRoot(root: string, fs: FileSystem = fsSeam): Promise<Stats> {
  let st: Stats;
  try {
    st = await fs.lstat(root);
  } catch (e) {
    throw new SpillRootError(
      errnoOf(e) === 'ENOENT'
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
export function checkSpillwayDir(dir: string, st: Stats): void {
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
export async function ensureSpillwayDir(dir: string, fs: FileSystem = fsSeam): Promise<void> {
  try {
    await fs.mkdir(dir, { mode: 0o700 });
  } catch (e) {
    if (errnoOf(e) !== 'EEXIST') {
      throw new SpillRootError(`cannot create ${dir}: ${message(e)}`, { cause: e });
    }
  }
  checkSpillwayDir(dir, await fs.lstat(dir));
}

/** Whether an entry is a real directory of ours; otherwise says why it is left alone. */
export function foreignReason(st: Stats): string | undefined {
  if (st.isSymbolicLink()) return 'a symlink (not followed)';
  if (!st.isDirectory()) return 'not a directory';
  if (myUid !== undefined && st.uid !== myUid) return `owned by uid ${st.uid}, not us`;
  return undefined;
}
