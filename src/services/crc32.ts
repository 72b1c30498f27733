/**
 * CRC-32 (the zlib / IEEE 802.3 polynomial, so files stay readable by any zlib) for every
 * checksum Spillway computes. Every spilled byte is checksummed twice (checkpoint entry, spill
 * segment), so its speed caps spill and drain throughput: the SIMD implementation in
 * `@node-rs/crc32` runs ~3× faster than `zlib.crc32` here. Where its native binary is missing
 * (an exotic platform), zlib's gives identical values.
 */
import { createRequire } from 'node:module';
import { crc32 as zlibCrc32 } from 'node:zlib';

type Crc32 = (data: Buffer, initial?: number) => number;

function load(): Crc32 {
  try {
    const native = createRequire(import.meta.url)('@node-rs/crc32') as { crc32: Crc32 };
    // Trust it only if it agrees with zlib (same polynomial, same chaining of `initial`).
    const probe = Buffer.from('spillway');
    if (native.crc32(probe, 7) === zlibCrc32(probe, 7)) return native.crc32;
  } catch {
    // No binary for this platform: fall back below.
  }
  return zlibCrc32;
}

/**
 * CRC-32 of `data`, continuing from `initial` (the CRC of the bytes before it).
 *
 * @example
 * ```ts
 * crc32(Buffer.from('CDE'), crc32(Buffer.from('AB'))) === crc32(Buffer.from('ABCDE'));
 * ```
 */
export const crc32: Crc32 = load();
