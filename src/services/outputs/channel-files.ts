/**
 * Channel consumers that write each channel's recovered bytes to its own file,
 * `gate-<g>-channel-<c>.bin`, in a directory the caller owns (the output dir's staging dir).
 *
 * Built so that nothing grows with the number of channels (G8): a channel has state here only
 * while it has work (bytes staged, or a file to finish), the bytes staged across all channels
 * are bounded, files are written through a bounded pool of open descriptors, and a bounded
 * number of file operations run at once — several, so the thread pool is never idle while one
 * file is created. At hundreds of thousands of small files the garbage of each operation is
 * what fills the heap, so an operation is one async function over bare descriptors: no
 * promise chain per channel, no file-handle object per file.
 */
import { fsConstants as constants } from '../fs.ts';
import { dirPrefix } from './dir-prefix.ts';
import { channelFileName } from './file-names.ts';
import { channelId, channelOfId, type ChannelConsumer, type ChannelInfo } from '../channel.ts';
import { ErrorCollector, toError } from '../errors.ts';
import { giveCopies, takeCopy } from '../buffer-pool.ts';
import { fsSeam, type FileSystem } from '../fs.ts';

const inputFileName = (info: ChannelInfo): string => channelFileName('input', info);

/** How much the sink may hold at once. */
export interface ChannelFileLimits {
  /** Bytes staged in memory across all channels before they are written; default 16 MiB. */
  maxStagedBytes?: number;
  /**
   * A channel's staged bytes are written once they reach this; default 1 MiB (one write per
   * MiB: at 256 KiB the thread-pool round trips of the writes cost more than the copying).
   */
  chunkBytes?: number;
  /** Channels holding staged bytes at once before the oldest are written; default 1024. */
  maxStagedChannels?: number;
  /** Descriptors kept open for channels that are written again; default 64. */
  maxOpenFiles?: number;
  /** File operations in flight at once; default 8 (twice libuv's thread pool). */
  maxInFlight?: number;
}

const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
/**
 * A channel whose whole file is known and at most this big is created, written and closed
 * synchronously (see {@link ChannelFileSink.createNow}): one thread-pool round trip per
 * operation cost ~8× the kernel's work at 262,144 one-byte channels (docs/performance.md).
 */
const SYNC_CREATE_MAX_BYTES = 64 * 1024;
/** Synchronous creations between two turns of the event loop (a cancel must get in). */
const SYNC_CREATES_PER_TURN = 256;
const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW;

/** A channel with something to do. Exists only while it has. */
interface Work {
  /** The channel ({@link channelId}): its `{ gate, channel }` is made again where a name needs it. */
  readonly id: number;
  chunks: Buffer[];
  bytes: number;
  /** onFinished came: the file is to be completed and closed, and the channel forgotten. */
  finish: boolean;
  /** In the run queue (at most once). */
  queued: boolean;
  /** An operation of this channel is running (at most one: a channel's writes stay in order). */
  running: boolean;
}

/**
 * One output file per channel in `dir` (which must exist and be the caller's alone: files are
 * created exclusively and never through a link). Every channel gets a file, an empty one if it
 * had no bytes. Call {@link ChannelFileSink.finish} after the recovery: it waits for every
 * write, closes every file and throws the first write error.
 *
 * @example
 * ```ts
 * const sink = new ChannelFileSink(stagingDir);
 * const recovery = recoverChannelState({ checkpoint, channels: (info) => sink.consumer(info) });
 * await recovery.done;
 * await sink.finish();
 * ```
 */
