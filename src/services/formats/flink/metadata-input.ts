/**
 * A bounded, position-tracking `java.io.DataInputStream` over a `_metadata` file, for the Flink
 * metadata parser. Bounded in three ways, whatever the file declares:
 * - memory: one window buffer (at most {@link MAX_WINDOW} bytes), refilled from the source;
 *   skipped bytes are never read, the position just moves past them;
 * - reads: every read first checks that the bytes exist (the file's size is known up front), so
 *   a truncation or a declared length larger than what remains fails before anything is read,
 *   as a {@link CorruptCheckpointError} naming the file and the field's offset;
 * - counts: {@link MetadataInput.checkCount} refuses a count whose smallest possible encoding
 *   does not fit in what remains, so a declared 2^31−1 handles fails at once.
 */
import { AbortedError, CorruptCheckpointError } from '../../errors.ts';
import type { CheckpointByteSource } from '../../locations/source.ts';

/** The largest window: a `writeUTF` string (up to 65,535 bytes) always fits in one. */
const MAX_WINDOW = 256 * 1024;
const MIN_WINDOW = 64 * 1024 + 16;

/**
 * Reads big-endian primitives and modified-UTF-8 strings from a checkpoint byte source.
 *
 * @example
 * ```ts
 * const input = new MetadataInput(source, bytes, 'chk-1/_metadata');
 * const magic = await input.int32('magic number');
 * ```
 */
export class MetadataInput {
  /** The offset of the next byte to read. */
  position = 0;
  private readonly window: Buffer;
  private windowStart = 0;
  private windowLength = 0;

  /**
   * @param source where the bytes are (the caller closes it).
   * @param size the file's size in bytes: nothing past it is ever read.
   * @param file the file's name as errors print it (already redacted).
   */
  constructor(
    private readonly source: CheckpointByteSource,
    readonly size: number,
    readonly file: string,
    private readonly signal?: AbortSignal,
    windowBytes = MAX_WINDOW,
  ) {
    // A file smaller than the window is read whole into a buffer of its own size.
    const window = Math.max(MIN_WINDOW, Math.min(windowBytes, MAX_WINDOW));
    this.window = Buffer.allocUnsafe(Math.max(1, Math.min(size, window)));
  }

  /** Bytes left between the position and the end of the file. */
  get remaining(): number {
    return this.size - this.position;
  }

  /** A {@link CorruptCheckpointError} for this file at `offset`. */
  corrupt(offset: number, reason: string): CorruptCheckpointError {
    return new CorruptCheckpointError(this.file, offset, reason);
  }

  /** Throws a truncation error unless `n` bytes remain at the position. */
  require(n: number, what: string): void {
    if (n > this.remaining) {
      throw this.corrupt(
        this.position,
        `truncated ${what}: needs ${n} byte(s), ${this.remaining} remain in the file`,
      );
    }
  }

  /**
   * Refuses `count` (read at `at`) when negative, or when `count` items of at least `minBytes`
   * each cannot fit in what remains: memory and time stay bounded by the file, not the count.
   */
  checkCount(count: number, minBytes: number, what: string, at: number): void {
    if (count < 0) throw this.corrupt(at, `negative ${what} count ${count}`);
    if (count * minBytes > this.remaining) {
      throw this.corrupt(
        at,
        `${what} count ${count} cannot fit: at least ${count * minBytes} byte(s) needed, ` +
          `${this.remaining} remain in the file`,
      );
    }
  }

  /** Moves past `n` bytes without reading them (checked against what remains). */
  skip(n: number, what: string): void {
    if (n < 0) throw this.corrupt(this.position, `negative length ${n} for ${what}`);
    this.require(n, what);
    this.position += n;
  }

  /** Moves the position to `offset` (within the file). */
  seek(offset: number): void {
    if (offset < 0 || offset > this.size) {
      throw this.corrupt(this.position, `seek to ${offset} outside the file`);
    }
    this.position = offset;
  }

