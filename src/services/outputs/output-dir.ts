/**
 * The output dir of `spillway recover` (G10): channel files are written into a private staging
 * dir inside it and moved into place only when the whole recovery succeeded, so a failed or
 * cancelled run leaves the dir exactly as it found it, nothing is ever written through a link
 * found there, and an existing channel file is replaced only when the caller said so — by a
 * rename, which replaces the entry and never follows it.
 *
 * A `kill -9` can leave a staging dir behind; it is named after its owner like an owner dir of
 * the spill root, so the next recovery into the same dir removes those of dead owners by the
 * same liveness rules as the sweep (G7).
 */
import { randomBytes } from 'node:crypto';
import type { Stats } from '../fs.ts';
import { join } from 'node:path';
import { channelKey, type ChannelInfo } from '../channel.ts';
import { addSuppressed, errnoOf, OutputDirError, OutputExistsError } from '../errors.ts';
import { fsSeam } from '../fs.ts';
import { bootPrefix, ownIdentity } from '../spill-root/identity.ts';
import { judge } from '../spill-root/liveness.ts';
import { releaseAtExit, removeAtExit } from '../exit-cleanup.ts';

/** `.spillway-staging-<bootId8>-<pid>-<startTicks>-<rand8>`: whose staging dir it is. */
const STAGING_RE = /^\.spillway-staging-([0-9a-z]{1,8})-(\d{1,10})-(\d{1,20})-[0-9a-f]{8}$/;
/** The channel files a recovery writes: what an existing output looks like. */
const CHANNEL_FILE_RE = /^(?:gate-\d+-channel-\d+|partition-\d+-subpartition-\d+)\.bin$/;
/** Renames in flight at once while publishing: several, so the thread pool is never idle. */
const PUBLISH_IN_FLIGHT = 8;
const PUBLISHED = 1;
const MOVED_ASIDE = 2;
/** Where a replaced file waits inside the staging dir until the publish is complete. */
const REPLACED = '.replaced-';

/** How an output dir treats what it finds. */
export interface OutputDirOptions {
  /** Replace existing channel files (by rename; a link there is replaced, never followed). */
  overwrite?: boolean;
  /** Decisions about leftovers of earlier runs, one line each. */
  log?: (line: string) => void;
}

const myUid = typeof process.getuid === 'function' ? process.getuid() : undefined;

/**
 * One recovery's hold on an output dir.
 *
 * @example
 * ```ts
 * const out = await OutputDir.open('out', { overwrite: false });
 * const sink = new ChannelFileSink(out.stagingDir);
 * try {
 *   await recoverChannelState({ checkpoint, channels: (i) => sink.consumer(i) }).done;
 *   await sink.finish();
 *   await out.publish(sink.channels);
 * } catch (error) {
 *   await sink.discard();
 *   await out.discard();
 *   throw error;
 * }
 * ```
 */
export class OutputDir {
  private ended = false;

  private constructor(
    /** The output dir as given. */
    readonly dir: string,
    /** The private dir the channel files are written into until they are published. */
    readonly stagingDir: string,
    /** Whether this recovery created the output dir (a failed one then removes it). */
    readonly createdDir: boolean,
    private readonly overwrite: boolean,
    /** Channel files found there at the start (refused unless overwriting). */
    readonly existing: readonly string[],
  ) {}

  /**
   * Opens `dir` for one recovery: creates it if missing, removes the staging dirs of dead
   * owners, refuses existing channel files unless `overwrite`, and creates this recovery's own
   * staging dir (0700, exclusively).
   *
   * @throws {@link OutputDirError} when `dir` is not a usable directory (a file, a dangling link,
   *   a symlink loop), {@link OutputExistsError} when it holds a channel file and `overwrite` is
   *   off; errors of the file system itself (EROFS, ENOSPC, EACCES) as they are.
   */
  static async open(dir: string, options: OutputDirOptions = {}): Promise<OutputDir> {
    const createdDir = await ensureDir(dir);
    const log = options.log ?? (() => undefined);
    try {
      const names = await fsSeam.readdir(dir);
      const existing = names.filter((n) => CHANNEL_FILE_RE.test(n)).sort();
      if (existing.length > 0 && options.overwrite !== true) {
        throw new OutputExistsError(dir, existing[0]!);
      }
      for (const name of names) {
        const match = STAGING_RE.exec(name);
        if (match !== null) await removeIfDead(dir, name, match, log);
      }
      const self = ownIdentity();
      const stagingDir = join(
        dir,
        `.spillway-staging-${bootPrefix(self.bootId)}-${self.pid}-${self.startTicks}-${randomBytes(4).toString('hex')}`,
      );
      removeAtExit(stagingDir);
      if (createdDir) removeAtExit(dir, { ifEmpty: true });
      await fsSeam.mkdir(stagingDir, { mode: 0o700 });
      return new OutputDir(dir, stagingDir, createdDir, options.overwrite === true, existing);
    } catch (error) {
      if (createdDir) await removeIfEmpty(dir).catch((e) => addSuppressed(error as Error, e));
      throw error;
    }
  }

