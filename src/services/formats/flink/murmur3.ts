/**
 * MurmurHash3 x64 128 (Austin Appleby's public-domain algorithm), as Guava's
 * `Hashing.murmur3_128(seed)` computes it — the hash Flink's `StreamGraphHasherV2` gives a
 * user-set uid (`hasher.putString(uid, UTF-8).hash().asBytes()`, seed 0). Written here rather
 * than taken from a package: it is ~60 lines, and the 16 bytes must be exactly Guava's (h1 then
 * h2, each little-endian), which is what the operator id's 32 hex digits print.
 */

const MASK = (1n << 64n) - 1n;
const C1 = 0x87c37b91114253d5n;
const C2 = 0x4cf5ad432745937fn;

const rotl = (x: bigint, r: bigint): bigint => ((x << r) | (x >> (64n - r))) & MASK;

function fmix(k: bigint): bigint {
  k ^= k >> 33n;
  k = (k * 0xff51afd7ed558ccdn) & MASK;
  k ^= k >> 33n;
  k = (k * 0xc4ceb9fe1a85ec53n) & MASK;
  k ^= k >> 33n;
  return k;
}

/** Little-endian 64-bit word of `data` at `at`, `n` bytes (n < 8 for a block's tail). */
function word(data: Uint8Array, at: number, n = 8): bigint {
  let v = 0n;
  for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(data[at + i]!);
  return v;
}

function mixK1(k1: bigint): bigint {
  return (rotl((k1 * C1) & MASK, 31n) * C2) & MASK;
}

function mixK2(k2: bigint): bigint {
  return (rotl((k2 * C2) & MASK, 33n) * C1) & MASK;
}

/**
 * The 16 bytes of MurmurHash3 x64 128 of `data`, in Guava's `HashCode.asBytes()` order.
 *
 * @example
 * ```ts
 * const dog = Buffer.from('The quick brown fox jumps over the lazy dog');
 * Buffer.from(murmur3x64128(dog)).toString('hex');
 * // '6c1b07bc7bbc4be347939ac4a93c437a' (Guava's h1 0xe34bbc7bbc071b6c, h2 0x7a433ca9c49a9347)
 * ```
 */
export function murmur3x64128(data: Uint8Array, seed = 0): Uint8Array {
  let h1 = BigInt(seed >>> 0);
  let h2 = h1;
  const blocks = Math.floor(data.length / 16);
  for (let b = 0; b < blocks; b++) {
    h1 ^= mixK1(word(data, b * 16));
    h1 = (((rotl(h1, 27n) + h2) & MASK) * 5n + 0x52dce729n) & MASK;
    h2 ^= mixK2(word(data, b * 16 + 8));
    h2 = (((rotl(h2, 31n) + h1) & MASK) * 5n + 0x38495ab5n) & MASK;
  }
  const tail = blocks * 16;
  const rest = data.length - tail;
  if (rest > 8) h2 ^= mixK2(word(data, tail + 8, rest - 8));
  if (rest > 0) h1 ^= mixK1(word(data, tail, Math.min(rest, 8)));
  const len = BigInt(data.length);
  h1 ^= len;
  h2 ^= len;
  h1 = (h1 + h2) & MASK;
  h2 = (h2 + h1) & MASK;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h1 = (h1 + h2) & MASK;
  h2 = (h2 + h1) & MASK;
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    out[i] = Number((h1 >> BigInt(8 * i)) & 0xffn);
    out[8 + i] = Number((h2 >> BigInt(8 * i)) & 0xffn);
  }
  return out;
}

/**
 * The operator id Flink gives an operator whose uid was set with `.uid(uid)`
 * (`StreamGraphHasherV2#generateUserSpecifiedHash`), as `OperatorID.toString()` prints it.
 *
 * @example
 * ```ts
 * operatorIdOfUid('slow-join'); // 'b04c65efe1b1b80162da73517c40e7de'
 * ```
 */
export function operatorIdOfUid(uid: string): string {
  return Buffer.from(murmur3x64128(new TextEncoder().encode(uid), 0)).toString('hex');
}