  /**
   * Where `n` bytes at the position start in the window (the position moves past them), or -1
   * when the window must be refilled first. Refuses a read past the end of the file.
   */
  private at(n: number, what: string): number {
    this.require(n, what);
    const p = this.position;
    if (p >= this.windowStart && p + n <= this.windowStart + this.windowLength) {
      this.position += n;
      return p - this.windowStart;
    }
    return -1;
  }

  /** Refills the window from the position, then takes `n` bytes (at window index 0). */
  private async refill(n: number): Promise<number> {
    if (this.signal?.aborted === true) {
      throw this.signal.reason ?? new AbortedError(`${this.file}: metadata read aborted`);
    }
    const p = this.position;
    const want = Math.min(this.window.length, this.size - p);
    let got = 0;
    while (got < want) {
      const r = await this.source.read(this.window, got, want - got, p + got);
      if (r === 0) {
        // The file shrank under us: still the file's fault, and still one line.
        throw this.corrupt(p + got, `the file ended early (its size was ${this.size})`);
      }
      got += r;
    }
    this.windowStart = p;
    this.windowLength = got;
    this.position += n;
    return 0;
  }

  /*
   * The readers return the value itself when its bytes are already in the window and a promise
   * only when the window must be refilled: callers `await` either way, but a _metadata of 100,000
   * channel handles is a million fields, and an async function per field (two promises each)
   * was most of the parse time and garbage.
   */

  /** `read(i)` of the `n` bytes at the position, now or after a refill. */
  private take<T>(n: number, what: string, read: (i: number) => T): T | Promise<T> {
    const i = this.at(n, what);
    return i >= 0 ? read(i) : this.refill(n).then(read);
  }

  uint8(what: string): number | Promise<number> {
    return this.take(1, what, (i) => this.window[i]!);
  }

  int8(what: string): number | Promise<number> {
    return this.take(1, what, (i) => this.window.readInt8(i));
  }

  /** `readBoolean`: any non-zero byte is true. */
  bool(what: string): boolean | Promise<boolean> {
    return this.take(1, what, (i) => this.window[i] !== 0);
  }

  uint16(what: string): number | Promise<number> {
    return this.take(2, what, (i) => this.window.readUInt16BE(i));
  }

  int32(what: string): number | Promise<number> {
    return this.take(4, what, (i) => this.window.readInt32BE(i));
  }

  /** An int32 that must not be negative (a count, a length, an index). */
  nonNegativeInt32(what: string): number | Promise<number> {
    const at = this.position;
    return this.take(4, what, (i) => {
      const v = this.window.readInt32BE(i);
      if (v < 0) throw this.corrupt(at, `negative ${what} ${v}`);
      return v;
    });
  }

  /** The int64 at window index `i` as a safe integer, or corrupt at `at`. */
  private safeInt64(i: number, at: number, what: string): number {
    // Two int32 halves: exact, and no BigInt per field.
    const hi = this.window.readInt32BE(i);
    const lo = this.window.readUInt32BE(i + 4);
    if (hi > 0x1fffff || hi < -0x200000 || (hi === -0x200000 && lo === 0)) {
      const v = this.window.readBigInt64BE(i);
      throw this.corrupt(at, `${what} ${v} is not a safe integer (|v| must be < 2^53)`);
    }
    return hi * 0x100000000 + lo;
  }

  /** An int64 that must be a safe integer (JavaScript numbers are exact up to 2^53). */
  int64(what: string): number | Promise<number> {
    const at = this.position;
    return this.take(8, what, (i) => this.safeInt64(i, at, what));
  }

  /** An int64's 8 bytes as 16 lowercase hex digits (ids: any bit pattern is valid). */
  int64Bits(what: string): string | Promise<string> {
    return this.take(8, what, (i) => this.window.toString('hex', i, i + 8));
  }

