/**
 * The spilling handler: turns a stream of (channel, bytes) into CRC-checked segments in
 * rotating `spill-segment-<N>.bin` files inside one exclusive task dir, then seals them into a
 * {@link FetchedChannelState}.
 *
 * The abort flag, the write behind the reading, file rotation and the discard share the writer's
 * state, and G3 (no write after the abort decision) is only checkable where every path that
 * grows a file is in view: they stay here. The segments in memory (no I/O) are segment-buffer.ts.
 */
import { join } from 'node:path';
import { fsSeam, type FileSystem, type SeamFile } from '../fs.ts';
import { AbortedError, ErrorCollector, addSuppressed } from '../errors.ts';
import { channelId, type ChannelInfo } from '../channel.ts';
import { FetchedChannelState } from './fetched-state.ts';
import { DEFAULT_MAX_SEGMENT_BYTES, DEFAULT_MAX_SPILL_FILE_BYTES } from './limits.ts';
import { SEGMENT_HEADER_BYTES, spillFileName } from './segment-format.ts';
import { SegmentBuffer } from './segment-buffer.ts';

export interface SpillWriterOptions {
  /** The task's own dir; created lazily (mode 0700, exclusively) before the first file. */
  taskDir: string;
  /** A segment (header + body) never exceeds this; default 1 MiB. */
  maxSegmentBytes?: number;
  /** Rotate to a new file before a segment once the current one holds this much; default 64 MiB. */
  maxSpillFileBytes?: number;
  /**
   * Called once, synchronously, right before the task dir is created: the moment the writer
   * starts to own something on disk. The owner registers `discardSpilledFiles` here (G2: hand
   * over at acquisition), so even a writer that is abandoned mid-write is cleaned up.
   */
  onFirstAcquire?: (writer: SpillWriter) => void;
  /**
   * Called synchronously when a write running behind `append()` fails, before that failure
   * surfaces at the next `append()`/`close()`: the owner can record the cause the moment it
   * happens, so an abort arriving in between cannot take its place (G5).
   */
  onWriteFailure?: (error: unknown) => void;
  /** The file seam the task dir and its files go through (a recovery's own); the product's. */
  fs?: FileSystem;
}

/**
 * Spills recovered channel bytes to disk.
 *
 * Semantics follow Flink's `AbstractSpillingHandler` (docs §2.2–2.4) with a hard segment bound,
 * a CRC per segment, and an abort flag (G3): it is checked before every file creation and every
 * segment write, and a creation or write that loses the race deletes what it made itself.
 *
 * Writes are coalesced: sealed segments smaller than `maxSegmentBytes` wait in memory until
 * at least that many bytes are pending (or the file rotates, or the writer closes) and then go
 * out as one write. A checkpoint whose entries hop between channels seals a small segment per
 * entry; one write each would cost a syscall per ~100 KiB. A full-size segment is written as
 * soon as it is sealed, and the files' contents and rotation points are the same either way.
 *
 * Writes run behind: `append()` issues a write and returns while it is in flight, so the
 * caller reads and copies the next bytes meanwhile. At most one write is in flight; the next
 * write, a file close, a rotation and `close()` wait for it first. Two buffers alternate, so
 * the bytes of the write in flight are never touched. A failed write is reported to
 * `onWriteFailure` at once and rethrown by every later `append()`/`close()`.
 *
 * @example
 * ```ts
 * const writer = new SpillWriter({ taskDir: root.taskDirPath('t1') });
 * await writer.append({ gate: 0, channel: 1 }, bytes);
 * const state = await writer.close(); // FetchedChannelState holding the hand-off grant
 * ```
 */
export class SpillWriter {
  readonly taskDir: string;
  /** A segment (header + body) never exceeds this. */
  readonly maxSegmentBytes: number;
  private readonly maxSpillFileBytes: number;
  private readonly onFirstAcquire: ((writer: SpillWriter) => void) | undefined;
  private readonly onWriteFailure: ((error: unknown) => void) | undefined;
  private readonly fs: FileSystem;