export class ChannelFileSink {
  /** Bytes delivered to the sink so far. */
  bytes = 0;
  private readonly maxStagedBytes: number;
  /** `dir` with its separator: each file's path is this plus its name (no path.join per file). */
  private readonly prefix: string;
  private readonly chunkBytes: number;
  private readonly maxStagedChannels: number;
  private readonly maxOpenFiles: number;
  private readonly maxInFlight: number;
  /** Channels with work, oldest first (a Map keeps insertion order). */
  private readonly work = new Map<number, Work>();
  private stagedBytes = 0;
  /** Bytes handed to running operations and not yet written: held in memory all the same. */
  private writingBytes = 0;
  /** Channels waiting for an operation slot, in order; `head` is the next one. */
  private queue: number[] = [];
  private head = 0;
  private running = 0;
  /** Channels whose file exists and is not finished yet (the first write creates it). */
  private readonly created = new Set<number>();
  /** Open descriptors, least recently used first. */
  private readonly open = new Map<number, number>();
  /**
   * Channels finished, in order, as {@link channelId}s (< 2^32) in the first `doneCount`
   * slots: the files {@link finish} guarantees. Kept for every channel until the publish: as
   * the consumers' `ChannelInfo`s (each with its signal) they were ~10 MB of the peak at
   * 262,144 channels, and as a number array 7 MB (each id above 2^31 a heap number); 1 MiB so.
   */
  private done = new Uint32Array(1024);
  private doneCount = 0;
  /** Resolved each time an operation ends: what backpressure and {@link finish} wait on. */
  private progress: { promise: Promise<void>; resolve: () => void } | undefined;
  private failure: Error | undefined;
  private closed = false;
  /** Files created synchronously so far, and the turn of the loop the drain waits for. */
  private syncCreates = 0;
  private syncTurn: Promise<void> | undefined;

  /**
   * @param fileName a channel's file name; default `gate-<g>-channel-<c>.bin` (a Flink
   *   recovery's output side names `partition-<p>-subpartition-<s>.bin`: file-names.ts).
   */
  constructor(
    readonly dir: string,
    limits: ChannelFileLimits = {},
    private readonly fileName: (info: ChannelInfo) => string = inputFileName,
    /** The file seam the files are written through (a test's or the demo's may fault it). */
    private readonly fs: FileSystem = fsSeam,
  ) {
    this.prefix = dirPrefix(dir);
    this.maxStagedBytes = limits.maxStagedBytes ?? 16 * 1024 * 1024;
    this.chunkBytes = limits.chunkBytes ?? 1024 * 1024;
    this.maxStagedChannels = limits.maxStagedChannels ?? 1024;
    this.maxOpenFiles = limits.maxOpenFiles ?? 64;
    // Fewer operations than descriptors, so there is always an idle one to evict.
    this.maxInFlight = Math.max(1, Math.min(limits.maxInFlight ?? 8, this.maxOpenFiles - 1));
  }

  /** The channels finished so far (each has its file once {@link finish} resolves). */
  get channels(): readonly ChannelInfo[] {
    return Array.from(this.done.subarray(0, this.doneCount), channelOfId);
  }

  /** How many channels have finished (their files: {@link fileNameAt}). */
  get finishedCount(): number {
    return this.doneCount;
  }

  /**
   * The file name of the `k`th channel finished, made on each call: what a publish moves,
   * without a list of them all (at 262,144 channels ~19 MB) nor a `ChannelInfo` per channel.
   */
  fileNameAt(k: number): string {
    return this.fileName(channelOfId(this.done[k]!));
  }

  /**
   * The consumer of one channel: it copies what it is given (it borrows). A small object with
   * its methods on a prototype, not closures: there may be hundreds of thousands.
   */
  consumer(info: ChannelInfo): ChannelConsumer {
    return new ChannelFileConsumer(this, channelId(info));
  }

  /** Waits for every write, closes every file; throws the first write error. */
  async finish(): Promise<void> {
    for (const id of this.work.keys()) this.schedule(id);
    while (this.running > 0 || this.head < this.queue.length) await this.nextProgress();
    await this.closeAll();
  }

  /** Stops writing and closes every descriptor (the caller removes the directory). */
  async discard(): Promise<void> {
    this.closed = true;
    this.queue = [];
    this.head = 0;
    while (this.running > 0) await this.nextProgress();
    this.work.clear();
    this.stagedBytes = 0;
    await this.closeAll().catch(() => undefined);
  }

