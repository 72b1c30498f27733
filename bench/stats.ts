/** Small statistics helpers for the bench: spreads of ratios, percentiles, a seeded PRNG. */

/** A ratio measured over several runs. */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

/**
 * Median, min and max of `values` (the median of an even count is the mean of the middle two).
 *
 * @example
 * ```ts
 * spread([3, 1, 2]); // { median: 2, min: 1, max: 3 }
 * ```
 */
export function spread(values: readonly number[]): Spread {
  if (values.length === 0) throw new RangeError('spread() of no values');
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  return { median, min: s[0]!, max: s[s.length - 1]! };
}

/**
 * The nearest-rank percentile: the smallest value with at least `p`% of the values at or below
 * it. With 50 samples p99 is the largest one: a tail figure that hides nothing.
 *
 * @example
 * ```ts
 * percentile([5, 1, 9, 3], 50); // 3
 * ```
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) throw new RangeError('percentile() of no values');
  const s = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * s.length));
  return s[rank - 1]!;
}

/** Rounds for display and JSON: ratios to 3 decimals, times and sizes to 1. */
export function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/**
 * mulberry32: a seeded PRNG so the cancel moments of two bench runs are the same draw.
 *
 * @example
 * ```ts
 * const rng = seededRandom(42);
 * rng(); // in [0, 1)
 * ```
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
