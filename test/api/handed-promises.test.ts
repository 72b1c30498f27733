/**
 * DESIGN §5: every promise the API hands out is marked handled — awaiting it late never crashes
 * the process, while the caller's own await still sees the rejection.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeSmallCheckpoint } from '../helpers/checkpoints.ts';
import { fixturesDir, spawnTracked } from '../helpers/processes.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

describe('promises never crash', () => {
  it('the README checkpoint pattern, cancelled mid-remainder, does not crash under --unhandled-rejections=strict', async () => {
    const dir = await makeTempRoot();
    const { path } = await makeSmallCheckpoint(dir, { kib: 512 });
    const out = join(dir, 'cp-7.spwc');
    const child = spawnTracked(process.execPath, [
      '--unhandled-rejections=strict',
      '--import',
      'tsx',
      join(fixturesDir, 'late-await-child.ts'),
      path,
      dir,
      out,
    ]);
    const { code, signal } = await child.exited;
    expect(child.stderr).not.toMatch(/^\s+at /m); // no stack trace: nothing crashed
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    const result = JSON.parse(child.stdout.trim()) as Record<string, unknown>;
    // Cancelled while the remainder was written: done is the cancel, the checkpoint is aborted,
    // and both rejections reach the caller's own awaits.
    expect(result).toEqual({
      doneCode: 'ABORT_ERR',
      checkpointCode: 'ERR_SPILLWAY_ABORTED',
      cancelled: true,
    });
    expect(listSpill(dir).spillFiles).toEqual([]);
  }, 60_000);
});