  /** @internal a consumer's delivery. */
  take(id: number, buffer: Buffer): void | Promise<void> {
    this.check();
    this.bytes += buffer.length;
    if (buffer.length === 0) return undefined;
    const work = this.workOf(id);
    // A copy: the drain may reuse its buffer as soon as this returns.
    work.chunks.push(takeCopy(buffer));
    work.bytes += buffer.length;
    this.stagedBytes += buffer.length;
    if (work.bytes >= this.chunkBytes) this.schedule(id);
    if (this.stagedBytes > this.maxStagedBytes || this.work.size > this.maxStagedChannels) {
      // Oldest first: the channels the drain has moved on from.
      for (const [id, old] of this.work) {
        if (
          this.stagedBytes <= this.maxStagedBytes / 2 &&
          this.work.size <= this.maxStagedChannels / 2
        ) {
          break;
        }
        if (old.queued || old.running || old.bytes === 0) continue;
        if (!this.createNow(id, old)) this.schedule(id);
      }
    }
    return this.syncTurn ?? this.backpressure();
  }

  /** @internal a consumer's end. */
  end(id: number): void | Promise<void> {
    this.check();
    if (this.doneCount === this.done.length) {
      const grown = new Uint32Array(this.done.length * 2);
      grown.set(this.done);
      this.done = grown;
    }
    this.done[this.doneCount++] = id;
    const pending = this.work.get(id);
    if (pending === undefined && this.created.has(id) && !this.open.has(id)) {
      // Written and closed already: the file is complete, nothing to do but forget it.
      this.created.delete(id);
      return undefined;
    }
    // Bytes still staged, a descriptor to close, or a channel with no bytes (an empty file).
    const work = this.workOf(id);
    work.finish = true;
    if (!work.queued && !work.running && this.createNow(id, work)) {
      this.work.delete(id);
      this.created.delete(id);
      return this.syncTurn;
    }
    this.schedule(id);
    return this.backpressure();
  }

