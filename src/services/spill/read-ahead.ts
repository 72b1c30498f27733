/**
 * The I/O half of a spill reader: one open spill file at a time, the bytes of its last read,
 * and the next reads kept in flight while the caller verifies and delivers the current one.
 * Plain async I/O; every operation is fenced by the caller's `io` (G4).
 */
import { fsSeam, type FileSystem, type SeamFile } from '../fs.ts';
import { AbortedError, SpillEOFError } from '../errors.ts';
import { SEGMENT_HEADER_BYTES } from './segment-format.ts';

const EMPTY = Buffer.alloc(0);
const noop = (): void => undefined;

/**
 * Reads kept in flight behind the window. Two, not one: with a single read ahead each chunk
 * still waits for one thread-pool hand-off after the CRC of the one before, and the drain of
 * 256 MiB from a tmpfs ran at ~0.55 of a synchronous read loop; with two the pool always has
 * the next read queued (measured 0.80–0.85 for reads + CRC in the same loop).
 */
export const READS_AHEAD = 2;

/** How a window uses its read buffers (a spill reader's options, spill-reader.ts). */
export interface WindowBuffers {
  /** Reuse the read buffers instead of allocating fresh ones: only for a caller done with every
   * buffer it was given before it reads again (a drainer whose consumers all borrow). */
  readonly reuseBuffers?: boolean;
  /** With `reuseBuffers`: the most bytes asked for at once (the room a buffer keeps). */
  readonly maxPieceBytes?: number;
}

/** How a window runs its file operations: fenced by the spill state, mapped after a close. */
export interface WindowFence {
  /** Runs one file operation fenced by the state (rejects with `AbortedError` once closed). */
  io<T>(what: string, op: () => Promise<T>): Promise<T>;
  /** True once the reader or its state was closed: bytes read from then on belong to nobody. */
  readonly closed: boolean;
  /** The file seam the spill files are opened through (their state's; the product's if none). */
  readonly fs?: FileSystem | undefined;
}

/** A read running ahead of the caller. */
interface Ahead {
  /** File offset of its first byte: the end of the window when it started. */
  readonly start: number;
  /** Bytes it asked for (fewer arrive only at the end of the file). */
  readonly size: number;
  /** Its buffer: `room` bytes kept free for the carried tail of the window, then the read. */
  readonly buffer: Buffer;
  readonly room: number;
  /** Bytes read; rejects like the read. */
  readonly done: Promise<number>;
  /** Settles with it and never rejects: what a close or a discard waits for. */
  readonly settled: Promise<void>;
}

/**
 * A window on the open spill file, with read-ahead.
 *
 * After each read the next chunks of the same file are read at once into other buffers
 * ({@link READS_AHEAD} of them), so the kernel copies of chunks n+1, n+2 (on the thread pool)
 * overlap the CRC and delivery of chunk n (on the main thread). When the caller then needs
 * bytes from where the window ends — or from a segment that straddles its end — the window's
 * unread tail is copied in front of the first read-ahead's bytes (the `room` kept for it), so
 * a straddling segment is still one contiguous slice and nothing is read twice.
 *
 * With `reuseBuffers` at most READS_AHEAD + 1 buffers circulate (the window's and the
 * read-aheads') and are never freed; without it every read gets a fresh buffer, whose slices
 * the caller may keep.
 *
 * G4: the read-aheads run through the fence like every read, so a forced close of the state
 * waits for them before deleting, and their bytes are dropped if a close came while they ran.
 *
 * @example
 * ```ts
 * const window = new SpillFileWindow(files, 1 << 20, { reuseBuffers: true }, fence);
 * await window.ensureFile(0);
 * const header = await window.bytesAt(0, 16); // starts reading the next chunk behind it
 * await window.close();
 * ```
 */
export class SpillFileWindow {
  private file: SeamFile | undefined;
  private openIndex = -1;
  private size = 0;
  /** The last read's bytes, holding the file's bytes from `start`. */
  private buf: Buffer = EMPTY;
  private start = 0;
  /** With reuse: the buffer `buf` is a slice of, and the free ones. */
  private current: Buffer | undefined;
  private readonly free: Buffer[] = [];
  /** Reads in flight, in file order, each starting where the one before ends. */
  private aheads: Ahead[] = [];
  /** Room for a carried tail: the largest piece when buffers are reused, else a header's worth. */
  private readonly room: number;
  private readonly reuseBuffers: boolean;

