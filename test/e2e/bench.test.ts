/**
 * `spillway bench` end to end, in its smoke mode: the command runs every measurement on tiny
 * data, prints the six figures under their exact names, and leaves nothing in its temp dir.
 * Timings are never asserted (they flake on a shared machine); only shape and cleanliness.
 */
import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { makeTempRoot } from '../helpers/temp.ts';
import { lines, runCli } from './harness.ts';

/** What the run left in TMPDIR, minus tsx's compile cache (the TS loader's, not the bench's). */
async function leftovers(tmp: string): Promise<string[]> {
  return (await readdir(tmp)).filter((name) => !name.startsWith('tsx-'));
}

const FIGURES = [
  'spillVsRawWrite',
  'drainVsRawRead',
  'recoverVsPlain',
  'cancelCleanupP99Ms',
  'peakRssMiBAt2GiB',
  'filteringVsSpilling',
];

describe('spillway bench', () => {
  it('--quick --json prints exactly the six figures as finite numbers and leaves TMPDIR empty', async () => {
    const tmp = await makeTempRoot();
    const run = await runCli(['bench', '--quick', '--json'], { TMPDIR: tmp });
    expect(run.code, run.stderr).toBe(0);
    expect(lines(run.stdout)).toHaveLength(1);
    const result = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(Object.keys(result)).toEqual(FIGURES);
    for (const key of [
      'spillVsRawWrite',
      'drainVsRawRead',
      'recoverVsPlain',
      'filteringVsSpilling',
    ]) {
      const ratio = result[key] as Record<string, number>;
      expect(Object.keys(ratio), key).toEqual(['median', 'min', 'max']);
      for (const v of Object.values(ratio)) {
        expect(Number.isFinite(v) && v > 0, `${key} = ${v}`).toBe(true);
      }
      expect(ratio.min).toBeLessThanOrEqual(ratio.median!);
      expect(ratio.median).toBeLessThanOrEqual(ratio.max!);
    }
    for (const key of ['cancelCleanupP99Ms', 'peakRssMiBAt2GiB']) {
      const v = result[key] as number;
      expect(Number.isFinite(v) && v > 0, `${key} = ${v}`).toBe(true);
    }
    // The checkpoints, spill files, raw copies and the spill root all went with the run.
    expect(await leftovers(tmp)).toEqual([]);
  });

  it('refuses fewer than 5 runs for a real measurement: exit 2, one line, nothing made', async () => {
    const tmp = await makeTempRoot();
    const run = await runCli(['bench', '--runs', '2'], { TMPDIR: tmp });
    expect(run.code).toBe(2);
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toMatch(/--runs must be at least 5/);
    expect(await leftovers(tmp)).toEqual([]);
  });
});
