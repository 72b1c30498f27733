/**
 * Channel consumers that write each channel's recovered bytes to its own file,
 * `gate-<g>-channel-<c>.bin`, in a directory the caller owns (the output dir's staging dir).
 *
 * Built so that nothing grows with the number of channels (G8): a channel has state only while
 * it holds staged bytes, the bytes staged across all channels are bounded, files are written
 * through a bounded pool of open descriptors, and file operations run a bounded number at a
 * time — several in flight, so the thread pool is not idle while one file is created.
 */
import { constants } from 'node:fs';
import { join } from 'node:path';
import { channelKey, type ChannelConsumer, type ChannelInfo } from '../channel.ts';
import { ErrorCollector, toError } from '../errors.ts';
import { fsSeam, type SeamFile } from '../fs.ts';

/** How much the sink may hold at once. */
export interface ChannelFileLimits {
  /** Bytes staged in memory across all channels before they are written; default 16 MiB. */
  maxStagedBytes?: number;
  /** A channel's staged bytes are written once they reach this; default 256 KiB. */
  chunkBytes?: number;
  /** Channels holding staged bytes at once before the oldest are written; default 4096. */
  maxStagedChannels?: number;
  /** Descriptors kept open for channels that are written again; default 64. */
  maxOpenFiles?: number;
  /** File operations in flight at once; default 8 (twice libuv's thread pool). */
  maxInFlight?: number;
}

const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW;

/** Operations queued before the drain is made to wait (each holds at most one chunk). */
const MAX_QUEUED = 64;

/** A channel's id: one number instead of a string key per channel. */
function idOf(info: ChannelInfo): number {
  return info.gate * 65536 + info.channel;
}

/** What a channel holds while it has bytes that are not written yet. */
interface Staged {
  readonly info: ChannelInfo;
  chunks: Buffer[];
  bytes: number;
}

