/**
 * The first run (issue 32): `npm start` runs `spillway tour`, which shows the product on the real
 * Flink checkpoint shipped in examples/ — what it holds in flight, one subtask's channels
 * extracted into files, what one file holds, the commands to try next — and leaves nothing in the
 * temp dir. The Flink example of examples/ reads the same checkpoint through the library.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempRoot, repoRoot, runCli, spawnTracked } from './harness.ts';

/** Bytes per input channel of slow-join subtask 0, as Flink's own classes read them. */
const SLOW_JOIN_0 = { 'gate 0 channel 0': 22, 'gate 0 channel 1': 2571, 'gate 1 channel 0': 751 };

describe('the first ten minutes', () => {
  it('npm start runs the tour: ls, a recovery into files, a look inside, next steps; nothing left in TMPDIR', async () => {
    const pkg = (await import(join(repoRoot, 'package.json'), { with: { type: 'json' } }))
      .default as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toMatch(/spillway tour$/);

    const tmp = await makeTempRoot();
    const tour = await runCli(['tour'], { TMPDIR: tmp, SPILLWAY_SPILL_ROOT: tmp });
    expect(tour.code, tour.stderr).toBe(0);
    const out = tour.stdout;
    expect(out).toContain('$ spillway flink ls examples/flink-checkpoint/chk-3');
    expect(out).toMatch(/Flink checkpoint 3, metadata v6/);
    expect(out).toContain('--operator slow-join --subtask 0 --out');
    for (const [channel, bytes] of Object.entries(SLOW_JOIN_0)) {
      const [, g, , c] = channel.split(' ');
      expect(out).toContain(`gate-${g}-channel-${c}.bin  ${bytes} bytes`);
    }
    expect(out).toMatch(/an int32 length \(\d+\), then a StreamElement/);
    // Step 4: three records, decoded as the job's Tuple2<Long, String>, keyed.
    const records = out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { kind: string; value: [number, string]; key: number });
    expect(records).toHaveLength(3);
    for (const r of records) {
      expect(r.kind).toBe('record');
      expect(r.key).toBe(r.value[0]);
      expect(typeof r.value[1]).toBe('string');
    }
    expect(out).toMatch(/\nNext:\n/);
    // The extracted files were the tour's own: its temp dir and the spill root are empty again.
    expect((await readdir(tmp)).filter((n) => n.startsWith('spillway-tour-'))).toEqual([]);
    expect(await readdir(join(tmp, 'spillway')).catch(() => [])).toEqual([]);
  });

  it("examples/flink-channels.mjs prints each input channel's bytes of the shipped checkpoint", async () => {
    const dir = await makeTempRoot();
    const child = spawnTracked(
      process.execPath,
      [join(repoRoot, 'examples', 'flink-channels.mjs')],
      {
        cwd: dir,
        env: { SPILLWAY_SPILL_ROOT: dir },
      },
    );
    const { code } = await child.exited;
    expect(child.stderr).toBe('');
    expect(code).toBe(0);
    const lines = child.stdout.trim().split('\n');
    expect(lines.slice(0, -1).sort()).toEqual(
      Object.entries(SLOW_JOIN_0).map(([ch, n]) => `${ch}: ${n} bytes`),
    );
    expect(lines.at(-1)).toBe('3344 bytes in flight into slow-join subtask 0');
  });

  it('spillway demo says in words what a recovery-failure loop is and what its zero lines prove, then what to run next', async () => {
    const tmp = await makeTempRoot();
    const demo = await runCli(['demo', '--tasks', '2', '--loops', '2'], { TMPDIR: tmp });
    expect(demo.code, demo.stderr).toBe(0);
    expect(demo.stdout).toMatch(/a recovery-failure loop/);
    expect(demo.stdout).toMatch(/leaked files 0 +no spill file of any ending survived it/);
    expect(demo.stdout).toMatch(
      /masked causes 0 +every failure was reported with the fault that caused it/,
    );
    expect(demo.stdout).toMatch(/'spillway tour' shows a real Flink checkpoint/);
  });
});
