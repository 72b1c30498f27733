/**
 * A growable `java.io.DataOutputStream` in memory: big-endian primitives and `writeUTF`'s
 * modified UTF-8, the encoding Flink's `MetadataV*Serializer` writes `_metadata` with. The
 * writer's counterpart of the reader's `MetadataInput`.
 */

/**
 * Collects bytes as Java's `DataOutputStream` would write them.
 *
 * @example
 * ```ts
 * const out = new DataOutput();
 * out.int32(0x4960672d).int32(4).int64(17);
 * out.utf('slow-join');
 * const bytes = out.toBuffer();
 * ```
 */
export class DataOutput {
  private buf: Buffer;
  private length = 0;

  constructor(initialBytes = 4096) {
    this.buf = Buffer.allocUnsafe(Math.max(16, initialBytes));
  }

  /** Bytes written so far. */
  get size(): number {
    return this.length;
  }

  private room(n: number): number {
    const at = this.length;
    if (at + n > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, at + n));
      this.buf.copy(next, 0, 0, at);
      this.buf = next;
    }
    this.length = at + n;
    return at;
  }

  // Each write takes its offset first: room() may replace `this.buf`, and `this.buf.write…(v,
  // this.room(n))` would have read the old buffer before the call grew it.
  byte(v: number): this {
    const at = this.room(1);
    this.buf[at] = v & 0xff;
    return this;
  }

  int32(v: number): this {
    const at = this.room(4);
    this.buf.writeInt32BE(v | 0, at);
    return this;
  }

  /** A safe integer as Java's `writeLong` (two's complement, big-endian). */
  int64(v: number): this {
    if (!Number.isSafeInteger(v)) throw new RangeError(`int64: ${v} is not a safe integer`);
    const at = this.room(8);
    this.buf.writeBigInt64BE(BigInt(v), at);
    return this;
  }

  bytes(b: Uint8Array): this {
    const at = this.room(b.length);
    this.buf.set(b, at);
    return this;
  }

  /**
   * `DataOutputStream.writeUTF`: an unsigned 16-bit byte count, then each UTF-16 unit as one
   * byte (U+0001–U+007F), two (U+0000, U+0080–U+07FF) or three; more than 65,535 bytes throws
   * as Java's `UTFDataFormatException` does.
   */
  utf(s: string): this {
    let n = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      n += c >= 0x0001 && c <= 0x007f ? 1 : c <= 0x07ff ? 2 : 3;
    }
    if (n > 0xffff) throw new RangeError(`writeUTF: encoded string too long: ${n} bytes`);
    const lengthAt = this.room(2);
    this.buf.writeUInt16BE(n, lengthAt);
    const at = this.room(n);
    let k = at;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x0001 && c <= 0x007f) {
        this.buf[k++] = c;
      } else if (c <= 0x07ff) {
        this.buf[k++] = 0xc0 | ((c >> 6) & 0x1f);
        this.buf[k++] = 0x80 | (c & 0x3f);
      } else {
        this.buf[k++] = 0xe0 | ((c >> 12) & 0x0f);
        this.buf[k++] = 0x80 | ((c >> 6) & 0x3f);
        this.buf[k++] = 0x80 | (c & 0x3f);
      }
    }
    return this;
  }

  /** The bytes written (a copy: the output may keep growing). */
  toBuffer(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.length));
  }
}
