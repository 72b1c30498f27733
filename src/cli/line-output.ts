/**
 * Lines of text for stdout, encoded into buffers as they are made (`flink records`): each line
 * is turned into UTF-8 bytes once, and a full buffer goes to the stream — no batch of text kept
 * and encoded again (the JSON Lines of an untyped read are 4/3 of the checkpoint's bytes).
 */
import { streamFailure, type Io } from './io.ts';

/** A buffer's size: big enough that a write is rare, small enough to stay out of the way. */
const SIZE = 256 * 1024;

/**
 * Buffers lines and writes them to `io.out` in 256 KiB chunks. A chunk handed to the stream is
 * never written into again (a stream may hold it unread, as a pipe's buffer or a PassThrough
 * does), and the caller waits while the stream's buffer is full, so a slow reader bounds memory.
 *
 * @example
 * ```ts
 * const out = new LineOutput(io);
 * for (const line of lines) {
 *   const full = out.add(line);
 *   if (full !== undefined) await full; // the stream's buffer is full: wait for it to drain
 * }
 * await out.flush();
 * ```
 */
export class LineOutput {
  private buf = Buffer.allocUnsafe(SIZE);
  private pos = 0;
  private failed: NodeJS.ErrnoException | undefined;

  constructor(private readonly io: Io) {}

  /**
   * What broke the stream (ENOSPC on a full disk, EPIPE once the reader left), if anything did:
   * what is written after it is lost, so the caller stops and says so.
   */
  get failure(): NodeJS.ErrnoException | undefined {
    return (this.failed ??= streamFailure(this.io.out));
  }

  /** Adds a line: a promise to await when the stream wants no more for now, else undefined. */
  add(line: string): Promise<void> | undefined {
    // A UTF-16 unit is at most 3 bytes of UTF-8.
    if (this.pos + 3 * line.length <= SIZE) {
      this.pos += this.buf.write(line, this.pos);
      return undefined;
    }
    const flushed = this.flush();
    if (3 * line.length <= SIZE) {
      this.pos += this.buf.write(line, this.pos);
      return flushed;
    }
    // A line longer than a buffer goes on its own, after what was buffered.
    return flushed === undefined
      ? this.write(Buffer.from(line))
      : flushed.then(() => this.write(Buffer.from(line)));
  }

  /** Writes what is buffered: a promise to await when the stream's buffer is full. */
  flush(): Promise<void> | undefined {
    if (this.pos === 0) return undefined;
    const chunk = this.buf.subarray(0, this.pos);
    this.buf = Buffer.allocUnsafe(SIZE);
    this.pos = 0;
    return this.write(chunk);
  }

  private write(chunk: Buffer): Promise<void> | undefined {
    const out = this.io.out as NodeJS.WritableStream & { destroyed?: boolean };
    if (out.write(chunk) || out.destroyed === true || this.failure !== undefined) return undefined;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        out.off('drain', done);
        out.off('close', done);
        out.off('error', done);
        resolve();
      };
      out.on('drain', done);
      out.on('close', done);
      out.on('error', done);
    });
  }
}