/** Runs at most `limit` operations at once, in the order they ask. */
class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  get busy(): boolean {
    return this.active >= this.limit;
  }

  async run<T>(op: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((go) => this.waiting.push(go));
    else this.active++;
    try {
      return await op();
    } finally {
      const next = this.waiting.shift();
      if (next !== undefined) next();
      else this.active--;
    }
  }
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
  private readonly chunkBytes: number;
  private readonly maxStagedChannels: number;
  private readonly maxOpenFiles: number;
  private readonly limiter: Limiter;
  /** Channels with bytes not yet written, oldest first (a Map keeps insertion order). */
  private readonly staged = new Map<number, Staged>();
  private stagedBytes = 0;
  /** Channels whose file exists. */
  private readonly created = new Set<number>();
  /** Channels finished, in order: the files {@link finish} guarantees. */
  private readonly done: ChannelInfo[] = [];
  /** Open descriptors, least recently used first. */
  private readonly open = new Map<number, SeamFile>();
  /** Channels whose operation is running now: their descriptors are never evicted. */
  private readonly busy = new Set<number>();
  /** Per channel, the last operation queued: a channel's writes stay in order. */
  private readonly tails = new Map<number, Promise<void>>();
  private readonly inFlight = new Set<Promise<void>>();
  /** Resolved (and replaced) each time a queued operation ends: what backpressure waits on. */
  private slotFreed: { promise: Promise<void>; resolve: () => void } | undefined;
  private failure: Error | undefined;
  private closed = false;

  constructor(
    readonly dir: string,
    limits: ChannelFileLimits = {},
  ) {
    this.maxStagedBytes = limits.maxStagedBytes ?? 16 * 1024 * 1024;
    this.chunkBytes = limits.chunkBytes ?? 256 * 1024;
    this.maxStagedChannels = limits.maxStagedChannels ?? 4096;
    this.maxOpenFiles = limits.maxOpenFiles ?? 64;
    this.limiter = new Limiter(Math.min(limits.maxInFlight ?? 8, this.maxOpenFiles - 1));
  }

  /** The channels finished so far (each has its file once {@link finish} resolves). */
  get channels(): readonly ChannelInfo[] {
    return this.done;
  }

  /** The consumer of one channel: it copies what it is given (it borrows). */
  consumer(info: ChannelInfo): ChannelConsumer {
    const channel = { gate: info.gate, channel: info.channel };
    return {
      borrows: true,
      onBuffer: (buffer) => this.take(channel, buffer),
      onFinished: () => this.finishChannel(channel),
    };
  }

  /** Waits for every write, closes every file; throws the first write error. Idempotent. */
  async finish(): Promise<void> {
    this.flushAll();
    await this.settle();
    this.closed = true;
    const errors = new ErrorCollector();
    if (this.failure !== undefined) errors.add(this.failure);
    for (const file of this.open.values()) await file.close().catch((e) => errors.add(e));
    this.open.clear();
    errors.throwIfAny();
  }

  /** Stops writing and closes every descriptor (the caller removes the directory). */
  async discard(): Promise<void> {
    this.closed = true;
    this.staged.clear();
    this.stagedBytes = 0;
    await this.settle();
    const errors = new ErrorCollector();
    for (const file of this.open.values()) await file.close().catch((e) => errors.add(e));
    this.open.clear();
    errors.throwIfAny();
  }

  private take(info: ChannelInfo, buffer: Buffer): void | Promise<void> {
    this.check();
    this.bytes += buffer.length;
    if (buffer.length === 0) return undefined;
    const id = idOf(info);
    let entry = this.staged.get(id);
    if (entry === undefined) {
      entry = { info, chunks: [], bytes: 0 };
      this.staged.set(id, entry);
    }
    // A copy: the drain may reuse its buffer as soon as this returns.
    entry.chunks.push(Buffer.from(buffer));
    entry.bytes += buffer.length;
    this.stagedBytes += buffer.length;
    if (entry.bytes >= this.chunkBytes) this.write(id, entry);
    if (this.stagedBytes > this.maxStagedBytes || this.staged.size > this.maxStagedChannels) {
      // Oldest first: the channels the drain has moved on from.
      for (const [oldId, old] of this.staged) {
        if (
          this.stagedBytes <= this.maxStagedBytes / 2 &&
          this.staged.size <= this.maxStagedChannels / 2
        )
          break;
        this.write(oldId, old);
      }
    }
    return this.backpressure();
  }

  private finishChannel(info: ChannelInfo): void | Promise<void> {
    this.check();
    const id = idOf(info);
    this.done.push(info);
    const entry = this.staged.get(id);
    if (entry !== undefined) this.write(id, entry);
    this.queue(id, () =>
      this.io(id, async () => {
        // A channel with no bytes still gets its (empty) file.
        if (!this.created.has(id)) await this.fileOf(id, info);
        const file = this.open.get(id);
        this.open.delete(id);
        // Finished: nothing of the channel stays but its name in `done`.
        this.created.delete(id);
        if (file !== undefined) await file.close();
      }),
    );
    return this.backpressure();
  }

  /** Hands the channel's staged bytes to a write and forgets them here. */
  private write(id: number, entry: Staged): void {
    this.staged.delete(id);
    this.stagedBytes -= entry.bytes;
    const chunks = entry.chunks;
    this.queue(id, () =>
      this.io(id, async () => {
        const file = await this.fileOf(id, entry.info);
        await file.write(...chunks);
      }),
    );
  }

  /** One file operation of channel `id`, within the limit of operations in flight. */
  private io(id: number, op: () => Promise<void>): Promise<void> {
    return this.limiter.run(async () => {
      this.busy.add(id);
      try {
        await op();
      } finally {
        this.busy.delete(id);
      }
    });
  }

  private flushAll(): void {
    for (const [id, entry] of this.staged) this.write(id, entry);
  }

  /** Chains `op` after the channel's last operation; its failure is the sink's failure. */
  private queue(id: number, op: () => Promise<void>): void {
    const previous = this.tails.get(id) ?? Promise.resolve();
    const next = previous.then(() =>
      this.failure === undefined && !this.closed ? op() : undefined,
    );
    const tracked = next.then(
      () => undefined,
      (error: unknown) => {
        this.failure ??= toError(error);
      },
    );
    this.tails.set(id, tracked);
    this.inFlight.add(tracked);
    void tracked.then(() => {
      this.inFlight.delete(tracked);
      if (this.tails.get(id) === tracked) this.tails.delete(id);
      const freed = this.slotFreed;
      this.slotFreed = undefined;
      freed?.resolve();
    });
  }

  /** The channel's open descriptor: created exclusively the first time, reopened to append. */
  private async fileOf(id: number, info: ChannelInfo): Promise<SeamFile> {
    const open = this.open.get(id);
    if (open !== undefined) {
      this.open.delete(id);
      this.open.set(id, open);
      return open;
    }
    if (this.open.size >= this.maxOpenFiles) {
      // The least recently used descriptor that no running operation holds: there is always
      // one, since fewer operations run at once than descriptors stay open.
      for (const [oldId, oldest] of this.open) {
        if (this.busy.has(oldId)) continue;
        this.open.delete(oldId);
        await oldest.close();
        break;
      }
    }
    const path = join(this.dir, `${channelKey(info)}.bin`);
    const file = await fsSeam.open(path, this.created.has(id) ? APPEND : CREATE, 0o666);
    this.created.add(id);
    this.open.set(id, file);
    return file;
  }

  /** The drain waits while too many file operations are in flight (bounded memory). */
  private backpressure(): Promise<void> | undefined {
    if (this.inFlight.size < MAX_QUEUED) return undefined;
    // One shared waiter, not a Promise.race over everything in flight per call: that would
    // attach a reaction to every pending operation each time, growing with the channel count.
    if (this.slotFreed === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.slotFreed = { promise, resolve };
    }
    return this.slotFreed.promise.then(() => this.check());
  }

  private check(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  private async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }
}
