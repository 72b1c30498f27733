/**
 * An output dir that does not exist yet (G10): the run stages the whole tree beside it, in a
 * private holder `<parent>/.spillway-new-<bootId8>-<pid>-<startTicks>-<rand8>/tree`, and
 * publishes it by renaming `tree` to DIR. That one rename is the commit point: before it DIR
 * does not exist (exactly as found), after it DIR holds every file. No file is moved one by one:
 * at 262,144 channels the link and unlink of each file were two fifths of the run
 * (docs/performance.md).
 *
 * If DIR appears meanwhile (another run, or the user, made it), nothing there is replaced: the
 * staged entries move into an ordinary staging dir inside DIR and the journaled publish of
 * output-dir.ts takes over, with its checks (a channel file there is refused unless
 * overwriting). The one thing the rename can replace is an empty directory made at DIR in the
 * instant between the check and the rename (rename(2) replaces an empty directory, and Node
 * has no RENAME_NOREPLACE): no file is ever lost that way.
 *
 * A `kill -9` leaves a holder behind; the next run into DIR, into its parent or into any new
 * dir beside it judges it by the sweep's rules ({@link judgeStaging}) and removes a dead one:
 * it never holds anything of the user's.
 */
import { dirname, join, normalize } from 'node:path';
import { randomBytes } from '../node-crypto.ts';
import { AbortedError, addSuppressed, errnoOf, OutputDirError } from '../errors.ts';
import type { FileSystem, Stats } from '../fs.ts';
import { bootPrefix, currentOwner, ownIdentity } from '../spill-root/identity.ts';
import { MARKER, syncDir } from './publish-journal.ts';
import { judgeStaging } from './staging-leftovers.ts';
import { releaseAtExit, removeAtExit } from '../exit-cleanup.ts';

/** `.spillway-new-<bootId8>-<pid>-<startTicks>-<rand8>`: whose holder it is. */
export const HOLDER_RE = /^\.spillway-new-([0-9a-z]{1,8})-(\d{1,10})-(\d{1,20})-[0-9a-f]{8}$/;

/** What rename(2) says when DIR was made meanwhile: then the journaled publish takes over. */
const TAKEN = new Set(['EEXIST', 'ENOTEMPTY', 'ENOTDIR']);

/**
 * `.spillway-<kind>-<bootId8>-<pid>-<startTicks>-<rand8>`: a name that says whose it is, for
 * a staging dir (`staging`) or a new output's holder (`new`).
 *
 * @example
 * ```ts
 * ownStagingName('new'); // '.spillway-new-3f2a9c1d-4242-1234567-0a1b2c3d'
 * ```
 */
export function ownStagingName(kind: 'staging' | 'new'): string {
  const self = ownIdentity();
  const rand = randomBytes(4).toString('hex');
  return `.spillway-${kind}-${bootPrefix(self.bootId)}-${self.pid}-${self.startTicks}-${rand}`;
}

/** A new output dir's holder and the tree in it that becomes DIR. */
export interface FreshOutput {
  /** `<parent>/.spillway-new-…` (0700, with its owner marker): removed whatever happens. */
  readonly holder: string;
  /** `holder/tree`: staged like DIR will be (0777 & umask, as mkdir(1) makes it). */
  readonly tree: string;
}

/**
 * Makes the holder of a new output dir `dir` beside it; the missing parents it has to create
 * are pushed to `parents`, deepest first (a failed run removes them again, if empty).
 *
 * @example
 * ```ts
 * const { holder, tree } = await makeHolder(fs, 'out/new', []);
 * ```
 */
