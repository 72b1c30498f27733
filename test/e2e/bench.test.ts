/**
 * `spillway bench` end to end, in its smoke mode: the command runs every measurement on tiny
 * data, prints every figure under the name issue 33 gives it (a figure whose phase cannot run
 * is null, with the reason in `skipped`), and leaves nothing in its temp dir.
 * Timings are never asserted (they flake on a shared machine); only shape and cleanliness.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempRoot } from '../helpers/temp.ts';
import { lines, runCli } from './harness.ts';

/** What the run left in TMPDIR, minus tsx's compile cache (the TS loader's, not the bench's). */
async function leftovers(tmp: string): Promise<string[]> {
  return (await readdir(tmp)).filter((name) => !name.startsWith('tsx-'));
}

/** Issue 33's names in its order, then the raw-I/O ratios and the older figures. */
const FIGURES = [
  'recoverAllVsJvm',
  'lsVsJvm',
  'e2eRecoverVsDdTmpfs',
  'e2eRecoverVsDd',
  'spillVsCrcWrite',
  'drainVsCrcRead',
  'spillVsCrcWriteTmpfs',
  'drainVsCrcReadTmpfs',
  'spillVsRawWrite',
  'drainVsRawRead',
  'spillVsRawWriteTmpfs',
  'drainVsRawReadTmpfs',
  'recoverAllFloorVsJvm',
  'recoverAllVsFloor',
  'flinkVsSpwc',
  'flinkRecordsVsRecover',
  'filteringVsSpilling',
  'channelsVsFloorTmpfs',
  'channelsPeakRssMiB',
  'cancelCleanupP99Ms',
  'importVsNode',
  'startupVsNode',
  'recoverVsPlain',
  'recoverVsPlainTmpfs',
  'peakRssMiBAt2GiB',
  'tuple3DecodeMPerSec',
  'skipped',
];
const RATIOS = [
  'e2eRecoverVsDd',
  'spillVsCrcWrite',
  'drainVsCrcRead',
  'spillVsRawWrite',
  'drainVsRawRead',
  'flinkVsSpwc',
  'flinkRecordsVsRecover',
  'filteringVsSpilling',
  'importVsNode',
  'startupVsNode',
  'recoverVsPlain',
];
/** Null only where no tmpfs could be mounted (not root). */
const TMPFS_RATIOS = [
  'e2eRecoverVsDdTmpfs',
  'spillVsCrcWriteTmpfs',
  'drainVsCrcReadTmpfs',
  'spillVsRawWriteTmpfs',
  'drainVsRawReadTmpfs',
  'channelsVsFloorTmpfs',
  'recoverVsPlainTmpfs',
];
/** Null where java or the real-Flink harness is absent. */
const PEER_RATIOS = ['recoverAllVsJvm', 'lsVsJvm', 'recoverAllFloorVsJvm', 'recoverAllVsFloor'];

function expectSpread(key: string, ratio: Record<string, number>): void {
  expect(Object.keys(ratio), key).toEqual(['median', 'min', 'max']);
  for (const v of Object.values(ratio)) {
    expect(Number.isFinite(v) && v > 0, `${key} = ${v}`).toBe(true);
  }
  expect(ratio.min).toBeLessThanOrEqual(ratio.median!);
  expect(ratio.median).toBeLessThanOrEqual(ratio.max!);
}

describe('spillway bench', () => {
  it('--quick --json --growth --svg prints every figure under its name (null with the reason in skipped where a phase cannot run), the growth, writes the plot and leaves TMPDIR empty', async () => {
    const tmp = await makeTempRoot();
    const plotDir = await makeTempRoot();
    const svg = join(plotDir, 'growth.svg');
    const run = await runCli(['bench', '--quick', '--json', '--growth', '--svg', svg], {
      TMPDIR: tmp,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(lines(run.stdout)).toHaveLength(1);
    const result = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(Object.keys(result)).toEqual([...FIGURES, 'growth']);
    for (const key of RATIOS) expectSpread(key, result[key] as Record<string, number>);
    const rooted = process.getuid?.() === 0;
    for (const key of TMPFS_RATIOS) {
      if (rooted || result[key] !== null) {
        expectSpread(key, result[key] as Record<string, number>);
      }
    }
    const skipped = result.skipped as Record<string, string>;
    for (const key of [...TMPFS_RATIOS, ...PEER_RATIOS, 'channelsPeakRssMiB']) {
      // A figure is null exactly when skipped says why.
      if (result[key] === null) expect(skipped[key], key).toMatch(/\S/);
      else expect(skipped[key], key).toBeUndefined();
    }
    for (const key of PEER_RATIOS) {
      if (result[key] !== null) expectSpread(key, result[key] as Record<string, number>);
    }
    if (rooted || result.channelsPeakRssMiB !== null) {
      expect(result.channelsPeakRssMiB as number).toBeGreaterThan(0);
    }
    for (const key of ['cancelCleanupP99Ms', 'peakRssMiBAt2GiB']) {
      const v = result[key] as number;
      expect(Number.isFinite(v) && v > 0, `${key} = ${v}`).toBe(true);
    }
    const growth = result.growth as {
      state: { mb: number; peakRssMiB: number }[];
      tasks: { tasks: number }[];
      channels: { channels: number; vsFloor: number; peakRssMiB: number }[];
    };
    expect(growth.state.map((s) => s.mb)).toEqual([1, 2]);
    expect(growth.tasks.map((t) => t.tasks)).toEqual([1, 2]);
    expect(growth.channels.map((c) => c.channels)).toEqual([1, 100]);
    for (const c of growth.channels) expect(c.vsFloor > 0 && c.peakRssMiB > 0).toBe(true);
    const plot = await readFile(svg, 'utf8');
    expect(plot).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(plot.match(/<path /g)?.length).toBe(6); // two series in each of three panels
    // The checkpoints, spill files, raw copies, the tmpfs and the spill root all went with the run.
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