  /**
   * Moves the staged files of `channels` into place and removes the staging dir. Without
   * `overwrite` each goes in by a hard link that fails if the name was taken meanwhile (then
   * every file published so far is taken back and {@link OutputExistsError} is thrown); with
   * it, an existing entry is first moved aside into the staging dir and the new file renamed
   * over its name, and a failure midway moves everything back. Either way the dir ends up with
   * all the new files or none of them.
   */
  async publish(channels: readonly (ChannelInfo | string)[]): Promise<void> {
    this.end();
    // What to take back on a failure, one byte per channel (not a closure per file: there may
    // be hundreds of thousands): bit 1 published, bit 2 an existing entry moved aside.
    const done = new Uint8Array(channels.length);
    const names = (k: number) => {
      // A string is a file name already (a Flink output subpartition's file).
      const c = channels[k]!;
      const name = typeof c === 'string' ? c : `${channelKey(c)}.bin`;
      return {
        name,
        staged: join(this.stagingDir, name),
        target: join(this.dir, name),
        aside: join(this.stagingDir, REPLACED + name),
      };
    };
    const publishOne = async (k: number): Promise<void> => {
      const { name, staged, target, aside } = names(k);
      if (this.overwrite) {
        if (await exists(target)) {
          await fsSeam.rename(target, aside);
          done[k]! |= MOVED_ASIDE;
        }
        await fsSeam.rename(staged, target);
        done[k]! |= PUBLISHED;
      } else {
        await fsSeam.link(staged, target).catch((error: unknown) => {
          throw errnoOf(error) === 'EEXIST' ? new OutputExistsError(this.dir, name) : error;
        });
        done[k]! |= PUBLISHED;
        // Unlinked here, not by the staging dir's removal: that would walk the dir again.
        await fsSeam.unlink(staged);
      }
    };
    try {
      await forEachLimited(channels.length, PUBLISH_IN_FLIGHT, publishOne);
    } catch (error) {
      for (let k = channels.length - 1; k >= 0; k--) {
        if (done[k] === 0) continue;
        const { staged, target, aside } = names(k);
        const undo = async () => {
          if ((done[k]! & PUBLISHED) !== 0) {
            if (this.overwrite) await fsSeam.rename(target, staged);
            else await fsSeam.unlink(target);
          }
          if ((done[k]! & MOVED_ASIDE) !== 0) await fsSeam.rename(aside, target);
        };
        await undo().catch((e) => addSuppressed(error as Error, e));
      }
      await this.removeStaging().catch((e) => addSuppressed(error as Error, e));
      throw error;
    }
    await this.removeStaging();
  }

  /**
   * Removes the staging dir (and the output dir, if this recovery created it and it is empty
   * now): the dir is as it was found. Idempotent.
   */
  async discard(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    await this.removeStaging();
  }

  private end(): void {
    if (this.ended) throw new OutputDirError(this.dir, 'this recovery already ended its output');
    this.ended = true;
  }

  private async removeStaging(): Promise<void> {
    await fsSeam.rm(this.stagingDir);
    releaseAtExit(this.stagingDir);
    releaseAtExit(this.dir);
    if (this.createdDir) await removeIfEmpty(this.dir);
  }
}

/** Creates `dir` if it is missing (true: this call made it); checks that it is a directory. */
async function ensureDir(dir: string): Promise<boolean> {
  let st: Stats;
  try {
    // stat, not lstat: the output dir is the caller's own path, a link to a dir is theirs to use.
    st = await fsSeam.stat(dir);
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'ELOOP') throw new OutputDirError(dir, 'is a symlink loop', { cause: error });
    if (errno === 'ENOTDIR') {
      throw new OutputDirError(dir, 'a part of the path is not a directory', { cause: error });
    }
    if (errno !== 'ENOENT') throw error;
    const dangling = await fsSeam.lstat(dir).then(
      (l) => l.isSymbolicLink(),
      () => false,
    );
    if (dangling) throw new OutputDirError(dir, 'is a dangling symlink', { cause: error });
    // 0o777 & umask, like mkdir(1): the output is the user's, not a private spill dir. Not
    // recursive first: a recursive mkdir on a read-only file system reports ENOENT, not EROFS.
    await fsSeam.mkdir(dir, { mode: 0o777 }).catch(async (e: unknown) => {
      if (errnoOf(e) !== 'ENOENT') throw e;
      await fsSeam.mkdir(dir, { recursive: true, mode: 0o777 });
    });
    return true;
  }
  if (!st.isDirectory()) throw new OutputDirError(dir, 'is not a directory');
  return false;
}

/** Removes a staging dir left by a dead owner; keeps live, foreign and undecidable ones. */
async function removeIfDead(
  dir: string,
  name: string,
  match: RegExpExecArray,
  log: (line: string) => void,
): Promise<void> {
  const path = join(dir, name);
  const st = await fsSeam.lstat(path).catch(() => undefined);
  if (st === undefined) return;
  if (!st.isDirectory() || (myUid !== undefined && st.uid !== myUid)) {
    log(`spillway recover: left ${path} alone: not a staging dir of ours`);
    return;
  }
  const verdict = judge(
    { bootId: match[1]!, pid: Number(match[2]), startTicks: Number(match[3]) },
    true,
  );
  if (verdict.alive) {
    log(`spillway recover: kept ${path}: ${verdict.reason}`);
    return;
  }
  await fsSeam.rm(path);
  log(`spillway recover: removed ${path}, left by a dead recovery: ${verdict.reason}`);
}

async function exists(path: string): Promise<boolean> {
  return fsSeam.lstat(path).then(
    () => true,
    (error: unknown) => {
      if (errnoOf(error) === 'ENOENT') return false;
      throw error;
    },
  );
}

/** Removes `dir` only if nothing is in it: never a tree someone else wrote into meanwhile. */
async function removeIfEmpty(dir: string): Promise<void> {
  if ((await fsSeam.readdir(dir)).length === 0) await fsSeam.rm(dir);
}

/**
 * Runs `fn` over the indices `0 … count-1`, at most `limit` at once. On the first failure it starts nothing more,
 * waits for what is running, and rejects with that failure (later ones suppressed).
 */
async function forEachLimited(
  count: number,
  limit: number,
  fn: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: Error | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < count) {
      const index = next++;
      try {
        await fn(index);
      } catch (error) {
        if (failure === undefined) failure = error as Error;
        else addSuppressed(failure, error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
  if (failure !== undefined) throw failure;
}
