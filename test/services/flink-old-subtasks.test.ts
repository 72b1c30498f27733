/**
 * The old subtasks Flink's restore hands a new subtask over a keyed edge
 * (`SubtaskStateMapper.RANGE`), held to what Flink's own javadoc of RANGE states: its worked
 * example (3 → 2), "for all downscale from n to [n-1 .. n/2], each new subtask gets exactly two
 * old subtasks" (at its ends: n-1 and n/2; 5 → 3 reads three for the middle one), and "for all upscale from n to [n+1 .. 2*n-1], most subtasks get two old
 * subtasks assigned, except the two outermost"; and at every scale, the new subtasks together
 * read every old subtask, in contiguous ascending runs.
 */
import { describe, expect, it } from 'vitest';
import { rangeOldSubtasks } from '../../src/services/formats/flink/old-subtasks.ts';

describe('rangeOldSubtasks (SubtaskStateMapper.RANGE)', () => {
  it("Flink's example: old 3 → new 2 reads old 0+1 and 1+2; same parallelism reads its own", () => {
    expect(rangeOldSubtasks(0, 3, 2)).toEqual([0, 1]);
    expect(rangeOldSubtasks(1, 3, 2)).toEqual([1, 2]);
    for (let i = 0; i < 3; i++) expect(rangeOldSubtasks(i, 3, 3)).toEqual([i]);
  });

  it('downscale n → n-1 (and n → n/2 for even n): every new subtask reads exactly two old ones', () => {
    for (let n = 2; n <= 40; n++) {
      for (const p of n % 2 === 0 ? [n - 1, n / 2] : [n - 1]) {
        for (let i = 0; i < p; i++)
          expect(rangeOldSubtasks(i, n, p), `${n}→${p} #${i}`).toHaveLength(2);
      }
    }
  });

  it('upscale n → [n+1 .. 2n-1]: two old subtasks each, but one for the two outermost', () => {
    for (let n = 2; n <= 40; n++) {
      for (let p = n + 1; p < 2 * n; p++) {
        const sizes = Array.from({ length: p }, (_, i) => rangeOldSubtasks(i, n, p).length);
        expect(sizes[0], `${n}→${p}`).toBe(1);
        expect(sizes[p - 1], `${n}→${p}`).toBe(1);
        expect(
          sizes.every((s) => s <= 2),
          `${n}→${p}`,
        ).toBe(true);
      }
    }
  });

  it('at any scale every old subtask is read by some new one, each set a contiguous ascending run', () => {
    for (const [n, p] of [
      [1, 7],
      [7, 1],
      [5, 128],
      [128, 5],
      [3, 5],
      [32768, 3],
    ] as const) {
      const seen = new Set<number>();
      for (let i = 0; i < p; i++) {
        const olds = rangeOldSubtasks(i, n, p);
        olds.forEach((o, k) => expect(o).toBe(olds[0]! + k));
        olds.forEach((o) => seen.add(o));
      }
      expect(seen.size, `${n}→${p}`).toBe(n);
    }
  });
});
