/**
 * The process's view of one spill root (G7): `<root>/spillway/owner-<bootId8>-<pid>-<startTicks>/`,
 * one owner dir per process with an `owner.json` marker, swept of dead owners when it is opened
 * and removed when the process exits.
 *
 * In-process cleanup can never cover `kill -9`, the OOM killer or a power cut, so every process
 * that opens a spill root first sweeps it (./sweep.ts); the sweep judges owners by identity
 * (./identity.ts, ./liveness.ts) and touches nothing it cannot prove dead.
 */
import { randomBytes } from '../node-crypto.ts';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { addSuppressed, CleanupError, MisuseError, SpillRootError, errnoOf } from '../errors.ts';
import { fsSeam, type FileSystem } from '../fs.ts';
import { releaseAtExit, removeAtExit } from '../exit-cleanup.ts';
import { currentOwner, ownIdentity, ownerDirName } from './identity.ts';
import { holdOwnerDir, releaseOwnerDir } from './liveness.ts';
import { defaultLog, rand8, sweepSpillwayDir, type SweepReport } from './sweep.ts';
import { checkRoot, ensureSpillwayDir, foreignReason, message } from './validation.ts';

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
    /** The file seam every operation of this instance goes through. */
    private readonly fs: FileSystem,
  ) {
    this.root = root;
    this.ownerDir = join(root, 'spillway', ownerDirName(ownIdentity()));
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
    options: {
      sweep?: boolean;
      log?: (line: string) => void;
      signal?: AbortSignal;
      /**
       * The file seam the instance's operations go through (a test's or the demo's faulty
       * one); the product's by default. Like the other options, the first opener's counts.
       */
      fs?: FileSystem;
    } = {},
  ): Promise<SpillRoot> {
    const resolved = resolve(root);
    const fs = options.fs ?? fsSeam;
    const st = await checkRoot(resolved, fs);
    const key = `${st.dev}:${st.ino}`;
    const existing = cache.get(key);
    if (existing !== undefined) {
      const live = await existing.ready
        .then(
          async (instance) => {
            // A root deleted behind our back and made anew often gets the same inode: the cached
            // instance then points at an owner dir that no longer exists. Start afresh.
            await instance.fs.lstat(instance.ownerDir);
            return instance;
          },
          () => undefined,
        )
        .catch(() => undefined);
      if (live !== undefined) return live;
      if (cache.get(key) === existing) cache.delete(key);
      return SpillRoot.open(root, options);
    }
    const instance = new SpillRoot(resolved, key, fs);
    const entry: CacheEntry = { root: instance, ready: instance.#init(options) };
    cache.set(key, entry);
    entry.ready.catch(() => {
      if (cache.get(key) === entry) cache.delete(key);
    });
    return entry.ready;
  }

  async #init(options: {
    sweep?: boolean;
    log?: (line: string) => void;
    signal?: AbortSignal;
  }): Promise<SpillRoot> {
    await closing.get(this.key)?.catch(() => undefined);
    const spillwayDir = join(this.root, 'spillway');
    await ensureSpillwayDir(spillwayDir, this.fs);
    if (options.sweep !== false) {
      this.#lastSweep = await sweepSpillwayDir(
        spillwayDir,
        options.log ?? defaultLog,
        options.signal,
        this.fs,
      );
    }
    const previous = byOwnerDir.get(this.ownerDir);
    if (previous !== undefined && previous !== this) {
      // The root was deleted and recreated under an open instance: its dir is gone, and its
      // close() must not remove the one we are about to create.
      previous.#detached = true;
      if (cache.get(previous.key)?.root === previous) cache.delete(previous.key);
    }
    byOwnerDir.set(this.ownerDir, this);
    holdOwnerDir(this.ownerDir);
    removeAtExit(this.ownerDir);
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
        await this.fs.rm(this.ownerDir);
        releaseAtExit(this.ownerDir);
      } catch (cleanup) {
        addSuppressed(error, cleanup);
      }
      releaseOwnerDir(this.ownerDir);
      if (byOwnerDir.get(this.ownerDir) === this) byOwnerDir.delete(this.ownerDir);
      throw error;
    }
    return this;
  }

  async #createOwnerDir(): Promise<void> {
    try {
      await this.fs.mkdir(this.ownerDir, { mode: 0o700 });
    } catch (e) {
      if (errnoOf(e) !== 'EEXIST') throw e;
      // Only this process can hold this name: it is left over from one of our instances whose
      // close failed. Start it afresh rather than inherit its contents.
      const st = await this.fs.lstat(this.ownerDir);
      if (foreignReason(st) !== undefined) {
        throw new SpillRootError(`${this.ownerDir} exists and is ${foreignReason(st)}`);
      }
      await this.fs.rm(this.ownerDir);
      await this.fs.mkdir(this.ownerDir, { mode: 0o700 });
    }
    // tmp + rename: a sweeper reads either no marker (and keeps a young dir) or a whole one.
    const tmp = join(this.ownerDir, `.owner.json.tmp-${rand8()}`);
    await this.fs.writeFile(tmp, `${JSON.stringify(currentOwner(), null, 2)}\n`, 0o600);
    await this.fs.rename(tmp, join(this.ownerDir, 'owner.json'));
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
        await this.fs.rm(this.ownerDir);
      } catch (e) {
        throw new CleanupError(`could not remove owner dir ${this.ownerDir}: ${message(e)}`, {
          cause: e,
        });
      }
      releaseAtExit(this.ownerDir);
      releaseOwnerDir(this.ownerDir);
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
