/**
 * The output dir of `spillway recover` (G10): channel files are written into a private staging
 * dir and published only when the whole recovery succeeded, nothing is ever written through a
 * link found there, and an existing channel file is replaced only when the caller said so — by
 * a rename, which replaces the entry and never follows it.
 *
 * An output dir that does not exist yet is staged whole beside it and published by one rename
 * of that tree (fresh-output.ts). What follows is the publish into a dir that exists.
 *
 * Publishing has one commit point (docs/guarantees.md, "Publishing"). Before the first move a
 * journal (`publishing`, fsync'd) goes into the staging dir; each new file is then hard-linked
 * into place from its staged copy (which stays until the commit, so its inode proves the file in
 * DIR is ours), and with `--overwrite` the entry it replaces is first renamed to
 * `.replaced-<name>` in the staging dir. The moves are implied by the names: `<name>` ↔
 * `DIR/<name>`, `.replaced-<name>` ↔ `DIR/<name>`. Once every file is in place and DIR is
 * fsync'd, `publishing` is renamed to `committed`: that rename is the commit point. An ending
 * before it undoes the moves; after it the run is complete and only the staging dir (the
 * replaced originals, the staged links) is left to remove.
 *
 * A `kill -9` can leave a staging dir behind. Each holds an `owner.json` like an owner dir of the
 * spill root, and the next recovery into the same dir judges it by the sweep's own rules (boot
 * id, pid namespace, start time; G7): a live one is never touched; a dead one is rolled back
 * (its journal says `publishing`: the user's files come back) or completed (`committed`), then
 * removed.
 */
import type { Stats } from '../fs.ts';
import { dirname, join } from 'node:path';
import { dirPrefix } from './dir-prefix.ts';
import { CHANNEL_FILE_RE } from './file-names.ts';
import { missingDirs, removeDirs } from './publish-tree.ts';
import { dirsOfNames, publishNamesOf, type PublishNames } from './publish-names.ts';
import { acquirePublishLock, settlePublishLock } from './publish-lock.ts';
import type { ChannelInfo } from '../channel.ts';
import {
  AbortedError,
  addSuppressed,
  errnoOf,
  OutputDirError,
  OutputExistsError,
} from '../errors.ts';
import { fsSeam, type FileSystem } from '../fs.ts';
import { settleIfDead } from './staging-leftovers.ts';
import {
  commitFresh,
  isMissing,
  makeHolder,
  markOwned,
  ownStagingName,
  removeCreated,
  removeDeadHolders,
  removeDeadHoldersBeside,
  normalizedTarget,
} from './fresh-output.ts';
import {
  COMMITTED,
  forEachInTurns,
  forEachLimited,
  journalText,
  PUBLISH_IN_FLIGHT,
  PUBLISHING,
  REPLACED,
  syncDir,
  writeSynced,
} from './publish-journal.ts';
import { releaseAtExit, removeAtExit } from '../exit-cleanup.ts';

/** `.spillway-staging-<bootId8>-<pid>-<startTicks>-<rand8>`: whose staging dir it is. */
const STAGING_RE = /^\.spillway-staging-([0-9a-z]{1,8})-(\d{1,10})-(\d{1,20})-[0-9a-f]{8}$/;
const PUBLISHED = 1;
const MOVED_ASIDE = 2;

/** How an output dir treats what it finds. */
export interface OutputDirOptions {
  /** Replace existing channel files (by rename; a link there is replaced, never followed). */
  overwrite?: boolean;
  /** Decisions about leftovers of earlier runs, one line each. */
  log?: (line: string) => void;
  /** What the user must hear: an interrupted publish restored or completed, one line each. */
  notice?: (line: string) => void;
  /** The file seam every operation goes through (a test's or the demo's may fault it). */
  fs?: FileSystem;
}

