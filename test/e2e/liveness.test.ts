/**
 * G11 liveness, each in its own child process: after a cancel, `done` settles in bounded time
 * and every spill file is gone even when a consumer never returns or the checkpoint is a FIFO
 * that nobody writes to; what was abandoned is reported in `.suppressed`; and the process then
 * exits on its own — nothing abandoned keeps it alive.
 */
import { execFileSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { suiteCheckpoint } from '../helpers/checkpoints.ts';
import { spawnFixture } from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const input = suiteCheckpoint((dir) =>
  makeCheckpoint({ out: join(dir, 'live.spwc'), gates: 1, channels: 3, mb: 2, seed: 9 }),
);

async function runChild(mode: string, checkpoint?: string) {
  const dir = await makeTempRoot();
  const root = join(dir, 'root');
  await mkdir(root);
  let path = checkpoint ?? input.path;
  if (mode === 'fifo') {
    path = join(dir, 'fifo');
    execFileSync('mkfifo', [path]);
  }
  const child = spawnFixture('liveness-child.ts', [mode, path, root]);
  const { code, signal } = await child.exited;
  return { code, signal, result: JSON.parse(child.stdout.trim().split('\n').pop()!), child };
}

describe('G11 liveness', () => {
  it('G11 a consumer whose onBuffer never returns is abandoned: done settles, files go, the process exits', async () => {
    const { code, signal, result } = await runChild('hung-buffer');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(result).toMatchObject({
      settled: 'rejected',
      name: 'AbortError',
      code: 'ABORT_ERR',
      causeIsReason: true,
      leftovers: [],
    });
    expect(result.suppressed).toContain('ERR_SPILLWAY_CONSUMER_ABANDONED');
  });

  it('G11 the abandonment names the channel whose call hung, never "gate--1-channel--1"', async () => {
    for (const mode of ['hung-buffer', 'hung-finish']) {
      const { result } = await runChild(mode);
      const abandoned = (result.messages as string[]).find((m) => m.includes('abandoned'));
      expect(result.hung).toMatch(/^gate-\d+-channel-\d+$/);
      expect(abandoned).toContain(`input channel ${result.hung as string} `);
      expect(abandoned).not.toContain('--1');
    }
  });

  it('G11 a consumer whose onFinished never returns is abandoned the same way', async () => {
    const { code, signal, result } = await runChild('hung-finish');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(result).toMatchObject({ settled: 'rejected', code: 'ABORT_ERR', leftovers: [] });
    expect(result.suppressed).toContain('ERR_SPILLWAY_CONSUMER_ABANDONED');
  });

  it('G11 a FIFO checkpoint with no writer never blocks: done settles and the process exits', async () => {
    const { code, signal, result } = await runChild('fifo');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(result).toMatchObject({
      settled: 'rejected',
      code: 'ERR_SPILLWAY_CHECKPOINT_PATH',
      leftovers: [],
    });
  });
});
