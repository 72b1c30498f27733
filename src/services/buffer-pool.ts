/**
 * Large I/O buffers kept for the next recovery of the same process.
 *
 * Why: every recovery took ~8 MiB of fresh ArrayBuffers (the spill writer's two 2 MiB segment
 * buffers, the checkpoint reader's two 1 MiB chunks, the drain's window). V8 counts them as
 * external memory and starts a full mark-compact each time enough of it has come and gone: in
 * a process that runs recovery after recovery (an app restarting tasks, the bench's cancel
 * loop) that was 25 mark-compacts in 40 recoveries of 16 MiB, each pausing everything for
 * 2–23 ms on a loaded machine — the tail of cancel → task dir gone (docs/performance.md). With
 * the buffers kept it was 2–3.
 *
 * Only buffers that nobody else can still see come back: a whole ArrayBuffer (never a slice of
 * one, never Node's shared slab), given once by its one owner after the last I/O on it settled
 * and after every borrower was done with it. At most {@link MAX_POOLED_BYTES} are kept; the
 * rest go to the garbage collector as before.
 */

/** What the pool keeps at most: two recoveries' worth of buffers (`recover --all` runs two). */
export const MAX_POOLED_BYTES = 16 * 1024 * 1024;

/**
 * A bounded free list of buffers by exact size.
 *
 * @example
 * ```ts
 * const buf = ioBuffers.take(1 << 20); // a kept buffer of that size, or a fresh one
 * await file.read(buf, 0, buf.length, 0);
 * ioBuffers.give(buf); // once the read settled and nobody holds a slice any more
 * ```
 */
export class BufferPool {
  private readonly free: Buffer[] = [];
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** Bytes kept now. */
  get keptBytes(): number {
    return this.bytes;
  }

  /** A kept buffer of exactly `size` bytes (contents undefined), else a fresh one. */
  take(size: number): Buffer {
    for (let i = this.free.length - 1; i >= 0; i--) {
      const buffer = this.free[i]!;
      if (buffer.length !== size) continue;
      this.free.splice(i, 1);
      this.bytes -= size;
      return buffer;
    }
    // Its own ArrayBuffer (never a slab shared with other small buffers), so it can come back.
    return Buffer.allocUnsafeSlow(size);
  }

  /**
   * Keeps `buffer` for a later {@link take}, if it is a whole ArrayBuffer and there is room.
   * The caller gives it up: it must not touch it again, nor may anyone it lent a slice to.
   */
  give(buffer: Buffer): void {
    if (buffer.length === 0 || buffer.byteOffset !== 0) return;
    if (buffer.buffer.byteLength !== buffer.length) return;
    if (this.bytes + buffer.length > this.maxBytes) return;
    // Given twice by mistake, it would be handed to two takers at once.
    if (this.free.includes(buffer)) return;
    this.free.push(buffer);
    this.bytes += buffer.length;
  }
}

/** The process's pool of large I/O buffers. */
export const ioBuffers = new BufferPool(MAX_POOLED_BYTES);

/**
 * From this size on, a copy a consumer keeps of bytes it was lent (the file sink's staged
 * chunks) comes from a pool: `Buffer.from` of a 1 MiB delivery zero-filled and page-faulted
 * a fresh ArrayBuffer each time (one subtask's 80 MiB of a real Flink checkpoint: `recover`
 * 241 → 222 ms, `recover --all` of 320 MiB 642 → 616 ms, medians of 10, tmpfs).
 */
export const POOLED_COPY_BYTES = 64 * 1024;

/** Copies larger than this are not pooled (a rescale may deliver whole segments). */
export const MAX_POOLED_COPY_BYTES = 2 * 1024 * 1024;

/**
 * The copies' own pool, apart from {@link ioBuffers}: deliveries come in every size (a
 * segment's tail is shorter), and copies kept by exact size would fill a shared pool with sizes
 * nobody asks for again, crowding out the readers' and writers' buffers. Each copy takes a
 * power-of-two room instead (64 KiB … 2 MiB: six sizes), so a kept one fits the next delivery
 * of about the same size.
 */
export const copyBuffers = new BufferPool(8 * 1024 * 1024);

/**
 * A copy of `bytes` the caller owns: from {@link copyBuffers} for {@link POOLED_COPY_BYTES} to
 * {@link MAX_POOLED_COPY_BYTES} (a view of the first `bytes.length` of its room), else
 * `Buffer.from`. Hand it back with {@link giveCopies} once no I/O reads it any more.
 *
 * @example
 * ```ts
 * const chunk = takeCopy(lent); // the lender may reuse `lent` now
 * await file.write(chunk);
 * giveCopies([chunk]);
 * ```
 */
export function takeCopy(bytes: Buffer): Buffer {
  const n = bytes.length;
  if (n < POOLED_COPY_BYTES || n > MAX_POOLED_COPY_BYTES) return Buffer.from(bytes);
  const room = copyBuffers.take(2 ** Math.ceil(Math.log2(n)));
  bytes.copy(room);
  return n === room.length ? room : room.subarray(0, n);
}

/** Gives {@link takeCopy}'s pooled copies back, each as its whole room; the rest are left alone. */
export function giveCopies(chunks: readonly Buffer[]): void {
  for (const chunk of chunks) {
    if (chunk.length < POOLED_COPY_BYTES || chunk.length > MAX_POOLED_COPY_BYTES) continue;
    // Its own ArrayBuffer (BufferPool.take never hands out a slab): the whole room goes back.
    copyBuffers.give(chunk.length === chunk.buffer.byteLength ? chunk : Buffer.from(chunk.buffer));
  }
}