  /** An int64 that must be a safe integer and not negative (an offset, a size). */
  nonNegativeInt64(what: string): number | Promise<number> {
    const at = this.position;
    return this.take(8, what, (i) => {
      const v = this.safeInt64(i, at, what);
      if (v < 0) throw this.corrupt(at, `negative ${what} ${v}`);
      return v;
    });
  }

  /**
   * `count` int64s that must be safe integers and not negative (a handle's entry offsets), as
   * {@link nonNegativeInt64} reads each, same errors at the same bytes. The values whose bytes
   * the window holds are read in one loop: a handle lists an offset per network buffer, and a
   * call, closure and label string per offset were most of a `_metadata`'s parse.
   */
  async nonNegativeInt64s(count: number, what: string): Promise<number[]> {
    const values: number[] = [];
    while (values.length < count) {
      const p = this.position;
      const end = this.windowStart + this.windowLength;
      const here = p >= this.windowStart && p < end ? Math.floor((end - p) / 8) : 0;
      const n = Math.min(count - values.length, here);
      if (n === 0) {
        values.push(await this.nonNegativeInt64(what));
        continue;
      }
      for (let k = 0; k < n; k++) {
        const at = p + 8 * k;
        const v = this.safeInt64(at - this.windowStart, at, what);
        if (v < 0) throw this.corrupt(at, `negative ${what} ${v}`);
        values.push(v);
      }
      this.position = p + 8 * n;
    }
    return values;
  }

  /** An int64 read only for its bounds (its value is not used, any value is valid). */
  skipInt64(what: string): void {
    this.skip(8, what);
  }

  /**
   * `DataInputStream.readUTF`: a u16 byte count, then modified UTF-8 (U+0000 as two bytes,
   * supplementary characters as two 3-byte surrogates). Malformed bytes are corrupt, as
   * `UTFDataFormatException` is in Java.
   */
  utf(what: string): string | Promise<string> {
    const length = this.uint16(what);
    return typeof length === 'number'
      ? this.utfBody(length, what)
      : length.then((n) => this.utfBody(n, what));
  }

  private utfBody(length: number, what: string): string | Promise<string> {
    const at = this.position;
    return this.take(length, what, (i) =>
      decodeModifiedUtf8(this.window, i, length, (k, reason) =>
        this.corrupt(at + k, `${what}: ${reason}`),
      ),
    );
  }
}

/** Decodes Java's modified UTF-8 into a (UTF-16) JavaScript string. */
export function decodeModifiedUtf8(
  buf: Buffer,
  start: number,
  length: number,
  bad: (index: number, reason: string) => Error,
): string {
  const units: number[] = [];
  let out = '';
  let k = 0;
  while (k < length) {
    const a = buf[start + k]!;
    if (a < 0x80) {
      units.push(a);
      k += 1;
    } else if ((a & 0xe0) === 0xc0) {
      if (k + 2 > length) throw bad(k, 'malformed modified UTF-8 (partial character at end)');
      const b = buf[start + k + 1]!;
      if ((b & 0xc0) !== 0x80) throw bad(k + 1, 'malformed modified UTF-8');
      units.push(((a & 0x1f) << 6) | (b & 0x3f));
      k += 2;
    } else if ((a & 0xf0) === 0xe0) {
      if (k + 3 > length) throw bad(k, 'malformed modified UTF-8 (partial character at end)');
      const b = buf[start + k + 1]!;
      const c = buf[start + k + 2]!;
      if ((b & 0xc0) !== 0x80 || (c & 0xc0) !== 0x80) throw bad(k, 'malformed modified UTF-8');
      units.push(((a & 0x0f) << 12) | ((b & 0x3f) << 6) | (c & 0x3f));
      k += 3;
    } else {
      throw bad(k, `malformed modified UTF-8 (byte 0x${a.toString(16)})`);
    }
    if (units.length >= 4096) {
      out += String.fromCharCode(...units);
      units.length = 0;
    }
  }
  return out + String.fromCharCode(...units);
}