  private aborted = false;
  private acquired = false;
  private dirCreated = false;
  private closed = false;
  private readonly files: string[] = [];
  private readonly channels: ChannelInfo[] = [];
  /**
   * Every channel noted so far, by {@link channelId}, with the ordinal (1-based) of its last
   * sealed segment, 0 while it has none: the drain counts a channel as delivered once it has
   * passed that segment, so progress can show channels done live (`onFinished` itself waits for
   * the whole drain, docs/flink.md §5 rule 3).
   */
  private readonly lastSegment = new Map<number, number>();
  /** Segments sealed so far (the drain reads them in this order). */
  private segmentsSealed = 0;
  private file: SeamFile | undefined;
  /** Bytes given to the current file: written, or sealed and pending in the buffer. */
  private fileBytes = 0;
  /** The open segment and the sealed ones waiting to be written, in memory. */
  private readonly segments: SegmentBuffer;
  /** The write running behind append(), if any; it never rejects (see `failure`). */
  private writing: Promise<void> | undefined;
  /** The first failure of a write behind append(); every later call rethrows it. */
  private failure: { error: unknown } | undefined;
  /** The one in-flight disk operation, so a discard can wait for it (G4 for the writer side). */
  private inflight: Promise<unknown> = Promise.resolve();
  private discarding: Promise<void> | undefined;

  /** Bytes written to spill files so far (headers included). */
  spilledBytes = 0;

  constructor(options: SpillWriterOptions) {
    this.taskDir = options.taskDir;
    this.maxSegmentBytes = options.maxSegmentBytes ?? DEFAULT_MAX_SEGMENT_BYTES;
    this.maxSpillFileBytes = options.maxSpillFileBytes ?? DEFAULT_MAX_SPILL_FILE_BYTES;
    if (this.maxSegmentBytes <= SEGMENT_HEADER_BYTES) {
      throw new RangeError(`maxSegmentBytes must exceed ${SEGMENT_HEADER_BYTES}`);
    }
    if (this.maxSpillFileBytes < 1) throw new RangeError('maxSpillFileBytes must be ≥ 1');
    this.onFirstAcquire = options.onFirstAcquire;
    this.onWriteFailure = options.onWriteFailure;
    this.fs = options.fs ?? fsSeam;
    this.segments = new SegmentBuffer(this.maxSegmentBytes);
  }

  /** How many spill files were created so far. */
  get fileCount(): number {
    return this.files.length;
  }

  /** The spill files created so far, in order (a copy). */
  get spillFiles(): readonly string[] {
    return [...this.files];
  }

  get isAborted(): boolean {
    return this.aborted;
  }

  /**
   * The first failure of a write that ran behind `append()` (an I/O error, or the
   * `AbortedError` of a write that lost the race with abort), once that write has settled;
   * `undefined` if none failed. After an abort nobody may call `append()` again to learn it:
   * read it here once `discardSpilledFiles()` (which waits for the write) has resolved.
   */
  get writeFailure(): unknown {
    return this.failure?.error;
  }

  /**
   * Declares a channel without bytes: a channel whose checkpoint entries are all empty still
   * exists and must still be finished by the drainer.
   */
  noteChannel(info: ChannelInfo): void {
    const id = channelId(info);
    if (this.lastSegment.has(id)) return;
    this.lastSegment.set(id, 0);
    this.channels.push(Object.freeze({ gate: info.gate, channel: info.channel }));
  }

  /**
   * Appends bytes of one channel. Copies them (the caller may reuse `bytes` after the promise
   * settles). Empty appends only note the channel.
   *
   * @param crc the CRC-32 of `bytes`, when the caller computed it anyway (the checkpoint reader
   *   does): the segment CRCs are then derived from it instead of hashing the bytes a second
   *   time. A wrong value yields segments that fail their CRC when drained (SpillCorruptError),
   *   never wrong bytes delivered.
   */
  append(info: ChannelInfo, bytes: Buffer, crc?: number): void | Promise<void> {
    try {
      this.checkOpen();
    } catch (error) {
      return Promise.reject(error);
    }
    this.noteChannel(info);
    return this.appendFrom(info, bytes, 0, crc);
  }

  /**
   * Appends `bytes[offset…]` (whose CRC is `restCrc`, while known) synchronously for as long
   * as no I/O is due, and only then goes async: at hundreds of thousands of small entries a
   * promise per append is most of the fetch stage's garbage (G8).
   */
  private appendFrom(
    info: ChannelInfo,
    bytes: Buffer,
    offset: number,
    restCrc: number | undefined,
  ): void | Promise<void> {
    const segments = this.segments;
    while (offset < bytes.length) {
      if (
        segments.length > 0 &&
        (info.gate !== segments.gate ||
          info.channel !== segments.channel ||
          segments.length >= this.maxSegmentBytes)
      ) {
        const due = this.sealSegment();
        if (due) return this.resumeAfter(this.flush(), info, bytes, offset, restCrc);
      }
      if (segments.length === 0) {
        if (this.fileBytes >= this.maxSpillFileBytes) {
          return this.resumeAfter(this.rotate(), info, bytes, offset, restCrc);
        }
        segments.open(info);
      }
      const n = Math.min(bytes.length - offset, this.maxSegmentBytes - segments.length);
      restCrc = segments.add(bytes, offset, n, restCrc);
      offset += n;
    }
    return undefined;
  }

