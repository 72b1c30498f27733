/**
 * The files of examples/ run as written (plain Node, the built package through its own name),
 * each in a temp dir holding the `job.spwc` it names.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeCheckpoint } from '../../src/testing.ts';
import { makeTempRoot, repoRoot, spawnTracked } from './harness.ts';

const MB = 4;

async function runExample(name: string) {
  const dir = await makeTempRoot();
  await makeCheckpoint({ out: join(dir, 'job.spwc'), mb: MB, gates: 2, channels: 2, seed: 3 });
  const child = spawnTracked(process.execPath, [join(repoRoot, 'examples', name)], {
    cwd: dir,
    env: { SPILLWAY_SPILL_ROOT: dir },
  });
  const { code } = await child.exited;
  return { dir, code, stdout: child.stdout, stderr: child.stderr };
}

describe('examples/', () => {
  it('quick-start.mjs recovers every byte into one file per channel', async () => {
    const r = await runExample('quick-start.mjs');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(`${MB * 1024 * 1024} bytes into 4 channels`);
    const files = (await readdir(r.dir)).filter((f) => f.endsWith('.bin')).sort();
    expect(files).toHaveLength(4);
    let total = 0;
    for (const f of files) total += (await readFile(join(r.dir, f))).length;
    expect(total).toBe(MB * 1024 * 1024);
    expect(await readdir(join(r.dir, 'spillway')).catch(() => [])).toEqual([]);
  });

  it('checkpoint-during-recovery.mjs writes the remainder as cp-7.spwc', async () => {
    const r = await runExample('checkpoint-during-recovery.mjs');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [bytes, file, channels] = r.stdout.trim().split(' ');
    expect(Number(bytes)).toBe(MB * 1024 * 1024);
    expect(file).toBe('cp-7.spwc');
    expect(Number(channels)).toBeGreaterThan(0);
    expect((await readFile(join(r.dir, 'cp-7.spwc'))).subarray(0, 4).toString()).toBe('SPWC');
  });
});
