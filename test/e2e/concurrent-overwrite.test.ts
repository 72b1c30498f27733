/**
 * B8 (issue 34): two `recover --overwrite` runs into one DIR, started together, 3,000 channels
 * each (real child processes, real files), each paused halfway through its publish until the
 * other one publishes too (test/fixtures/cli-publish-rendezvous.ts). Publishing is one step per DIR: whatever the two
 * exits, DIR holds one run's files whole — the run that published last — never a mix, never a
 * failed run's file, and a run that exited 0 alone has every one of its files there. Nothing of
 * either run (staging dir, publish lock) is left. Repeated, because the race was timing-bound.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { spawnFixture } from '../helpers/processes.ts';
import { makeTempRoot, runRecover } from './harness.ts';

const CHANNELS = 3000;
const ROUNDS = 2;

/** Name → SHA-256 of every channel file in `dir`. */
async function digests(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of (await readdir(dir)).filter((n) => n.endsWith('.bin'))) {
    out.set(
      name,
      createHash('sha256')
        .update(await readFile(join(dir, name)))
        .digest('hex'),
    );
  }
  return out;
}

describe('B8 two concurrent --overwrite recoveries into one DIR', () => {
  let root = '';
  const checkpoints: string[] = [];
  const refs: Map<string, string>[] = [];

  beforeAll(async () => {
    root = await makeTempRoot();
    for (const seed of [11, 22]) {
      const out = join(root, `cp-${seed}.spwc`);
      await makeCheckpoint({
        out,
        gates: 1,
        channels: CHANNELS,
        mb: 16,
        seed,
        maxEntryBytes: 1024,
      });
      checkpoints.push(out);
      // What each run alone publishes: the reference its files are recognised by.
      const ref = join(root, `ref-${seed}`);
      const alone = await runRecover(out, ref, root);
      expect(alone.code, alone.stderr).toBe(0);
      refs.push(await digests(ref));
    }
    expect(refs[0]!.size).toBe(CHANNELS);
    expect(refs[1]!.size).toBe(CHANNELS);
  }, 120_000);

  it(`a run that exits 0 has all its files in DIR; no mix, no leftovers (${ROUNDS} rounds)`, async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const dir = join(root, `out-${round}`);
      await mkdir(dir);
      // Each stops halfway through its publish until the other publishes (or waits to): the
      // two publishes meet on every round, whatever the machine's timing.
      const runs = checkpoints.map((cp) =>
        spawnFixture('cli-publish-rendezvous.ts', [
          String(CHANNELS / 2),
          'recover',
          cp,
          '--out',
          dir,
          '--spill-root',
          root,
          '--overwrite',
        ]),
      );
      for (const r of runs) r.proc.stdin!.end();
      const codes = await Promise.all(runs.map(async (r) => (await r.exited).code));
      const stderr = runs.map((r) => r.stderr).join('\n');
      outcomes.push(codes.join('/'));
      const now = await digests(dir);
      const whole = refs.map((ref) => [...ref].every(([n, d]) => now.get(n) === d));
      const ok = codes.map((c) => c === 0);
      // DIR is one run's output, complete and nothing else.
      expect(now.size, stderr).toBe(ok.some(Boolean) ? CHANNELS : 0);
      if (ok[0] && !ok[1]) expect(whole[0], stderr).toBe(true);
      if (ok[1] && !ok[0]) expect(whole[1], stderr).toBe(true);
      if (ok[0] && ok[1]) expect(whole[0] || whole[1], stderr).toBe(true);
      // Nothing of either run is left: only the channel files.
      expect((await readdir(dir)).filter((n) => !n.endsWith('.bin'))).toEqual([]);
    }
    console.log(`concurrent --overwrite exits (A/B per round): ${outcomes.join(', ')}`);
  }, 300_000);
});
