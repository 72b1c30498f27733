/**
 * A record cut at the end of an old subtask's input channel is completed under `--rescale`
 * from the upstream's output state, as Flink's restore completes it — never silently dropped.
 * Where the bytes cannot tell which operator feeds a gate (the test job's two sources write
 * look-alike records) it stays cut and the report says so, until `--upstream GATE=OP` names
 * them; a checkpoint without the upstream's output state leaves it cut, said the same way.
 * Real CLI in child processes on the committed real Flink fixtures (1.20.5 and 2.3.0).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listFlinkFixtures } from '../helpers/flink-expected.ts';
import { WRITER_UPSTREAM_BY_GATE } from '../helpers/cut-completions.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { runRecover } from '../e2e/harness.ts';

const KEYED = 'b04c65efe1b1b80162da73517c40e7de';
const fixtures = listFlinkFixtures().filter((f) => ['1.20.5-file', '2.3.0-file'].includes(f.name));
const upstream = Object.entries(WRITER_UPSTREAM_BY_GATE).flatMap(([g, op]) => [
  '--upstream',
  `${g}=${op}`,
]);

describe.skipIf(fixtures.length === 0)('--rescale completes cut records from upstream', () => {
  for (const f of fixtures) {
    const relocate = ['--relocate', `${f.originalJobDir}=${f.jobDir}`];
    it(`${f.name}: with --upstream every cut record of an assigned old subtask is completed (cut 0, more records read); without it, look-alike upstreams leave some cut and the report says so`, async () => {
      const base = await makeTempRoot();
      const run = (out: string, extra: string[]) =>
        runRecover(f.checkpoint, join(base, out), base, [
          '--operator',
          KEYED,
          '--rescale',
          '0/2',
          '--key',
          f.key,
          ...relocate,
          ...extra,
        ]);
      const named = await run('named', [...upstream, '--json']);
      expect(named.code, named.stderr).toBe(0);
      const withUpstream = JSON.parse(named.stdout).records;
      expect(withUpstream.cut).toBe(0);
      const guessed = await run('guessed', ['--json']);
      expect(guessed.code, guessed.stderr).toBe(0);
      const alone = JSON.parse(guessed.stdout).records;
      // What was not completed is counted, and the completed ones are records read.
      expect(alone.read + alone.cut).toBe(withUpstream.read);
      const text = await run('text', []);
      expect(text.code, text.stderr).toBe(0);
      if (alone.cut > 0) expect(text.stderr).toMatch(/records cut, not completed\s+\d+/);
    }, 60_000);
  }

  const f = fixtures.find((x) => x.name === '2.3.0-file');
  it.skipIf(f === undefined)(
    'a gate whose named upstream has no output state in the checkpoint: its cut records stay cut, counted and said',
    async () => {
      const base = await makeTempRoot();
      // The keyed operator itself feeds nothing and holds no output state: nothing completes.
      const run = await runRecover(f!.checkpoint, join(base, 'out'), base, [
        '--operator',
        KEYED,
        '--rescale',
        '0/2',
        '--key',
        f!.key,
        '--upstream',
        `0=${KEYED}`,
        '--upstream',
        `1=${KEYED}`,
      ]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/records cut, not completed\s+[1-9]/);
    },
    60_000,
  );

  it('--upstream without --rescale, or naming no operator: exit 2, one line', async () => {
    const f0 = fixtures[0]!;
    const base = await makeTempRoot();
    const lone = await runRecover(f0.checkpoint, join(base, 'a'), base, [
      '--operator',
      KEYED,
      '--subtask',
      '0',
      '--upstream',
      '0=to-record-a',
      ...['--relocate', `${f0.originalJobDir}=${f0.jobDir}`],
    ]);
    expect(lone.code).toBe(2);
    expect(lone.stderr.trim().split('\n')).toHaveLength(1);
    expect(lone.stderr).toMatch(/--upstream needs --rescale/);
    const typo = await runRecover(f0.checkpoint, join(base, 'b'), base, [
      '--operator',
      KEYED,
      '--rescale',
      '0/2',
      '--upstream',
      '0=no-such-operator',
      ...['--relocate', `${f0.originalJobDir}=${f0.jobDir}`],
    ]);
    expect(typo.code).toBe(2);
    expect(typo.stderr.trim().split('\n')).toHaveLength(1);
  }, 60_000);
});
