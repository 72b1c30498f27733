/**
 * The writer's `DataOutputStream`: big-endian fields, Java's modified UTF-8 (U+0000 as two bytes,
 * a supplementary character as two 3-byte surrogates), and growth past its first buffer in the
 * middle of any field (a handle list longer than the first guess once wrote to the old buffer).
 */
import { describe, expect, it } from 'vitest';
import { DataOutput } from '../../src/services/formats/flink/write/data-output.ts';

describe('DataOutput writes what java.io.DataOutputStream writes', () => {
  it('writeUTF: modified UTF-8 with an unsigned 16-bit length', () => {
    const bytes = new DataOutput().utf('a\u0000é€😀').toBuffer();
    expect(bytes.toString('hex')).toBe(
      '000e' + '61' + 'c080' + 'c3a9' + 'e282ac' + 'eda0bd' + 'edb880',
    );
    expect(() => new DataOutput().utf('€'.repeat(21846))).toThrow(/too long/);
  });

  it('int32, int64 and bytes are big-endian, and every field survives the buffer growing under it', () => {
    const out = new DataOutput(16);
    const want: Buffer[] = [];
    for (let i = 0; i < 2000; i++) {
      out
        .byte(i)
        .int32(-i)
        .int64(i * 1_000_003)
        .utf(`s${i}`)
        .bytes(Buffer.from([i & 0xff, 7]));
      const b = Buffer.alloc(1 + 4 + 8);
      b.writeUInt8(i & 0xff, 0);
      b.writeInt32BE(-i, 1);
      b.writeBigInt64BE(BigInt(i * 1_000_003), 5);
      const s = Buffer.from(`s${i}`);
      const len = Buffer.alloc(2);
      len.writeUInt16BE(s.length);
      want.push(b, len, s, Buffer.from([i & 0xff, 7]));
    }
    expect(out.toBuffer().equals(Buffer.concat(want))).toBe(true);
    expect(() => new DataOutput().int64(2 ** 53)).toThrow(RangeError);
  });
});
