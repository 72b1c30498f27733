/**
 * G8 for any shape, through the real CLI: 1 GiB in one channel, in entries of SPWC's largest
 * size (256 MiB), recovered under the 160 MiB goal with every byte right. The checkpoint is made
 * on disk by the test and removed with its dir.
 *
 * The 4 GiB figure (44 s of recovery on this machine, 80 s with the checkpoint's making) and the
 * 1/2/32-channel × 1/16/256 MiB matrix come from `node --import tsx bench/shapes.ts`.
 */
import { describe, expect, it } from 'vitest';
import { measureShape } from '../../bench/shapes.ts';

const MIB = 1024 * 1024;
const GOAL_MIB = 160;

describe('G8 memory for any shape', () => {
  it('G8 1 GiB in one channel of 256 MiB entries: peak RSS under 160 MiB, bytes exact', async () => {
    const run = await measureShape(1024 * MIB, 1, 256 * MIB);
    console.log(`G8: 1 GiB, 1 channel, 256 MiB entries: peak RSS ${run.peakMiB.toFixed(1)} MiB`);
    expect(run.exact).toBe(true);
    expect(run.peakMiB).toBeGreaterThan(0);
    expect(run.peakMiB).toBeLessThan(GOAL_MIB);
  }, 180_000);
});
