/**
 * `recover --rescale P` (no I) writes every new subtask into `DIR/subtask-<i>/`, byte-identical
 * to the per-I runs (`--rescale I/P`) — on committed real Flink fixtures of both releases and on
 * an SPWC record checkpoint — and `--subtask` is no longer required beside `--rescale`. Real CLI
 * in child processes, real files.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listFlinkFixtures, type FlinkFixture } from '../helpers/flink-expected.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { listTree, runCli, runRecover, spillLeftovers } from '../e2e/harness.ts';

const fixtures = listFlinkFixtures().filter((f) =>
  ['1.20.5-file', '2.3.0-watermarks'].includes(f.name),
);
const KEYED = 'b04c65efe1b1b80162da73517c40e7de';

/** Every file under `dir` with its bytes (hex). */
async function files(dir: string): Promise<Map<string, string>> {
  const result = new Map<string, string>();
  for (const p of await listTree(dir)) {
    if (p.endsWith('.bin')) result.set(p, (await readFile(join(dir, p))).toString('hex'));
  }
  return result;
}

async function compareWithPerI(
  checkpoint: string,
  parallelism: number,
  extra: string[],
): Promise<void> {
  const base = await makeTempRoot();
  const all = join(base, 'all');
  const root = join(base, 'spill');
  await mkdir(root);
  const run = await runRecover(checkpoint, all, root, [
    '--rescale',
    String(parallelism),
    ...extra,
    '--json',
  ]);
  expect(run.code, run.stderr).toBe(0);
  const json = JSON.parse(run.stdout);
  expect(json.subtasks.map((s: { dir: string }) => s.dir)).toEqual(
    Array.from({ length: parallelism }, (_, i) => `subtask-${i}`),
  );
  const got = await files(all);
  const want = new Map<string, string>();
  for (let i = 0; i < parallelism; i++) {
    const one = join(base, `one-${i}`);
    const single = await runRecover(checkpoint, one, root, [
      '--rescale',
      `${i}/${parallelism}`,
      ...extra,
      '--json',
    ]);
    expect(single.code, single.stderr).toBe(0);
    for (const [p, v] of await files(one)) want.set(`subtask-${i}/${p}`, v);
    const alone = JSON.parse(single.stdout);
    // The counts of new subtask I are those of its own run ...
    expect(json.subtasks[i].input.records).toEqual(alone.records);
    expect(json.subtasks[i].input.bytes).toBe(alone.bytes);
    // ... and the checkpoint was read once: as many entries as one per-I run reads, not P×.
    expect(json.entries).toBe(alone.entries);
  }
  expect(got).toEqual(want);
  expect(got.size).toBeGreaterThan(0);
  expect(await spillLeftovers(root)).toEqual([]);
}

describe('recover --rescale P equals the per-I runs, from one read of the checkpoint', () => {
  for (const f of fixtures as FlinkFixture[]) {
    for (const p of [2, 3, 5]) {
      it(`${f.name}: --operator ${KEYED.slice(0, 8)}… --rescale ${p} (no --subtask)`, async () => {
        await compareWithPerI(f.checkpoint, p, [
          '--operator',
          KEYED,
          '--key',
          f.key,
          '--relocate',
          `${f.originalJobDir}=${f.jobDir}`,
        ]);
      }, 60_000);
    }
  }

  it('an SPWC record checkpoint: --rescale 3 equals --rescale 0/3, 1/3, 2/3', async () => {
    const dir = await makeTempRoot();
    const checkpoint = join(dir, 'records.spwc');
    const made = await runCli([
      'checkpoint',
      'make',
      '--out',
      checkpoint,
      '--records',
      '2000',
      '--subtasks',
      '2',
    ]);
    expect(made.code, made.stderr).toBe(0);
    await compareWithPerI(checkpoint, 3, []);
  }, 60_000);
});
