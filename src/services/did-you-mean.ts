/**
 * "Did you mean …?" for a misspelled option, flag or command: the closest known name within a
 * small edit distance (Damerau–Levenshtein: a swapped pair, as in `singal`, counts as one edit).
 */

/**
 * The known name closest to `name`, if one is close enough to be what was meant (at most 2
 * edits, and fewer than half of the name's length), else undefined.
 *
 * @example
 * ```ts
 * closest('singal', ['signal', 'spillRoot']); // 'signal'
 * closest('xyz', ['signal']); // undefined
 * ```
 */
export function closest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = distance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return bestDistance <= Math.min(2, Math.ceil(name.length / 2) - 1) ? best : undefined;
}

/** `" (did you mean 'signal'?)"`, or `''` when nothing is close. */
export function didYouMean(name: string, known: readonly string[], quote = "'"): string {
  const match = closest(name, known);
  return match === undefined ? '' : ` (did you mean ${quote}${match}${quote}?)`;
}

function distance(a: string, b: string): number {
  const d: number[][] = [];
  for (let i = 0; i <= a.length; i++) d.push([i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 0; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        v = Math.min(v, d[i - 2]![j - 2]! + 1);
      }
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}