/** What {@link OutputDir.publish} may be told while it runs. */
export interface PublishOptions {
  /** Aborted before the commit point: every move is undone and the publish rejects. */
  signal?: AbortSignal;
}

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
 *   await out.publish(sink.channels, { signal });
 * } catch (error) {
 *   await sink.discard();
 *   await out.discard();
 *   throw error;
 * }
 * ```
 */
export class OutputDir {
  private ended = false;
  /** Set at the commit point: from then on the run is complete. */
  committed = false;

  private constructor(
    /** The output dir as given. */
    readonly dir: string,
    /** The private dir the channel files are written into until they are published. */
    readonly stagingDir: string,
    /**
     * Whether the output dir was missing: then it is staged whole beside it, in `holder`, and
     * published by one rename (fresh-output.ts); a failed run leaves no trace of it.
     */
    readonly createdDir: boolean,
    private readonly overwrite: boolean,
    /** Channel files found there at the start (refused unless overwriting). */
    public existing: readonly string[],
    private readonly log: (line: string) => void,
    /** The missing parents of the output dir this recovery created, deepest first. */
    private readonly parents: readonly string[],
    /** The file seam this output dir's operations go through. */
    readonly fs: FileSystem,
    private readonly notice: (line: string) => void,
    /** A new output dir's holder (`<parent>/.spillway-new-…`), whose `tree` is `stagingDir`. */
    private readonly holder?: string,
  ) {}

  /**
   * Opens `dir` for one recovery: creates it if missing, rolls back or completes the publishes
   * of dead runs and removes their staging dirs, refuses existing channel files unless
   * `overwrite` (and refuses always an entry under a channel file's name that is not a regular
   * file or a symlink), and creates this recovery's own staging dir (0700, exclusively) with
   * its owner marker.
   *
   * @throws {@link OutputDirError} when `dir` is not a usable directory (a file, a dangling link,
   *   a symlink loop) or holds a directory or special file under a channel file's name,
   *   {@link OutputExistsError} when it holds a channel file and `overwrite` is off; errors of
   *   the file system itself (EROFS, ENOSPC, EACCES) as they are.
   */
  static async open(dir: string, options: OutputDirOptions = {}): Promise<OutputDir> {
    const fs = options.fs ?? fsSeam;
    const log = options.log ?? (() => undefined);
    const notice = options.notice ?? log;
    const overwrite = options.overwrite === true;
    if (await isMissing(fs, dir)) {
      const target = normalizedTarget(dir);
      // What dead runs into new dirs beside this one left (before this run's own is there).
      await removeDeadHolders(fs, dirname(target), log);
      const parents: string[] = [];
      try {
        const { holder, tree } = await makeHolder(fs, target, parents);
        return new OutputDir(dir, tree, true, overwrite, [], log, parents, fs, notice, holder);
      } catch (error) {
        await removeCreated(fs, parents).catch((e) => addSuppressed(error as Error, e));
        throw error;
      }
    }
    const entries = await fs.readdir(dir);
    for (const name of entries) {
      const match = STAGING_RE.exec(name);
      if (match !== null) await settleIfDead(fs, dir, name, match, log, notice);
    }
    await removeDeadHolders(fs, dir, log, entries);
    await removeDeadHoldersBeside(fs, dir, log);
    await settlePublishLock(dir, fs);
    const names = await fs.readdir(dir);
    const existing = names.filter((n) => CHANNEL_FILE_RE.test(n)).sort();
    for (const name of existing) {
      const st = await fs.lstat(join(dir, name)).catch(() => undefined);
      if (st !== undefined && !st.isFile() && !st.isSymbolicLink()) {
        throw new OutputDirError(
          dir,
          `${name} is ${kindOf(st)}, not a channel file; refused (nothing there is replaced but regular files and links)`,
        );
      }
    }
    if (existing.length > 0 && !overwrite) throw new OutputExistsError(dir, existing[0]!);
    const stagingDir = join(dir, ownStagingName('staging'));
    removeAtExit(stagingDir);
    await fs.mkdir(stagingDir, { mode: 0o700 });
    await markOwned(fs, stagingDir);
    return new OutputDir(dir, stagingDir, false, overwrite, existing, log, [], fs, notice);
  }

  /**
   * The mode of a dir made in the staging dir: a new output's tree is published as it was
   * staged (0777 & umask, as mkdir(1) makes it; its holder is private), an existing output's
   * staging dir stays private (its publish makes the dirs DIR needs itself).
   */
  get stagingDirMode(): number {
    return this.holder !== undefined ? 0o777 : 0o700;
  }

  /**
   * Publishes the staged files of `channels` in one step: either every one is in place and the
   * run is committed, or — on a failure, or `signal` aborted before the commit point — every
   * move is undone and DIR is exactly as found (the replaced originals back under their names).
   * Without `overwrite`, a name taken meanwhile is an {@link OutputExistsError}.
   */
  async publish(
    channels: readonly (ChannelInfo | string)[] | PublishNames,
    options: PublishOptions = {},
  ): Promise<void> {
    this.end();
    if (this.holder !== undefined) return this.publishFresh(channels, options);
    const { signal } = options;
    const names = publishNamesOf(channels);
    // What to take back on a failure, one byte per channel (not a closure per file: there may
    // be hundreds of thousands): bit 1 published, bit 2 an existing entry moved aside.
    const done = new Uint8Array(names.length);
    // Paths by concatenation onto the two dirs' normalized prefixes: a file name has no
    // separator, and path.join per file was the largest user-time cost of 262,144 channels.
    const inStaging = dirPrefix(this.stagingDir);
    const inDir = dirPrefix(this.dir);
    const nameOf = (k: number): string => names.nameAt(k);
    const checkpoint = () => {
      if (signal?.aborted === true) {
        throw new AbortedError(`publishing into ${this.dir} cancelled`, { cause: signal.reason });
      }
    };
    const refuseUnlessFile = (name: string, st: Stats): void => {
      if (!st.isFile() && !st.isSymbolicLink()) {
        throw new OutputDirError(this.dir, `${name} is ${kindOf(st)}, not a channel file; refused`);
      }
    };
    const linkError = (name: string, error: unknown): unknown =>
      errnoOf(error) === 'EEXIST' ? new OutputExistsError(this.dir, name) : error;
    // Each move synchronously (a link through the thread pool cost more than the link itself),
    // recorded in `done` as soon as it happened, so the undo knows exactly what to take back.
    const publishOne = (k: number): void => {
      // Only the two paths a plain publish needs: at 262,144 files each string is garbage.
      const name = nameOf(k);
      const target = inDir + name;
      checkpoint();
      if (this.overwrite) {
        const st = this.fs.lstatSync(target);
        if (st !== undefined) {
          refuseUnlessFile(name, st);
          this.fs.renameSync(target, inStaging + REPLACED + name);
          done[k]! |= MOVED_ASIDE;
        }
      }
      try {
        this.fs.linkSync(inStaging + name, target);
      } catch (error) {
        throw linkError(name, error);
      }
      done[k]! |= PUBLISHED;
    };
    // A tree (nested names): the dirs it needs in DIR, and which of them this run creates —
    // in the journal, so an undo now or after a crash removes exactly those.
    // The names walked one by one: a copy (and an array per name, as a flatMap made) was
    // ~10 MB at 262,144 channels, at the run's peak of memory.
    const tree = dirsOfNames(names);
    const created = tree.length === 0 ? [] : await missingDirs(this.fs, this.dir, tree);
    if (tree.length > 0 && this.overwrite) {
      throw new OutputDirError(this.dir, 'a tree of subtask dirs is never published over files');
    }
    // One publish at a time in DIR: another run's moves never interleave with these.
    let release: () => Promise<void>;
    try {
      release = await acquirePublishLock(this.dir, this.stagingDir, signal, this.fs);
    } catch (error) {
      await this.removeStaging().catch((e) => addSuppressed(error as Error, e));
      throw error;
    }
    let made = 0;
    try {
      // Written and synced before the first move: from here a crash is rolled back by the next
      // run, so the exit hook must not remove the staging dir (it would take the originals).
      // Inside the try: a journal that cannot be written is an ending before any move.
      await writeSynced(
        this.fs,
        join(this.stagingDir, PUBLISHING),
        journalText(this.overwrite, created),
      );
      releaseAtExit(this.stagingDir);
      for (const rel of created) {
        await this.fs.mkdir(inDir + rel, { mode: 0o777 });
        made++;
      }
      await forEachInTurns(names.length, publishOne);
      checkpoint();
      for (const rel of tree) await syncDir(this.fs, inDir + rel);
      await syncDir(this.fs, this.dir);
      // The commit point.
      await this.fs.rename(join(this.stagingDir, PUBLISHING), join(this.stagingDir, COMMITTED));
      this.committed = true;
    } catch (error) {
      await this.undoMoves(done, nameOf, error as Error);
      await release().catch((e) => addSuppressed(error as Error, e));
      await removeDirs(this.fs, this.dir, created.slice(0, made)).catch((e) =>
        addSuppressed(error as Error, e),
      );
      await this.removeStaging().catch((e) => addSuppressed(error as Error, e));
      throw error;
    }
    // Past the commit point nothing fails the run: what cannot be removed now is the next
    // run's to complete (its journal says committed).
    await release().catch(() => undefined);
    await syncDir(this.fs, this.stagingDir).catch(() => undefined);
    // The staged links (and replaced originals) go in turns too; whatever fails here is left
    // to the general delete below, which reports it.
    await forEachInTurns(names.length, (k) => {
      const name = nameOf(k);
      this.fs.unlinkSync(inStaging + name);
      if ((done[k]! & MOVED_ASIDE) !== 0) this.fs.unlinkSync(inStaging + REPLACED + name);
    }).catch(() => undefined);
    await this.removeStaging().catch((e: unknown) =>
      this.log(
        `spillway recover: could not remove ${this.stagingDir} (${String(errnoOf(e) ?? e)}); the next run into ${this.dir} completes it`,
      ),
    );
  }

  /**
   * A new output dir's publish: its staged tree renamed to DIR (fresh-output.ts), or — when
   * DIR was made meanwhile — the staged entries moved into a staging dir inside it and
   * published the journaled way, with its checks.
   */
  private async publishFresh(
    channels: readonly (ChannelInfo | string)[] | PublishNames,
    options: PublishOptions,
  ): Promise<void> {
    try {
      const dirs = dirsOfNames(publishNamesOf(channels));
      const target = normalizedTarget(this.dir);
      if (await commitFresh(this.fs, this.stagingDir, target, dirs, options.signal)) {
        this.committed = true;
      } else {
        const inner = await OutputDir.open(target, {
          overwrite: this.overwrite,
          log: this.log,
          notice: this.notice,
          fs: this.fs,
        });
        try {
          for (const name of await this.fs.readdir(this.stagingDir)) {
            this.fs.renameSync(join(this.stagingDir, name), join(inner.stagingDir, name));
          }
        } catch (error) {
          await inner.discard().catch((e) => addSuppressed(error as Error, e));
          throw error;
        }
        await inner.publish(channels, options);
        this.existing = inner.existing;
        this.committed = true;
      }
    } catch (error) {
      await this.removeStaging().catch((e) => addSuppressed(error as Error, e));
      throw error;
    }
    // Past the commit point: the holder keeps only its marker.
    await this.removeStaging().catch((e: unknown) =>
      this.log(
        `spillway recover: could not remove ${this.holder} (${String(errnoOf(e) ?? e)}); the next run beside it removes it`,
      ),
    );
  }

  /**
   * Takes back every move `done` records (an ending before the commit point): a link this run
   * made is unlinked, an original moved aside goes back under its name. What fails is added to
   * `error`'s `.suppressed`.
   */
  private async undoMoves(
    done: Uint8Array,
    nameOf: (k: number) => string,
    error: Error,
  ): Promise<void> {
    const inStaging = dirPrefix(this.stagingDir);
    const inDir = dirPrefix(this.dir);
    await forEachLimited(done.length, PUBLISH_IN_FLIGHT, async (k) => {
      if (done[k] === 0) return;
      const name = nameOf(k);
      const target = inDir + name;
      try {
        // Only the very file this run linked there (same inode), never anyone else's.
        if ((done[k]! & PUBLISHED) !== 0 && (await sameFile(this.fs, inStaging + name, target))) {
          await this.fs.unlink(target);
        }
        // Back under its name only if the name is free: a rename would replace what is there.
        if ((done[k]! & MOVED_ASIDE) !== 0 && this.fs.lstatSync(target) === undefined) {
          await this.fs.rename(inStaging + REPLACED + name, target);
        }
      } catch (e) {
        addSuppressed(error, e);
      }
    });
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
    const own = this.holder ?? this.stagingDir;
    await this.fs.rm(own);
    releaseAtExit(own);
    await removeCreated(this.fs, this.parents);
  }
}

/** Whether two paths name the same file (dev and inode), neither followed if a link. */
async function sameFile(fs: FileSystem, a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([
    fs.lstat(a).catch(() => undefined),
    fs.lstat(b).catch(() => undefined),
  ]);
  return x !== undefined && y !== undefined && x.dev === y.dev && x.ino === y.ino;
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}
