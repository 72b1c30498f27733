/**
 * One publish at a time per output dir (G10 between concurrent publishers). Two recoveries into
 * one DIR with `--overwrite` used to interleave their moves: one could move the other's freshly
 * linked file aside, and an undo by name then took files the other run had published, so a run
 * that exited 0 lacked some of its files. A publish now holds `DIR/.spillway-publish-lock` from
 * its first move until its commit or undo is complete; another one waits for it, then makes its
 * own moves over what it finds.
 *
 * The lock is created atomically with its content (a hard link of a file already written in the
 * holder's staging dir), and names that staging dir. A lock whose holder's staging dir is gone,
 * or whose owner marker is judged dead by the sweep's rules (G7), is stale and taken over; a
 * live holder is waited for, as long as the caller's signal allows.
 */
import { randomBytes } from '../node-crypto.ts';
import { basename, join } from 'node:path';
import { AbortedError, errnoOf } from '../errors.ts';
import { releaseAtExit, removeAtExit } from '../exit-cleanup.ts';
import { fsSeam, type FileSystem } from '../fs.ts';
import { judge } from '../spill-root/liveness.ts';
import { readMarker } from '../spill-root/sweep.ts';

/** The lock's name in the output dir. */
export const PUBLISH_LOCK = '.spillway-publish-lock';
/** How often a waiting publish looks at the lock again. */
const RETRY_MS = 10;

/**
 * Takes the publish lock of `dir` for the run whose staging dir is `stagingDir`; resolves to
 * its release (which removes the lock only while it is still this run's).
 *
 * @throws {@link AbortedError} when `signal` is aborted while waiting.
 * @example
 * ```ts
 * const release = await acquirePublishLock(out.dir, out.stagingDir, signal);
 * try { publishMoves(); } finally { await release(); }
 * ```
 */
export async function acquirePublishLock(
  dir: string,
  stagingDir: string,
  signal?: AbortSignal,
  fs: FileSystem = fsSeam,
): Promise<() => Promise<void>> {
  const lock = join(dir, PUBLISH_LOCK);
  const mine = basename(stagingDir);
  const draft = join(stagingDir, `lock-${randomBytes(4).toString('hex')}`);
  await fs.writeFile(draft, `${mine}\n`);
  try {
    for (;;) {
      try {
        fs.linkSync(draft, lock);
        break;
      } catch (error) {
        if (errnoOf(error) !== 'EEXIST') throw error;
      }
      await removeIfStale(fs, dir, lock);
      if (signal?.aborted === true) {
        throw new AbortedError(`waiting to publish into ${dir} cancelled`, {
          cause: signal.reason,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  } finally {
    await fs.unlink(draft).catch(() => undefined);
  }
  removeAtExit(lock);
  return async () => {
    releaseAtExit(lock);
    if ((await holderOf(fs, lock)) === mine) await fs.unlink(lock).catch(() => undefined);
  };
}

/**
 * Removes the publish lock of `dir` if its holder is provably gone (a run killed while it held
 * it): the next run into DIR leaves DIR as the dead run found it.
 *
 * @example
 * ```ts
 * await settlePublishLock(dir); // at open, after dead runs' staging dirs are settled
 * ```
 */
export async function settlePublishLock(dir: string, fs: FileSystem = fsSeam): Promise<void> {
  await removeIfStale(fs, dir, join(dir, PUBLISH_LOCK));
}

/** The staging dir name a lock names, or undefined when it cannot be read. */
async function holderOf(fs: FileSystem, lock: string): Promise<string | undefined> {
  try {
    return (await fs.readFile(lock)).toString('utf8').trim();
  } catch {
    return undefined;
  }
}

/** Removes the lock when its holder is provably gone: its staging dir missing or its owner dead. */
async function removeIfStale(fs: FileSystem, dir: string, lock: string): Promise<void> {
  const holder = await holderOf(fs, lock);
  // A name with a separator or a dot segment is not a staging dir of this dir: never followed.
  if (holder === undefined || holder === '' || /[/\\]|^\.\.?$/.test(holder)) return;
  const staging = join(dir, holder);
  const exists = await fs.lstat(staging).then(
    () => true,
    () => false,
  );
  let stale = !exists;
  if (exists) {
    const marker = await readMarker(staging, fs);
    stale = typeof marker !== 'string' && !judge(marker, false).alive;
  }
  if (!stale) return;
  // Only the lock that named that holder: another run may have taken it over meanwhile.
  if ((await holderOf(fs, lock)) === holder) await fs.unlink(lock).catch(() => undefined);
}