  /**
   * Writes a channel that has no file yet and little staged as a whole new file, synchronously
   * (open, write, close in one go; the descriptor is not kept): the fastest way to make a small
   * file from Node. False when that does not apply (the async operations take it then). Every
   * {@link SYNC_CREATES_PER_TURN} creations `syncTurn` holds a promise that resolves on the next
   * turn of the event loop, handed back to the drain as backpressure.
   */
  private createNow(id: number, work: Work): boolean {
    if (
      this.closed ||
      this.failure !== undefined ||
      this.created.has(id) ||
      work.bytes > SYNC_CREATE_MAX_BYTES
    ) {
      return false;
    }
    const path = this.prefix + this.fileName(channelOfId(id));
    try {
      this.fs.writeNewFileSync(path, CREATE, 0o666, work.chunks);
      giveCopies(work.chunks);
    } catch (error) {
      this.failure ??= toError(error);
      throw this.failure;
    }
    this.created.add(id);
    this.stagedBytes -= work.bytes;
    work.chunks = [];
    work.bytes = 0;
    if (!work.finish) this.work.delete(id);
    if (++this.syncCreates % SYNC_CREATES_PER_TURN === 0) {
      const turn = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        this.syncTurn = undefined;
        this.check();
      });
      this.syncTurn = turn;
    }
    return true;
  }

  private workOf(id: number): Work {
    let work = this.work.get(id);
    if (work === undefined) {
      work = { id, chunks: [], bytes: 0, finish: false, queued: false, running: false };
      this.work.set(id, work);
    }
    return work;
  }

  private schedule(id: number): void {
    const work = this.work.get(id);
    if (work === undefined || work.queued || work.running || this.closed) return;
    work.queued = true;
    this.queue.push(id);
    this.pump();
  }

  private pump(): void {
    while (this.running < this.maxInFlight && this.head < this.queue.length) {
      const id = this.queue[this.head++]!;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      const work = this.work.get(id);
      if (work === undefined) continue;
      work.queued = false;
      work.running = true;
      const chunks = work.chunks;
      const finish = work.finish;
      this.stagedBytes -= work.bytes;
      this.writingBytes += work.bytes;
      const taken = work.bytes;
      work.chunks = [];
      work.bytes = 0;
      this.running++;
      void this.run(id, chunks, finish)
        .catch((error: unknown) => void (this.failure ??= toError(error)))
        .then(() => {
          giveCopies(chunks); // settled either way: no write reads them any more
          this.ended(id, work, finish, taken);
        });
    }
  }

  /** One operation of one channel: write what was staged, and finish the file if it ended. */
  private async run(id: number, chunks: Buffer[], finish: boolean): Promise<void> {
    if (this.failure !== undefined) return;
    const path = this.prefix + this.fileName(channelOfId(id));
    if (chunks.length > 0 || !this.created.has(id)) {
      const fd = await this.fdOf(id, path);
      if (chunks.length > 0) await this.fs.writeFd(fd, path, chunks);
    }
    if (finish) {
      const fd = this.open.get(id);
      this.open.delete(id);
      this.created.delete(id);
      if (fd !== undefined) await this.fs.closeFd(fd, path);
    }
  }

  private ended(id: number, work: Work, finished: boolean, written: number): void {
    this.running--;
    this.writingBytes -= written;
    work.running = false;
    if (finished) this.work.delete(id);
    else if (work.bytes > 0 || work.finish) this.schedule(id);
    else this.work.delete(id);
    const progress = this.progress;
    this.progress = undefined;
    progress?.resolve();
    this.pump();
  }

  /** The channel's descriptor: created exclusively the first time, reopened to append. */
  private async fdOf(id: number, path: string): Promise<number> {
    const open = this.open.get(id);
    if (open !== undefined) {
      this.open.delete(id);
      this.open.set(id, open);
      return open;
    }
    if (this.open.size >= this.maxOpenFiles) {
      // The least recently used descriptor no running operation holds.
      for (const [oldId, fd] of this.open) {
        if (this.work.get(oldId)?.running === true) continue;
        this.open.delete(oldId);
        await this.fs.closeFd(fd, path);
        break;
      }
    }
    const fd = await this.fs.openFd(path, this.created.has(id) ? APPEND : CREATE, 0o666);
    this.created.add(id);
    this.open.set(id, fd);
    return fd;
  }

  /**
   * The drain waits while the run queue is long or too many bytes are staged (G8: counted in
   * bytes, not only operations — one channel never queues more than one operation, so an
   * operation count alone let it stage without bound while its write ran).
   */
  private backpressure(): Promise<void> | undefined {
    if (!this.mustWait()) return undefined;
    return this.waitWhileFull();
  }

  private mustWait(): boolean {
    return (
      this.queue.length - this.head >= this.maxInFlight * 2 ||
      (this.stagedBytes + this.writingBytes > this.maxStagedBytes && this.running > 0)
    );
  }

  private async waitWhileFull(): Promise<void> {
    do {
      await this.nextProgress();
      this.check();
    } while (this.mustWait() && !this.closed);
  }

  private nextProgress(): Promise<void> {
    if (this.progress === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.progress = { promise, resolve };
    }
    return this.progress.promise;
  }

  private async closeAll(): Promise<void> {
    this.closed = true;
    const errors = new ErrorCollector();
    if (this.failure !== undefined) errors.add(this.failure);
    for (const [id, fd] of this.open) {
      await this.fs.closeFd(fd, `${this.dir}/#${id}`).catch((e) => errors.add(e));
    }
    this.open.clear();
    errors.throwIfAny();
  }

  private check(): void {
    if (this.failure !== undefined) throw this.failure;
  }
}

/**
 * One channel's consumer: two fields (the sink and the channel's number), the rest on the
 * prototype. It keeps no `ChannelInfo`: the one it was made from (with the task's signal) is
 * garbage once the drain has its consumer.
 */
class ChannelFileConsumer implements ChannelConsumer {
  constructor(
    private readonly sink: ChannelFileSink,
    private readonly id: number,
  ) {}

  get borrows(): boolean {
    return true;
  }

  onBuffer(buffer: Buffer): void | Promise<void> {
    return this.sink.take(this.id, buffer);
  }

  onFinished(): void | Promise<void> {
    return this.sink.end(this.id);
  }
}