export async function makeHolder(
  fs: FileSystem,
  dir: string,
  parents: string[],
): Promise<FreshOutput> {
  const parent = dirname(dir);
  const holder = join(parent, ownStagingName('new'));
  removeAtExit(holder);
  // Not recursive first: a recursive mkdir on a read-only file system reports ENOENT, not EROFS.
  await fs
    .mkdir(holder, { mode: 0o700 })
    .catch(async (e: unknown) => {
      if (errnoOf(e) !== 'ENOENT') throw e;
      for (let p = parent; p !== dirname(p); p = dirname(p)) {
        const missing = await fs.lstat(p).then(
          () => false,
          (error: unknown) => errnoOf(error) === 'ENOENT',
        );
        if (!missing) break;
        parents.push(p);
      }
      for (const p of parents) removeAtExit(p, { ifEmpty: true });
      await fs.mkdir(parent, { recursive: true, mode: 0o777 });
      await fs.mkdir(holder, { mode: 0o700 });
    })
    .catch((e: unknown) => {
      // No holder: nothing of it for the exit hook (the parents are the caller's to settle).
      releaseAtExit(holder);
      throw e;
    });
  const tree = join(holder, 'tree');
  await markOwned(fs, holder, () => fs.mkdir(tree, { mode: 0o777 }));
  return { holder, tree };
}

/**
 * Writes the owner marker into `dir` (a staging dir or a holder this run just made), then runs
 * `rest`; if either fails, `dir` is removed and forgotten at exit: without its marker no later
 * run could judge it (never by name alone), so it would stay until a reboot.
 *
 * @example
 * ```ts
 * await fs.mkdir(stagingDir, { mode: 0o700 });
 * await markOwned(fs, stagingDir);
 * ```
 */
export async function markOwned(
  fs: FileSystem,
  dir: string,
  rest: () => Promise<unknown> = async () => undefined,
): Promise<void> {
  try {
    await fs.writeFile(join(dir, MARKER), JSON.stringify(currentOwner()));
    await rest();
  } catch (error) {
    await fs.rm(dir).then(
      () => releaseAtExit(dir),
      (e: unknown) => addSuppressed(error as Error, e),
    );
    throw error;
  }
}

/**
 * Publishes a staged tree as `dir` by one rename (the commit point), after syncing its dirs
 * (`dirs`, relative, parents first) so what the rename publishes is on disk with it. False,
 * with nothing moved, when `dir` exists by then: the caller publishes into it the journaled way.
 *
 * @throws {@link AbortedError} when `signal` is aborted before the commit point.
 */
export async function commitFresh(
  fs: FileSystem,
  tree: string,
  dir: string,
  dirs: readonly string[],
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const checkpoint = () => {
    if (signal?.aborted === true) {
      throw new AbortedError(`publishing ${dir} cancelled`, { cause: signal.reason });
    }
  };
  checkpoint();
  for (const rel of dirs) await syncDir(fs, join(tree, rel));
  await syncDir(fs, tree);
  checkpoint();
  if (fs.lstatSync(dir) !== undefined) return false;
  try {
    // Synchronously: an exit hook (a signal's) runs before it or after it, never during it
    // (an async rename on the thread pool could move a tree the hook is deleting).
    fs.renameSync(tree, dir);
  } catch (error) {
    if (TAKEN.has(errnoOf(error) ?? '')) return false;
    throw error;
  }
  // Past the commit point: the rename made durable if the parent can be synced, else as is.
  await syncDir(fs, dirname(dir)).catch(() => undefined);
  return true;
}

/**
 * Removes the holders dead runs left in `dir` (judged by their owner markers; a live one is
 * kept): what a `kill -9` left of a run into a new dir beside it or under it.
 *
 * @example
 * ```ts
 * await removeDeadHolders(fs, dirname(out), log);
 * ```
 */
export async function removeDeadHolders(
  fs: FileSystem,
  dir: string,
  log: (line: string) => void,
  names?: readonly string[],
): Promise<void> {
  const entries =
    names ??
    (await fs.readdir(dir).catch((error: unknown) => {
      // A parent we may not list: its leftovers are not ours to judge.
      if (errnoOf(error) === 'EACCES' || errnoOf(error) === 'ENOENT') return [];
      throw error;
    }));
  for (const name of entries) {
    const match = HOLDER_RE.exec(name);
    if (match === null) continue;
    const path = join(dir, name);
    const verdict = await judgeStaging(fs, path, match, log);
    if (verdict === undefined || verdict.alive) continue;
    await fs.rm(path);
    log(`spillway recover: removed ${path}, left by a dead recovery: ${verdict.reason}`);
  }
}