  private async resumeAfter(
    io: Promise<void>,
    info: ChannelInfo,
    bytes: Buffer,
    offset: number,
    restCrc: number | undefined,
  ): Promise<void> {
    await io;
    await this.appendFrom(info, bytes, offset, restCrc);
  }

  /**
   * Starts a new segment unless the open one (of `info`) still has room for `bytes` more, so
   * the next `bytes` appended to `info` land in one segment if they fit in one at all. The
   * filtering handler keeps each record inside one segment this way: drained a segment per
   * buffer, a checkpoint then always cuts between records.
   */
  keepTogether(info: ChannelInfo, bytes: number): void | Promise<void> {
    if (
      this.segments.length > SEGMENT_HEADER_BYTES &&
      info.gate === this.segments.gate &&
      info.channel === this.segments.channel &&
      this.segments.length + bytes > this.maxSegmentBytes
    ) {
      // Sealing may fill the pending buffer: then it is written before more is staged.
      if (this.sealSegment()) return this.flush();
    } // else no promise (as `append`): none per kept run of a filtering spill
  }

  /**
   * Seals the last segment, flushes and closes the last file, and builds the fetched state
   * holding the hand-off grant. On failure nothing is built: the caller (the fetch stage)
   * must call {@link discardSpilledFiles} (row F3).
   */
  async close(): Promise<FetchedChannelState> {
    this.checkOpen();
    this.closed = true;
    if (this.segments.length > 0) this.sealSegment();
    await this.flush();
    await this.closeFile(); // waited for the last write: the pool may have the buffers
    this.segments.release();
    this.checkAbort('seal the fetched state');
    const state = new FetchedChannelState(
      this.files,
      this.dirCreated ? this.taskDir : undefined,
      this.channels,
      // Sorted, one number per channel (G8: 1 MiB at 262,144 channels, the map is freed).
      Uint32Array.from(this.lastSegment.values()).sort(),
      this.fs,
    );
    state.acquire(); // the hand-off grant (docs/flink.md §3.2)
    this.lastSegment.clear(); // only needed while channels can still be noted
    return state;
  }

  /**
   * Sets the abort flag: from now on no file is created or grown. Does not delete: see
   * {@link discardSpilledFiles}.
   */
  abort(): void {
    this.aborted = true;
  }

  /**
   * Aborts, waits for the disk operation in flight, then deletes the whole task dir if this
   * writer created it (never a pre-existing one). Works in every state of the writer, including
   * after a failed `close()` that never built a state (row F3). Idempotent once it succeeded;
   * after a failed delete the next call retries it.
   */
  discardSpilledFiles(): Promise<void> {
    this.aborted = true;
    const shared = this.discarding;
    // A caller arriving while another discard runs joins it, and if that attempt fails makes
    // one attempt of its own: the registry backstop must not inherit the stage's failed delete.
    return shared === undefined ? this.startDiscard() : shared.catch(() => this.startDiscard());
  }

  private startDiscard(): Promise<void> {
    this.discarding ??= (async () => {
      await this.inflight.catch(() => undefined);
      await this.writing; // settled, so no write reads the buffers the pool gets back
      this.segments.release();
      await this.file?.close().catch(() => undefined);
      // Only a dir this writer created: mkdir is exclusive, so after EEXIST (or before any
      // mkdir) the path belongs to someone else, and deleting it would destroy their files.
      if (this.dirCreated) await this.fs.rm(this.taskDir);
    })().catch((e: unknown) => {
      // A failed delete must not be final (row C1): forget it, so the next call (the registry
      // backstop, say) tries again instead of replaying this rejection while the dir leaks.
      this.discarding = undefined;
      throw e;
    });
    return this.discarding;
  }

  private checkOpen(): void {
    if (this.closed) throw new AbortedError('spill writer is already closed');
    if (this.failure !== undefined) throw this.failure.error;
    this.checkAbort('append');
  }

  private checkAbort(what: string): void {
    if (this.aborted) throw new AbortedError(`spill writer aborted: refusing to ${what}`);
  }