  constructor(
    private readonly files: readonly string[],
    private readonly readChunkBytes: number,
    buffers: WindowBuffers,
    private readonly fence: WindowFence,
  ) {
    this.reuseBuffers = buffers.reuseBuffers === true;
    // A carried tail is shorter than the piece asked for (else the window held it all): with
    // reused buffers the room fits the largest piece the caller asks for (default a chunk: a
    // drain in 2 MiB reads held 12 MiB of buffers, 6 with its 32 KiB pieces) and a header;
    // without, a header (a longer piece that straddles is read again from where it starts).
    const piece = Math.max(buffers.maxPieceBytes ?? readChunkBytes, SEGMENT_HEADER_BYTES);
    this.room = this.reuseBuffers ? Math.min(readChunkBytes, piece) : SEGMENT_HEADER_BYTES;
  }

  /** Index of the open file (-1 before the first). */
  get fileIndex(): number {
    return this.file === undefined ? -1 : this.openIndex;
  }

  /** Size of the open file, as stat'ed when it was opened. */
  get fileSize(): number {
    return this.size;
  }

  /**
   * `length` bytes at `offset` of file `index` if the window already holds them, else
   * `undefined` (then call {@link bytesAt}). No I/O.
   */
  buffered(index: number, offset: number, length: number): Buffer | undefined {
    if (this.file === undefined || this.openIndex !== index) return undefined;
    const at = offset - this.start;
    if (at < 0 || this.buf.length - at < length) return undefined;
    return this.buf.subarray(at, at + length);
  }

  /** Opens file `index` (closing the previous one) if it is not the open one. Lazy. */
  async ensureFile(index: number): Promise<void> {
    if (this.openIndex === index && this.file !== undefined) return;
    const previous = this.file;
    this.file = undefined;
    this.dropWindow();
    await this.discardAhead();
    if (previous !== undefined) await previous.close();
    const path = this.files[index];
    if (path === undefined) throw new SpillEOFError(`no spill file #${index}`);
    const file = await this.fence.io(`open ${path}`, () =>
      (this.fence.fs ?? fsSeam).open(path, 'r'),
    );
    if (this.fence.closed) {
      await file.close().catch(noop);
      throw new AbortedError(`open ${path}: spill state was closed`);
    }
    this.file = file;
    this.openIndex = index;
    try {
      this.size = await this.fence.io(`stat ${path}`, () => file.size());
    } catch (e) {
      this.file = undefined;
      await file.close().catch(noop);
      throw e;
    }
    // close() may have run while the stat was in flight (it closed this file): the caller's
    // next read must see the close as an abort, not find the file gone from under it.
    if (this.fence.closed) throw new AbortedError(`stat ${path}: spill reader was closed`);
  }

  /**
   * Up to `length` bytes at `offset` of the open file, from the window when it has them, else
   * from one large read. Fewer bytes only at the end of the file.
   */
  async bytesAt(offset: number, length: number): Promise<Buffer> {
    let at = offset - this.start;
    if (at < 0 || at >= this.buf.length || this.buf.length - at < Math.min(length, 1)) {
      await this.fill(offset, length);
      at = 0;
    } else if (
      this.buf.length - at < length &&
      (this.buf.length - at < SEGMENT_HEADER_BYTES ||
        (this.reuseBuffers && this.start + this.buf.length < this.size))
    ) {
      // A header straddles the end of the window: refill from the header's start. A reused
      // buffer also refills for a straddling body, so the body is one slice: gathering it
      // would allocate a fresh buffer per straddle, the garbage reuse exists to avoid.
      await this.fill(offset, length);
      at = 0;
    }
    // A close may have come after the fill settled and before this continuation ran: the
    // window is gone then, and an empty slice would read as a truncated file.
    if (this.fence.closed) {
      throw new AbortedError(`read ${this.files[this.openIndex]}: spill reader was closed`);
    }
    const n = Math.min(length, this.buf.length - at);
    return this.buf.subarray(at, at + n);
  }

  /**
   * Closes the file; the window holds nothing after. Reads running ahead are not waited for:
   * each sees the close when it returns and drops its bytes (AbortedError, never delivered),
   * and the file handle itself defers closing the descriptor until the reads that hold it are
   * done, so no read lands in a file that reused the number. A forced close of the state still
   * waits for them before deleting (G4: every read is fenced through the state).
   */
  async close(): Promise<void> {
    const file = this.file;
    this.file = undefined;
    this.dropWindow();
    this.current = undefined;
    this.free.length = 0;
    this.aheads = [];
    if (file !== undefined) await file.close();
  }

  private dropWindow(): void {
    this.buf = EMPTY;
    this.start = 0;
  }

  /** Forgets the reads ahead once they settled; their buffers become free ones. */
  private async discardAhead(): Promise<void> {
    const aheads = this.aheads;
    if (aheads.length === 0) return;
    this.aheads = [];
    for (const ahead of aheads) {
      await ahead.settled;
      if (this.reuseBuffers && this.current !== undefined) this.free.push(ahead.buffer);
    }
  }

