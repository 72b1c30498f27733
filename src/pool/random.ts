/**
 * Deterministic randomness for the pool: one seed fixes the fault schedule and every fault's
 * parameters, so a run that found something can be run again exactly.
 */

/**
 * mulberry32: tiny, seedable, good enough for picking fault parameters.
 *
 * @example
 * ```ts
 * const r = rng(mix(seed, loop));
 * r(); // a number in [0, 1)
 * ```
 */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Combines two integers into one 32-bit seed, so each (seed, loop) pair gets its own stream. */
export function mix(a: number, b: number): number {
  return (Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x632be5ab, 0xc2b2ae35)) >>> 0;
}

/** An integer in `lo..hi` (inclusive; hi is raised to lo). */
export function between(r: () => number, lo: number, hi: number): number {
  const top = Math.max(lo, hi);
  return lo + Math.floor(r() * (top - lo + 1));
}
