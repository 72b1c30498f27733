/**
 * CRC-32 (the zlib / IEEE 802.3 polynomial, so files stay readable by any zlib) for every
 * checksum Spillway computes. Every spilled byte is checksummed twice (checkpoint entry, spill
 * segment), so its speed caps spill and drain throughput: the SIMD implementation in
 * `@node-rs/crc32` runs ~3× faster than `zlib.crc32` here. Where its native binary is missing
 * (an exotic platform), zlib's gives identical values.
 *
 * Beside the checksum itself, the polynomial arithmetic that combines and splits CRCs
 * ({@link crc32Combine}, {@link crc32Suffix}): it lets one checksum pass serve both the
 * checkpoint's entry check and the spill segments' CRCs.
 */
import { createRequire } from 'node:module';

type Crc32 = (data: Buffer, initial?: number) => number;

function load(): Crc32 {
  // node:zlib on first use too: it loads Node's stream modules, which importing Spillway
  // otherwise does not need.
  const zlibCrc32: Crc32 = process.getBuiltinModule('node:zlib').crc32;
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

let impl: Crc32 | undefined;

/**
 * CRC-32 of `data`, continuing from `initial` (the CRC of the bytes before it). The native
 * implementation is loaded on first use, not at import: importing Spillway does no work.
 *
 * @example
 * ```ts
 * crc32(Buffer.from('CDE'), crc32(Buffer.from('AB'))) === crc32(Buffer.from('ABCDE'));
 * ```
 */
export function crc32(data: Buffer, initial?: number): number {
  impl ??= load();
  return impl(data, initial);
}

// zlib's crc32_combine (1.2.12+), in 32-bit JS integers: CRCs are polynomials mod P, so the CRC
// of A‖B follows from crc(A), crc(B) and |B| without touching a byte. That lets one checksum
// pass serve both the checkpoint's entry check and the spill segments' CRCs.
const CRC_POLY = 0xedb88320;

/** a·b mod P, both in zlib's reflected representation. */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = (b & 1) !== 0 ? (b >>> 1) ^ CRC_POLY : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) mod P for k = 0..31. */
const X2N_TABLE: Uint32Array = (() => {
  const table = new Uint32Array(32);
  let p = 0x40000000; // x^1
  table[0] = p;
  for (let k = 1; k < 32; k++) table[k] = p = multModP(p, p);
  return table;
})();

/** x^(8·bytes) mod P: the operator that shifts a CRC past `bytes` zero bytes. */
function shiftOperator(bytes: number): number {
  let p = 0x80000000; // x^0
  let k = 3; // 8 bits per byte
  for (let n = bytes; n > 0; n = Math.floor(n / 2), k++) {
    if (n % 2 === 1) p = multModP(X2N_TABLE[k & 31]!, p);
  }
  return p;
}

/**
 * The CRC-32 of A‖B from `crcA = crc32(A)`, `crcB = crc32(B)` and `lengthB = |B|`, exactly as
 * zlib's `crc32_combine` computes it: `crc32Combine(crc32(a), crc32(b), b.length) ===
 * crc32(Buffer.concat([a, b]))`. Costs a few hundred integer operations, whatever the lengths.
 *
 * @example
 * ```ts
 * const whole = crc32Combine(crc32(head), crc32(tail), tail.length);
 * ```
 */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  if (lengthB === 0) return crcA >>> 0;
  return (multModP(shiftOperator(lengthB), crcA >>> 0) ^ crcB) >>> 0;
}

/**
 * The CRC-32 of B from `crcAB = crc32(A‖B)`, `crcA = crc32(A)` and `|B|`: the inverse of
 * {@link crc32Combine} in its second argument, for splitting a checksummed run in two.
 *
 * @example
 * ```ts
 * const tailCrc = crc32Suffix(crc32(whole), crc32(head), whole.length - head.length);
 * ```
 */
export function crc32Suffix(crcAB: number, crcA: number, lengthB: number): number {
  if (lengthB === 0) return 0;
  return (multModP(shiftOperator(lengthB), crcA >>> 0) ^ crcAB) >>> 0;
}