  /** Makes the window start at `offset` with at least `atLeast` bytes (fewer at the end). */
  private async fill(offset: number, atLeast: number): Promise<void> {
    const file = this.file;
    // close() between an await of the caller and this read took the file away (G4).
    if (file === undefined || this.fence.closed) {
      throw new AbortedError(`read ${this.files[this.openIndex]}: spill reader was closed`);
    }
    const want = Math.min(atLeast, Math.max(0, this.size - offset));
    const ahead = this.aheads[0];
    const end = this.start + this.buf.length;
    const carry = end - offset;
    if (
      ahead !== undefined &&
      ahead.start === end &&
      offset >= this.start &&
      carry <= ahead.room &&
      carry + ahead.size >= want
    ) {
      this.aheads.shift();
      // The unread tail goes in front of the read-ahead bytes: the room was kept for it, and
      // the read writes only behind the room, so the two never touch the same bytes.
      const from = ahead.room - carry;
      this.buf.copy(ahead.buffer, from, offset - this.start);
      // Forget the window before waiting: a failed read must not leave it describing bytes
      // that are about to be overwritten.
      this.dropWindow();
      const got = await ahead.done;
      if (this.fence.closed) throw new AbortedError(`read ${file.path}: spill reader was closed`);
      // The window's old buffer becomes a free one: the caller is done with its slices.
      this.show(ahead.buffer, from, ahead.room + got, offset);
    } else {
      await this.discardAhead();
      const size = Math.min(
        Math.max(this.readChunkBytes, atLeast),
        Math.max(0, this.size - offset),
      );
      const buffer = this.takeBuffer(size);
      this.dropWindow();
      const got = await this.readInto(file, buffer, 0, size, offset);
      this.show(buffer, 0, got, offset);
    }
    this.startAhead(file);
  }

  /** Makes `buffer[from, to)` the window, starting at file offset `offset`. */
  private show(buffer: Buffer, from: number, to: number, offset: number): void {
    if (this.reuseBuffers && this.current !== buffer) {
      if (this.current !== undefined) this.free.push(this.current);
      this.current = buffer;
    }
    this.buf = buffer.subarray(from, to);
    this.start = offset;
  }

  /**
   * A buffer for a direct read of `size` bytes (no read is ahead then): with reuse, the current
   * one (whose slices the caller is done with) or a free one, else a fresh one.
   */
  private takeBuffer(size: number): Buffer {
    if (!this.reuseBuffers) return Buffer.allocUnsafe(size);
    const current = this.current;
    if (current !== undefined && current.length >= size) return current;
    const i = this.free.findIndex((b) => b.length >= size);
    const b =
      i >= 0
        ? this.free.splice(i, 1)[0]!
        : Buffer.allocUnsafeSlow(Math.max(size, this.room + this.readChunkBytes));
    if (current !== undefined) this.free.push(current);
    this.current = b;
    return b;
  }

  /** Starts reading the chunks after the window, up to READS_AHEAD in flight. */
  private startAhead(file: SeamFile): void {
    while (this.aheads.length < READS_AHEAD && !this.fence.closed) {
      const last = this.aheads[this.aheads.length - 1];
      const start = last === undefined ? this.start + this.buf.length : last.start + last.size;
      const size = Math.min(this.readChunkBytes, this.size - start);
      if (size <= 0) return;
      let buffer: Buffer;
      if (!this.reuseBuffers) {
        buffer = Buffer.allocUnsafe(this.room + size);
      } else {
        const free = this.free.pop();
        buffer =
          free !== undefined && free.length >= this.room + size
            ? free
            : Buffer.allocUnsafeSlow(this.room + this.readChunkBytes);
      }
      const done = this.readInto(file, buffer, this.room, size, start);
      this.aheads.push({
        start,
        size,
        buffer,
        room: this.room,
        done,
        settled: done.then(noop, noop),
      });
    }
  }

  /** Reads `size` bytes at `position` into `buffer[at…]`; fewer only at the end of the file. */
  private async readInto(
    file: SeamFile,
    buffer: Buffer,
    at: number,
    size: number,
    position: number,
  ): Promise<number> {
    let got = 0;
    while (got < size) {
      const n = await this.fence.io(`read ${file.path}`, () =>
        file.read(buffer, at + got, size - got, position + got),
      );
      // Bytes that arrive after close() belong to nobody: a drainer stopped by closing its
      // reader must not deliver them.
      if (this.fence.closed) throw new AbortedError(`read ${file.path}: spill reader was closed`);
      if (n === 0) break;
      got += n;
    }
    return got;
  }
}
