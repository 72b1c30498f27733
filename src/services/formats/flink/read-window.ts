/**
 * The window the Flink channel-state reader (channel-state.ts) reads a delegate stream
 * through: one reused buffer, and with read-ahead a second one filling behind it.
 */
import { ioBuffers } from '../../buffer-pool.ts';
import type { CorruptCheckpointError } from '../../errors.ts';
import type { CheckpointByteSource } from '../../locations/source.ts';

/** A read of the window's next bytes, in flight into the spare buffer. */
interface Ahead {
  readonly pos: number;
  readonly buf: Buffer;
  readonly read: Promise<number>;
}

/**
 * One reused buffer over a file: a window of bytes `[at, at + fill)`. Chunks handed out are
 * slices of it, valid until the next call (the visitor contract: borrowed during the call).
 *
 * With `readAhead` (a dense local stream), a second buffer takes the bytes after the window
 * while the window's are parsed, CRC-checked and spilled, as the SPWC reader does: the read
 * on the thread pool overlaps the work on the main thread. The next load whose bytes that
 * read holds — it starts where the window ends, or inside the read (other subtasks' bytes in
 * between) — takes that buffer over; any other (a header straddling its end, a jump past it)
 * lets the read settle and reads where it needs.
 *
 * @example
 * ```ts
 * const window = new ReadWindow(file, 1024 * 1024, corrupt, true, true);
 * const version = await window.int32(0, streamEnd);
 * await window.release();
 * ```
 */
export class ReadWindow {
  private buf: Buffer;
  private spare: Buffer | undefined;
  private at = 0;
  private fill = 0;
  private ahead: Ahead | undefined;

  /**
   * The buffers come from the process's pool (buffer-pool.ts).
   * @param pooled a local file's: they go back to the pool at {@link release}; a remote
   *   read's are not given back, since a stream cut short need not have stopped writing.
   */
  constructor(
    private readonly file: CheckpointByteSource,
    capacity: number,
    private readonly corrupt: (at: number, reason: string) => CorruptCheckpointError,
    readAhead = false,
    private readonly pooled = false,
  ) {
    this.buf = ioBuffers.take(capacity);
    this.spare = readAhead ? ioBuffers.take(capacity) : undefined;
  }

  /** The end: once the read ahead settled, a pooled window's buffers go back to the pool. */
  async release(): Promise<void> {
    const ahead = this.ahead;
    this.ahead = undefined;
    if (ahead !== undefined) await ahead.read.catch(() => undefined);
    if (!this.pooled) return;
    for (const buffer of [this.buf, this.spare, ahead?.buf]) {
      if (buffer !== undefined) ioBuffers.give(buffer);
    }
    this.spare = undefined;
  }

  /**
   * The big-endian int32 at `pos` (a stream's header, an entry's length), reading up to
   * `limit` if its bytes are not here yet. A number, not a 4-byte slice: a slice per entry was
   * a fifth of a Flink fetch's garbage (a fetch of 64 MiB has ~4,000 entries).
   */
  int32(pos: number, limit: number): number | Promise<number> {
    // Synchronous when the bytes are here: no promise per entry (most entries, read ahead).
    if (pos >= this.at && pos + 4 <= this.at + this.fill)
      return this.buf.readInt32BE(pos - this.at);
    return this.load(pos, 4, limit).then(() => this.buf.readInt32BE(pos - this.at));
  }

  private slice(from: number, to: number): Buffer {
    return this.buf.subarray(from - this.at, to - this.at);
  }

  /** The bytes at `pos` that are here, up to `end`; loads from `pos` (up to `limit`) if none are. */
  available(pos: number, end: number, limit: number): Buffer | Promise<Buffer> {
    if (pos >= this.at && pos < this.at + this.fill) return this.upTo(pos, end);
    return this.load(pos, 1, limit).then(() => this.upTo(pos, end));
  }

  private upTo(pos: number, end: number): Buffer {
    return this.slice(pos, Math.min(end, this.at + this.fill));
  }

  private async load(pos: number, need: number, limit: number): Promise<void> {
    const want = Math.max(need, Math.min(this.buf.length, limit - pos));
    if (!(await this.takeAhead(pos, need))) {
      this.at = pos;
      this.fill = 0;
    }
    // From `pos` on: what the read ahead brought (all of `need` when it started before `pos`).
    let got = this.at + this.fill - pos;
    while (got < need) {
      const n = await this.file.read(this.buf, got, want - got, pos + got);
      if (n === 0) {
        throw this.corrupt(pos + got, `the file ended at byte ${pos + got} (it shrank while read)`);
      }
      got += n;
      this.fill = got;
    }
    this.readAhead(limit);
  }

  /**
   * The read in flight, settled. Its bytes become the window (true) when it read from `pos`,
   * or from before it and past `pos + need` (a shared stream's next entry of ours lies after
   * other subtasks' bytes); else it is dropped, error included. Its buffer is free again.
   */
  private async takeAhead(pos: number, need: number): Promise<boolean> {
    const ahead = this.ahead;
    if (ahead === undefined) return false;
    this.ahead = undefined;
    // From `pos` itself its error is the load's; from before it, only its bytes are wanted.
    const n = ahead.pos === pos ? await ahead.read : await ahead.read.catch(() => 0);
    if (ahead.pos !== pos && !(pos > ahead.pos && pos + need <= ahead.pos + n)) {
      this.spare = ahead.buf;
      return false;
    }
    this.spare = this.buf;
    this.buf = ahead.buf;
    this.at = ahead.pos;
    this.fill = n;
    return true;
  }

  /** Starts reading the bytes after the window (up to `limit`) into the spare buffer. */
  private readAhead(limit: number): void {
    const buf = this.spare;
    const pos = this.at + this.fill;
    if (buf === undefined || pos >= limit) return;
    this.spare = undefined;
    const read = this.file.read(buf, 0, Math.min(buf.length, limit - pos), pos);
    // Handled here so a failure while the window is parsed is no unhandled rejection; it is
    // still thrown by the load that takes it. closeAfter's close waits for the read.
    read.catch(() => undefined);
    this.ahead = { pos, buf, read };
  }
}
