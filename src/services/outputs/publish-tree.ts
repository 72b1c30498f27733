/**
 * What a publish of a tree needs beyond flat names (`recover --all` writes
 * `<operator>/subtask-<n>/…`, `--rescale P` writes `subtask-<i>/…`): the directories the names
 * need in DIR, which of them this run creates (planned before the journal, so an undo — now or
 * after a crash — removes exactly those, and only while empty), and the staged files of a
 * dead run's staging dir at any depth.
 */
import { join } from 'node:path';
import { errnoOf, OutputDirError } from '../errors.ts';
import type { FileSystem } from '../fs.ts';
import { CHANNEL_FILE_RE } from './file-names.ts';

/**
 * The directories (relative to DIR) that the nested names among `names` lie in, parents
 * before children; none when every name is flat.
 *
 * @example
 * ```ts
 * treeDirs(['a/subtask-0/gate-0-channel-0.bin', 'a/subtask-1/x.bin']); // ['a', 'a/subtask-0', 'a/subtask-1']
 * ```
 */
export function treeDirs(names: Iterable<string>): string[] {
  const dirs = new Set<string>();
  for (const name of names) {
    for (let at = name.indexOf('/'); at > 0; at = name.indexOf('/', at + 1)) {
      dirs.add(name.slice(0, at));
    }
  }
  return [...dirs].sort((a, b) => depth(a) - depth(b) || (a < b ? -1 : a > b ? 1 : 0));
}

function depth(rel: string): number {
  let n = 0;
  for (const c of rel) if (c === '/') n++;
  return n;
}

/**
 * Of `dirs` (parents first), those missing in `dir`: the ones a publish creates. One that is
 * there must be a directory, never a link (nothing is written through a link found in DIR).
 */
export async function missingDirs(
  fs: FileSystem,
  dir: string,
  dirs: readonly string[],
): Promise<string[]> {
  const missing: string[] = [];
  for (const rel of dirs) {
    const st = await fs.lstat(join(dir, rel)).catch((error: unknown) => {
      if (errnoOf(error) === 'ENOENT') return undefined;
      throw error;
    });
    if (st === undefined) missing.push(rel);
    else if (!st.isDirectory()) {
      throw new OutputDirError(
        dir,
        `${rel} is not a directory; refused (nothing is written through a link)`,
      );
    }
  }
  return missing;
}

/**
 * Removes the directories of `dirs` this run created, deepest first, each only while empty:
 * never a file someone else put there meanwhile. Returns the first failure, if any.
 */
export async function removeDirs(
  fs: FileSystem,
  dir: string,
  dirs: readonly string[],
): Promise<void> {
  for (const rel of [...dirs].reverse()) {
    const path = join(dir, rel);
    const names = await fs.readdir(path).catch((error: unknown) => {
      if (errnoOf(error) === 'ENOENT') return undefined;
      throw error;
    });
    if (names === undefined || names.length > 0) continue;
    await fs.rm(path);
  }
}

/**
 * The channel files staged in a staging dir whose top-level entries are `entries`, as paths
 * relative to it (a tree's at any depth); the dot-entries (journal, replaced originals) and
 * the owner marker are not staged files.
 */
export async function stagedFiles(
  fs: FileSystem,
  staging: string,
  entries: readonly string[],
): Promise<string[]> {
  const found: string[] = [];
  const walk = async (rel: string, names: readonly string[]): Promise<void> => {
    for (const name of names) {
      const path = rel === '' ? name : `${rel}/${name}`;
      if (CHANNEL_FILE_RE.test(name)) found.push(path);
      else if (!name.startsWith('.')) {
        const st = await fs.lstat(join(staging, path)).catch(() => undefined);
        if (st?.isDirectory() === true) await walk(path, await fs.readdir(join(staging, path)));
      }
    }
  };
  await walk('', entries);
  return found;
}
