/**
 * Key groups exactly as Flink computes them (`KeyGroupRangeAssignment`, `MathUtils`), so a
 * record kept by a rescaled Spillway recovery is the record Flink's filtering handler keeps.
 * All arithmetic is Java `int` arithmetic: 32-bit two's complement, wrapping.
 */

/** Flink's lower bound of a default max parallelism (`DEFAULT_LOWER_BOUND_MAX_PARALLELISM`). */
export const DEFAULT_LOWER_BOUND_MAX_PARALLELISM = 128;

/** Flink's largest max parallelism (`UPPER_BOUND_MAX_PARALLELISM`, 2^15). */
export const UPPER_BOUND_MAX_PARALLELISM = 32768;

/** How many leading record bytes form the key by default (DESIGN.md §3). */
export const DEFAULT_KEY_BYTES = 8;

/**
 * The start value of Java's `Arrays.hashCode(byte[])`: the hash of an empty key. Hashing in
 * pieces starts here and feeds each piece through {@link hashKeyBytes}.
 */
export const KEY_HASH_SEED = 1;

/**
 * Continues Java's `Arrays.hashCode(byte[])` over `bytes[start, end)`: `h = 31 * h + b` per
 * byte, `b` a *signed* byte, wrapping at 32 bits. A key split across entries hashes the same as
 * in one piece, which is why the function takes and returns the running value.
 *
 * @example
 * ```ts
 * hashKeyBytes(KEY_HASH_SEED, Buffer.from('abcdefgh')); // -547780731
 * ```
 */
export function hashKeyBytes(
  hash: number,
  bytes: Uint8Array,
  start = 0,
  end = bytes.length,
): number {
  let h = hash | 0;
  for (let i = start; i < end; i++) {
    // (b << 24) >> 24 sign-extends the byte, as Java's `byte` is signed.
    h = (Math.imul(h, 31) + ((bytes[i]! << 24) >> 24)) | 0;
  }
  return h;
}

/**
 * Flink's `MathUtils.murmurHash(int)`: one round of Murmur3's body and finalizer over a single
 * int, made non-negative (`Integer.MIN_VALUE` maps to 0, any other negative to its negation).
 *
 * @example
 * ```ts
 * murmurHash(0); // 593689054
 * murmurHash(42); // 1134849565
 * ```
 */
export function murmurHash(code: number): number {
  let h = Math.imul(code | 0, 0xcc9e2d51);
  h = (h << 15) | (h >>> 17);
  h = Math.imul(h, 0x1b873593);
  h = (h << 13) | (h >>> 19);
  h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  // The length of the hashed data in bytes: one int.
  h ^= 4;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  if (h >= 0) return h;
  return h === -2147483648 ? 0 : -h;
}

/**
 * Flink's `computeKeyGroupForKeyHash`: `murmurHash(keyHash) % maxParallelism`.
 *
 * @example
 * ```ts
 * keyGroupForKeyHash(1, 128); // 86: the empty key's group
 * ```
 */
export function keyGroupForKeyHash(keyHash: number, maxParallelism: number): number {
  return murmurHash(keyHash) % maxParallelism;
}

/**
 * Flink's `computeOperatorIndexForKeyGroup`: `keyGroup * parallelism / maxParallelism`,
 * integer division (the product stays below 2^30, so no int overflow to mimic).
 *
 * @example
 * ```ts
 * operatorIndexForKeyGroup(128, 2, 86); // 1
 * ```
 */
export function operatorIndexForKeyGroup(
  maxParallelism: number,
  parallelism: number,
  keyGroup: number,
): number {
  return Math.floor((keyGroup * parallelism) / maxParallelism);
}

/**
 * Flink's `roundUpToPowerOfTwo` for the positive ints it is used with here.
 *
 * @example
 * ```ts
 * roundUpToPowerOfTwo(150); // 256
 * ```
 */
export function roundUpToPowerOfTwo(x: number): number {
  let v = (x | 0) - 1;
  v |= v >> 1;
  v |= v >> 2;
  v |= v >> 4;
  v |= v >> 8;
  v |= v >> 16;
  return v + 1;
}

/**
 * Flink's `computeDefaultMaxParallelism`:
 * `min(max(roundUpToPowerOfTwo(P + P / 2), 128), 32768)`, `P / 2` an integer division.
 *
 * @example
 * ```ts
 * defaultMaxParallelism(2); // 128
 * defaultMaxParallelism(200); // 512
 * ```
 */
export function defaultMaxParallelism(parallelism: number): number {
  return Math.min(
    Math.max(
      roundUpToPowerOfTwo(parallelism + Math.floor(parallelism / 2)),
      DEFAULT_LOWER_BOUND_MAX_PARALLELISM,
    ),
    UPPER_BOUND_MAX_PARALLELISM,
  );
}

/** Where records go after a rescale: new subtask `subtask` of `parallelism`. */
export interface RescaleTarget {
  /** The new subtask this recovery is for, `0 ≤ subtask < parallelism`. */
  readonly subtask: number;
  /** The new parallelism `P`, `1 ≤ P ≤ maxParallelism`. */
  readonly parallelism: number;
  /** The max parallelism `M` (number of key groups), `P ≤ M ≤ 32768`; default Flink's rule. */
  readonly maxParallelism?: number;
  /** How many leading record bytes are the key; default 8. */
  readonly keyBytes?: number;
}

/**
 * The new subtask a key hash belongs to: `keyGroup * P / M` with
 * `keyGroup = murmurHash(keyHash) % M`.
 *
 * @example
 * ```ts
 * operatorForKeyHash(hashKeyBytes(KEY_HASH_SEED, Buffer.alloc(8)), 2, 128); // 0
 * ```
 */
export function operatorForKeyHash(
  keyHash: number,
  parallelism: number,
  maxParallelism: number,
): number {
  return operatorIndexForKeyGroup(
    maxParallelism,
    parallelism,
    keyGroupForKeyHash(keyHash, maxParallelism),
  );
}
