/**
 * The checkpoint writer: SPWC v1 and v2 files entry by entry, with coalesced, double-buffered writes.
 */
import { crc32 } from '../../crc32.ts';
import { MisuseError, addSuppressed } from '../../errors.ts';
import { fsSeam, type SeamFile } from '../../fs.ts';
import {
  CHECKPOINT_HEADER_BYTES,
  CHECKPOINT_MAGIC,
  CHECKPOINT_VERSION,
  CHECKPOINT_VERSION_V2,
  MAX_CHANNEL,
  MAX_ENTRY_LENGTH,
  MAX_GATE,
  MAX_SUBTASK,
  entryHeaderBytes,
  type CheckpointVersion,
} from './format.ts';

const WRITE_BUFFER_BYTES = 1024 * 1024;

/**
 * Writes a checkpoint file entry by entry. Small entries are coalesced into 1 MiB buffers so a
 * file of many small entries costs few write calls; large payloads go out directly without an
 * extra copy. Two buffers alternate so the next megabyte is filled while the previous one is
 * being written (at most one write in flight, so file order is kept). A failed background write
 * surfaces at the next `append` or at `close`, and every later call repeats it.
 *
 * Calls must not overlap (await each one); overlapping use is a `MisuseError` because the
 * buffers are shared.
 *
 * @example
 * ```ts
 * const writer = await CheckpointWriter.create('job.spwc');
 * try {
 *   await writer.append(0, 1, Buffer.from('AB'));
 *   await writer.close();
 * } catch (e) {
 *   await writer.discard();
 *   throw e;
 * }
 * ```
 */
export class CheckpointWriter {
  private buffer = Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
  private spare = Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
  private fill = 0;
  private written = 0;
  private inFlight: Promise<unknown> | undefined;
  private failure: { error: unknown } | undefined;
  private busy = false;
  private closed = false;
  private closing: Promise<void> | undefined;

  private readonly entryHeader: number;

  private constructor(
    /** The path the checkpoint is written to. */
    readonly path: string,
    private readonly file: SeamFile,
    /** The file's format version: v2 entries carry the subtask that wrote them. */
    readonly version: CheckpointVersion,
  ) {
    this.entryHeader = entryHeaderBytes(version);
    // The header is buffered, not written: a writer that fails before its first flush makes
    // no write call at all.
    CHECKPOINT_MAGIC.copy(this.buffer, 0);
    this.buffer.writeUInt32BE(version, 4);
    this.fill = CHECKPOINT_HEADER_BYTES;
    this.written = CHECKPOINT_HEADER_BYTES;
  }

  /**
   * Creates `path` exclusively (`'wx'`: an existing file is an `EEXIST` error, never
   * overwritten) and returns a writer for it; `version` 2 writes the rescalable format.
   *
   * @example
   * ```ts
   * const writer = await CheckpointWriter.create(join(dir, 'job.spwc'));
   * ```
   */
  static async create(
    path: string,
    options: { version?: CheckpointVersion } = {},
  ): Promise<CheckpointWriter> {
    const version = options.version ?? CHECKPOINT_VERSION;
    if (version !== CHECKPOINT_VERSION && version !== CHECKPOINT_VERSION_V2) {
      throw new RangeError(`version must be 1 or 2, got ${String(version)}`);
    }
    return new CheckpointWriter(path, await fsSeam.open(path, 'wx'), version);
  }

  /**
   * Logical size of the file so far: header plus every appended entry, buffered bytes
   * included. After a successful `close()` it is the file's size.
   *
   * @example
   * ```ts
   * await writer.append(0, 0, Buffer.from('xyz'));
   * writer.bytesWritten; // 8 + 16 + 3
   * ```
   */
  get bytesWritten(): number {
    return this.written;
  }

