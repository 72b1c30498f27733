/**
 * G11: a cancel during the start-up sweep does not wait for the whole sweep. 3,000 dead owner
 * dirs are planted in the spill root; the recovery's own child sends itself SIGTERM as the
 * sweep claims the 10th of them (test/fixtures/cli-signal-at-step.ts, STEP_UNDER = the spill
 * root). It exits 143 having swept a few, not all: the rest is the next start's.
 */
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeSmallCheckpoint } from '../helpers/checkpoints.ts';
import { deadPid, fixturesDir, spawnTracked } from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { plantOwner } from './harness.ts';

const OWNERS = 3000;

describe('G11 a cancel during the start-up sweep', () => {
  it('G11 SIGTERM while 3,000 dead owner dirs are swept: exit 143 after a few, not after all', async () => {
    const dir = await makeTempRoot();
    const root = join(dir, 'spill');
    await mkdir(root);
    const { path } = await makeSmallCheckpoint(dir, { kib: 64 });
    const pid = deadPid();
    for (let k = 0; k < OWNERS; k += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, i) => plantOwner(root, { pid, startTicks: 1000 + k + i })),
      );
    }
    const child = spawnTracked(
      process.execPath,
      [
        '--import',
        'tsx',
        join(fixturesDir, 'cli-signal-at-step.ts'),
        'SIGTERM',
        'rename',
        '10',
        'recover',
        path,
        '--out',
        join(dir, 'out'),
        '--spill-root',
        root,
      ],
      { env: { STEP_UNDER: root, SPILLWAY_SPILL_ROOT: '' } },
    );
    const { code } = await child.exited;
    expect(code, child.stderr).toBe(143);
    const left = (await readdir(join(root, 'spillway'))).filter((n) => n.startsWith('owner-'));
    // Swept: the ones claimed before the cancel was seen; kept: the rest, all dead owners.
    expect(left.length).toBeGreaterThan(OWNERS - 100);
    expect(left.length).toBeLessThan(OWNERS);
    expect(left.every((n) => n.includes(`-${pid}-`))).toBe(true);
    console.log(
      `G11 sweep cancel: ${OWNERS - left.length} swept, ${child.stderr.match(/settle-ms=\d+/)?.[0]}`,
    );
  }, 180_000);
});
