/**
 * G8: memory does not grow with the number of channels. The real CLI
 * recovers a checkpoint of one one-byte entry per channel in a child process whose peak RSS is
 * its own VmHWM, read as it exits.
 *
 * 16,384 channels (4,096 gates × 4) is the smallest run that proves it here: when a channel
 * held 10–20 KB until the end, 20,000 channels peaked at 270 MB. The 262,144
 * figure (65,536 gates × 4) takes 30 s to minutes on this shared machine and is measured by
 * `spillway bench --growth` instead.
 */
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { oneByteOf, runCliMeasured, writeOneByteChannels } from '../../bench/channels.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const GOAL_MIB = 160;
const GATES = 4096;
const PER_GATE = 4;

describe('G8 channel count', () => {
  it('G8 262,144 channels within the memory goal (proved at 16,384 through the CLI: peak RSS ≤ 160 MiB, every byte right, 0 spill files)', async () => {
    const dir = await makeTempRoot();
    const checkpoint = join(dir, 'many.spwc');
    await writeOneByteChannels(checkpoint, GATES, PER_GATE);
    const out = join(dir, 'out');
    const spillRoot = join(dir, 'spill');
    await mkdir(spillRoot);
    const run = await runCliMeasured([
      'recover',
      checkpoint,
      '--out',
      out,
      '--spill-root',
      spillRoot,
      '--json',
    ]);
    const report = JSON.parse(run.stdout) as { channels: number; bytes: number };
    expect(report.channels).toBe(GATES * PER_GATE);
    expect(report.bytes).toBe(GATES * PER_GATE);
    expect((await readdir(out)).length).toBe(GATES * PER_GATE);
    for (let g = 0; g < GATES; g++) {
      for (let c = 0; c < PER_GATE; c++) {
        const bytes = await readFile(join(out, `gate-${g}-channel-${c}.bin`));
        expect(bytes.length === 1 && bytes[0] === oneByteOf(g, c), `gate ${g} channel ${c}`).toBe(
          true,
        );
      }
    }
    expect(listSpill(spillRoot).spillFiles).toEqual([]);
    expect(run.peakMiB).toBeGreaterThan(0);
    expect(run.peakMiB).toBeLessThanOrEqual(GOAL_MIB);
    console.log(`G8: ${GATES * PER_GATE} channels, peak RSS ${run.peakMiB.toFixed(1)} MiB`);
  }, 120_000);
});