  /**
   * Appends one entry. Throws `RangeError` for a gate or channel outside `0..65535` or a
   * payload over `MAX_ENTRY_LENGTH`, `MisuseError` after close or on overlapping calls. The
   * payload is copied or written before this resolves, so the caller may reuse it. `subtask`
   * (the old subtask that wrote the entry) is written in a v2 file; a v1 file takes only 0.
   *
   * @example
   * ```ts
   * await writer.append(7, 3, Buffer.alloc(0)); // zero-length entries are valid
   * await v2writer.append(0, 1, records, 5); // written by old subtask 5
   * ```
   */
  async append(gate: number, channel: number, payload: Buffer, subtask = 0): Promise<void> {
    // v1 has no subtask field: anything but 0 would be silently lost.
    const maxSubtask = this.version === CHECKPOINT_VERSION_V2 ? MAX_SUBTASK : 0;
    if (!Number.isInteger(subtask) || subtask < 0 || subtask > maxSubtask) {
      throw new RangeError(
        `subtask must be an integer in 0..${maxSubtask} in a v${this.version} file, got ${subtask}`,
      );
    }
    if (!Number.isInteger(gate) || gate < 0 || gate > MAX_GATE) {
      throw new RangeError(`gate must be an integer in 0..${MAX_GATE}, got ${gate}`);
    }
    if (!Number.isInteger(channel) || channel < 0 || channel > MAX_CHANNEL) {
      throw new RangeError(`channel must be an integer in 0..${MAX_CHANNEL}, got ${channel}`);
    }
    if (payload.length > MAX_ENTRY_LENGTH) {
      throw new RangeError(
        `payload of ${payload.length} bytes exceeds MAX_ENTRY_LENGTH ${MAX_ENTRY_LENGTH}`,
      );
    }
    this.enter('append');
    try {
      if (this.failure !== undefined) throw this.failure.error;
      if (this.fill + this.entryHeader > this.buffer.length) await this.flush();
      let h = this.fill;
      if (this.version === CHECKPOINT_VERSION_V2) {
        this.buffer.writeInt32BE(subtask, h);
        h += 4;
      }
      this.buffer.writeInt32BE(gate, h);
      this.buffer.writeInt32BE(channel, h + 4);
      this.buffer.writeInt32BE(payload.length, h + 8);
      this.buffer.writeUInt32BE(crc32(payload), h + 12);
      this.fill += this.entryHeader;
      if (payload.length <= this.buffer.length - this.fill) {
        payload.copy(this.buffer, this.fill);
        this.fill += payload.length;
      } else if (payload.length >= this.buffer.length / 2) {
        // Big payload: one vectored write of what is buffered plus the payload, no copy. It is
        // awaited because the payload is the caller's.
        await this.settle();
        await this.track(this.file.write(this.buffer.subarray(0, this.fill), payload));
        this.fill = 0;
      } else {
        await this.flush();
        payload.copy(this.buffer, 0);
        this.fill = payload.length;
      }
      this.written += this.entryHeader + payload.length;
    } finally {
      this.busy = false;
    }
  }

  /**
   * Flushes buffered bytes and closes the file. Idempotent: later calls return the first
   * call's outcome. The file is closed even if a write fails (the write error wins).
   *
   * @example
   * ```ts
   * await writer.close();
   * await writer.close(); // no-op
   * ```
   */
  close(): Promise<void> {
    if (this.closing === undefined) {
      try {
        this.enter('close');
      } catch (e) {
        // A promise-returning API never throws synchronously.
        return Promise.reject(e);
      }
      this.closed = true;
      this.closing = this.finish(true).finally(() => {
        this.busy = false;
      });
    }
    return this.closing;
  }

  /**
   * Closes without flushing and deletes the file: the cleanup path after any failure. Safe
   * after `close()` or a failed `append`; the first error wins, later ones are suppressed.
   *
   * @example
   * ```ts
   * await writer.discard(); // the file no longer exists
   * ```
   */
  async discard(): Promise<void> {
    let first: unknown;
    if (this.closing === undefined) {
      this.closed = true;
      this.fill = 0;
      this.closing = this.finish(false);
    }
    try {
      await this.closing;
    } catch (e) {
      // A failed close still released the descriptor; the file must go regardless.
      first = e;
    }
    try {
      await fsSeam.rm(this.path);
    } catch (e) {
      if (first === undefined) first = e;
      else if (first instanceof Error) addSuppressed(first, e);
    }
    if (first !== undefined) throw first;
  }

  private enter(what: string): void {
    if (this.closed) throw new MisuseError(`${this.path}: ${what} after the writer was closed`);
    if (this.busy) {
      throw new MisuseError(`${this.path}: ${what} while another call is still running`);
    }
    this.busy = true;
  }

  /** Records a write's failure so every later call sees it (bytes after a gap are useless). */
  private track(write: Promise<unknown>): Promise<unknown> {
    return write.catch((error: unknown) => {
      this.failure ??= { error };
      throw error;
    });
  }

  /** Waits for the write in flight; rethrows the writer's failure, if any. */
  private async settle(): Promise<void> {
    const pending = this.inFlight;
    this.inFlight = undefined;
    if (pending !== undefined) await pending.catch(() => undefined);
    if (this.failure !== undefined) throw this.failure.error;
  }

  /** Starts writing the full buffer in the background and switches to the spare one. */
  private async flush(): Promise<void> {
    await this.settle();
    if (this.fill === 0) return;
    const write = this.track(this.file.write(this.buffer.subarray(0, this.fill)));
    // Handled by settle(); without this a failure would be an unhandled rejection meanwhile.
    write.catch(() => undefined);
    this.inFlight = write;
    [this.buffer, this.spare] = [this.spare, this.buffer];
    this.fill = 0;
  }

  private async finish(flush: boolean): Promise<void> {
    let first: unknown;
    try {
      if (flush) {
        await this.flush();
        await this.settle();
      } else {
        // The descriptor must not close under a write still in flight.
        await this.inFlight?.catch(() => undefined);
        this.inFlight = undefined;
      }
    } catch (e) {
      first = e;
    }
    try {
      await this.file.close();
    } catch (e) {
      if (first === undefined) first = e;
      else if (first instanceof Error) addSuppressed(first, e);
    }
    if (first !== undefined) throw first;
  }
}