  private run<T>(op: () => Promise<T>): Promise<T> {
    const p = op();
    this.inflight = p;
    return p;
  }

  /**
   * The current file is full once it holds maxSpillFileBytes: its pending bytes go out and it
   * is closed, so the next segment starts the next file (created by the next write: never an
   * empty file).
   */
  private async rotate(): Promise<void> {
    await this.flush();
    await this.closeFile();
    this.fileBytes = 0;
  }

  /**
   * Seals the open segment and counts it for its channel. Returns true when a segment's worth
   * is pending: then the caller must {@link flush} before the next segment opens.
   */
  private sealSegment(): boolean {
    const sealed = this.segments.seal();
    if (sealed === undefined) return false;
    this.segmentsSealed++;
    this.lastSegment.set(channelId(sealed), this.segmentsSealed);
    this.fileBytes += sealed.length;
    return this.segments.pending >= this.maxSegmentBytes;
  }

  /**
   * Issues the pending segments to the current file (created now if need be) as one write and
   * returns while it is in flight, after waiting for the previous one.
   */
  private async flush(): Promise<void> {
    const length = this.segments.pending;
    if (length === 0) return;
    await this.settle();
    if (this.file === undefined) await this.openNextFile();

    this.checkAbort('write a segment');
    const file = this.file!;
    // settle() above waited for the last write, so the other buffer is free to fill.
    const writing = this.writeBehind(file, this.segments.take(length)).catch((error: unknown) => {
      if (this.failure !== undefined) return;
      this.failure = { error };
      this.onWriteFailure?.(error);
    });
    this.writing = writing;
    this.inflight = writing;
  }

  /** One write and what must follow it at once: an abort that came meanwhile deletes the file. */
  private async writeBehind(file: SeamFile, bytes: Buffer): Promise<void> {
    try {
      await file.write(bytes);
    } catch (e) {
      throw this.aborted
        ? new AbortedError('spill write lost the race with abort', { cause: e })
        : e;
    }
    this.spilledBytes += bytes.length;
    if (this.aborted) {
      // The write raced an abort and landed: delete our own file rather than leave it (G3).
      // A discard already waiting for this write removes the whole dir next; deleting the file
      // first would only put one more delete between the cancel and the dir being gone.
      if (this.discarding === undefined) await this.deleteOwn(file.path);
      throw new AbortedError('spill writer aborted during a segment write');
    }
  }

  /** Waits for the write in flight, if any; rethrows the first failure of any write. */
  private async settle(): Promise<void> {
    const writing = this.writing;
    if (writing !== undefined) {
      await writing;
      if (this.writing === writing) this.writing = undefined;
    }
    if (this.failure !== undefined) throw this.failure.error;
  }

  private async openNextFile(): Promise<void> {
    this.checkAbort('create a spill file');
    if (!this.dirCreated) {
      if (!this.acquired) {
        this.acquired = true;
        this.onFirstAcquire?.(this);
      }
      this.checkAbort('create the task dir');
      await this.run(async () => {
        await this.fs.mkdir(this.taskDir, { mode: 0o700 });
        // Set inside the tracked operation, so a discard awaiting it already sees the dir as ours.
        this.dirCreated = true;
      });
      if (this.aborted) {
        await this.deleteOwn(this.taskDir);
        throw new AbortedError('spill writer aborted while creating the task dir');
      }
    }
    const path = join(this.taskDir, spillFileName(this.files.length));
    this.checkAbort('create a spill file');
    const file = await this.run(() => this.fs.open(path, 'wx'));
    this.files.push(path);
    this.file = file;
    if (this.aborted) {
      await this.deleteOwn(path);
      throw new AbortedError('spill writer aborted while creating a spill file');
    }
  }

  private async closeFile(): Promise<void> {
    // Never close under a write in flight; a failed write wins over the close.
    await this.settle();
    const file = this.file;
    if (file === undefined) return;
    this.file = undefined;
    await this.run(() => file.close());
  }

  /** Deletes something this writer created after the abort decision; errors are secondary. */
  private async deleteOwn(path: string): Promise<void> {
    const errors = new ErrorCollector();
    if (this.file !== undefined) {
      const file = this.file;
      this.file = undefined;
      await file.close().catch((e) => errors.add(e));
    }
    await this.fs.rm(path).catch((e) => errors.add(e));
    if (errors.error !== undefined) {
      const aborted = new AbortedError('spill writer aborted; deleting its own file failed');
      addSuppressed(aborted, errors.error);
      throw aborted;
    }
  }
}