/**
 * Removes the dead holders beside an existing output dir `dir`: a `kill -9` past a new dir's
 * rename, or in its journaled fallback into a DIR made meanwhile, leaves the holder in DIR's
 * parent, where a run into DIR itself would never look. Best effort: the parent is not this
 * run's output, so what fails there is logged, never the run's failure.
 *
 * @example
 * ```ts
 * await removeDeadHoldersBeside(fs, 'out', log);
 * ```
 */
export async function removeDeadHoldersBeside(
  fs: FileSystem,
  dir: string,
  log: (line: string) => void,
): Promise<void> {
  const target = normalizedTarget(dir);
  const parent = dirname(target);
  if (parent === target) return;
  await removeDeadHolders(fs, parent, log).catch((e: unknown) =>
    log(`spillway recover: left the holders in ${parent} alone (${String(errnoOf(e) ?? e)})`),
  );
}

/**
 * `dir` as the paths under it are made (path.join normalizes `.` and `..` away), without
 * trailing separators: rename(2) and dirname see the dir itself, and the holder's tree goes
 * where it is renamed to (`a/missing/../out` is `a/out`, whose parent `a` holds the holder).
 */
export function normalizedTarget(dir: string): string {
  const normalized = normalize(dir);
  const trimmed = normalized.replace(/\/+$/, '');
  return trimmed === '' ? normalized : trimmed;
}

/**
 * Whether `dir` is missing (a new output dir); when it is there it must be a directory (a link
 * to one is the caller's to use).
 *
 * @throws {@link OutputDirError} for a file, a dangling link, a symlink loop, a name too long.
 */
export async function isMissing(fs: FileSystem, dir: string): Promise<boolean> {
  let st: Stats;
  try {
    // stat, not lstat: the output dir is the caller's own path, a link to a dir is theirs to use.
    st = await fs.stat(dir);
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'ELOOP') throw new OutputDirError(dir, 'is a symlink loop', { cause: error });
    if (errno === 'ENAMETOOLONG') {
      throw new OutputDirError(dir, 'name too long for the file system', { cause: error });
    }
    if (errno === 'ENOTDIR') {
      throw new OutputDirError(dir, 'a part of the path is not a directory', { cause: error });
    }
    if (errno !== 'ENOENT') throw error;
    const dangling = await fs.lstat(dir).then(
      (l) => l.isSymbolicLink(),
      () => false,
    );
    if (dangling) throw new OutputDirError(dir, 'is a dangling symlink', { cause: error });
    return true;
  }
  if (!st.isDirectory()) throw new OutputDirError(dir, 'is not a directory');
  return false;
}

/**
 * Removes the parents of a new output dir this run made, deepest first, each only if empty,
 * and forgets them at exit first: the exit hook must never take them later, when they may be
 * someone else's dirs made again under the same names.
 */
export async function removeCreated(fs: FileSystem, parents: readonly string[]): Promise<void> {
  for (const parent of parents) releaseAtExit(parent);
  for (const parent of parents) if (!(await removeIfEmpty(fs, parent))) return;
}

/** Removes `dir` only if nothing is in it: never a tree someone else wrote into meanwhile. */
async function removeIfEmpty(fs: FileSystem, dir: string): Promise<boolean> {
  const names = await fs.readdir(dir).catch((error: unknown) => {
    if (errnoOf(error) === 'ENOENT') return undefined;
    throw error;
  });
  if (names === undefined) return true;
  if (names.length !== 0) return false;
  await fs.rm(dir);
  return true;
}
