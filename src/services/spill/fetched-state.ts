/**
 * The sealed, reference-counted result of the fetch stage: the ordered spill files of one task
 * and the task dir that holds them. Flink's `FetchedChannelState`, stricter where Flink is
 * lenient (see the class doc).
 */
import { fsSeam, type FileSystem } from '../fs.ts';
import { AbortedError, CleanupError, MisuseError } from '../errors.ts';
import type { ChannelInfo } from '../channel.ts';

/**
 * Refcounted spill files. Files **and** the task dir are deleted when the last grant is
 * released, or at once by a forced `close()`.
 *
 * Stricter than Flink (docs §8.4):
 * - `acquire()` after cleanup throws `MisuseError` (Flink silently revives a dead count);
 * - a release past zero rejects with `MisuseError` (Flink ignores it);
 * - a failed delete is reported as a `CleanupError` and a later `close()` retries it (Flink
 *   never retries, so one EIO leaks a file forever: row C1).
 *
 * Readers register their in-flight I/O with {@link FetchedChannelState.track}, so a forced
 * close waits for reads already running and fences new ones with `AbortedError` (G4): a file is
 * never deleted under a live read, and a reader never sees a raw ENOENT.
 *
 * @example
 * ```ts
 * const state = await writer.close();      // holds the hand-off grant
 * state.acquire();                          // the drainer's main reader
 * await state.release();                    // hand-off released at drain start
 * await state.release();                    // last grant: files and task dir deleted
 * ```
 */
export class FetchedChannelState {
  private grants = 0;
  private forced = false;
  private deleteFailed = false;
  private cleanup: Promise<void> | undefined;
  private readonly inflight = new Set<Promise<unknown>>();

  /**
   * @param files spill files in write order (sealed: never changes)
   * @param taskDir the task's exclusive directory, or undefined when nothing was spilled
   * @param channels every channel the checkpoint named, in first-seen order, including
   *   channels whose entries were all empty (they still get finished by the drainer)
   * @param channelEnds per channel, the 1-based ordinal of its last segment (0: none), sorted
   *   ascending: how the drain counts channels delivered as it goes (progress only); without
   *   it every channel counts as delivered when the drain has read its last segment
   * @param fs the file seam its files are read and its task dir deleted through (the writer's)
   */
  constructor(
    files: readonly string[],
    readonly taskDir: string | undefined,
    channels: readonly ChannelInfo[],
    readonly channelEnds?: Uint32Array,
    readonly fs: FileSystem = fsSeam,
  ) {
    this.files = Object.freeze([...files]);
    // One small frozen object per channel, shared with the writer that noted it (G8: the
    // channel count may be in the hundreds of thousands). A literal frozen costs ~50 bytes; a
    // frozen spread copy, ~200 (it gets a shape of its own).
    this.channels = Object.freeze(
      channels.map((c) =>
        Object.isFrozen(c) ? c : Object.freeze({ gate: c.gate, channel: c.channel }),
      ),
    );
  }

  readonly files: readonly string[];
  readonly channels: readonly ChannelInfo[];

  /** Outstanding grants. */
  get refCount(): number {
    return this.grants;
  }

  /** True once cleanup began (last release or forced close): files may already be gone. */
  get isClosed(): boolean {
    return this.cleanup !== undefined;
  }

  /** Takes one grant. Throws `MisuseError` once cleanup has begun. */
  acquire(): void {
    if (this.isClosed) {
      throw new MisuseError('acquire() on fetched channel state after its files were cleaned up');
    }
    this.grants++;
  }

  /**
   * Returns one grant; the last one deletes the files and the task dir. Resolves when that
   * deletion has finished. A release after a forced close is a harmless no-op (the closer
   * already deleted); a release past zero rejects with `MisuseError`.
   */
  release(): Promise<void> {
    if (this.forced) return this.cleanup!;
    if (this.grants <= 0) {
      return Promise.reject(
        new MisuseError(`release() past zero on fetched channel state (${this.grants} grants)`),
      );
    }
    this.grants--;
    return this.grants > 0 ? Promise.resolve() : this.startCleanup();
  }

  /**
   * Forced close: deletes even with grants outstanding, after in-flight reads settle.
   * Idempotent; a close after a failed deletion tries the deletion again.
   */
  close(): Promise<void> {
    if (this.cleanup === undefined) {
      this.forced = true;
      return this.startCleanup();
    }
    if (this.deleteFailed) this.cleanup = this.cleanup.catch(() => this.deleteTaskDir());
    return this.cleanup;
  }

  /**
   * Runs one read on behalf of a reader, fenced: rejects with `AbortedError` if cleanup has
   * begun, and makes a forced close wait for it. Any error a fenced read raises after cleanup
   * began (ENOENT, EOF of a truncated file) is turned into an `AbortedError` carrying it.
   */
  async track<T>(what: string, io: () => Promise<T>): Promise<T> {
    if (this.isClosed) throw new AbortedError(`${what}: spill state was closed`);
    const p = io();
    this.inflight.add(p);
    try {
      return await p;
    } catch (e) {
      if (this.isClosed) {
        throw new AbortedError(`${what}: spill state was closed`, { cause: e });
      }
      throw e;
    } finally {
      this.inflight.delete(p);
    }
  }

  private startCleanup(): Promise<void> {
    this.grants = 0;
    this.cleanup = (async () => {
      // G4: never delete under a read that already started; new reads are fenced by the flag.
      while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
      await this.deleteTaskDir();
    })();
    return this.cleanup;
  }

  /**
   * The task dir is exclusive to this state, so one recursive delete removes every file, and
   * a cleanup running beside the writer never has to walk (or race on) a file list.
   */
  private async deleteTaskDir(): Promise<void> {
    if (this.taskDir === undefined) return;
    try {
      await this.fs.rm(this.taskDir);
      this.deleteFailed = false;
    } catch (e) {
      this.deleteFailed = true;
      throw new CleanupError(
        `could not delete spill dir ${this.taskDir}: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
  }
}
