/**
 * Counts that mean what they say (issue 30), on the committed real Flink fixtures through the
 * real CLI: "records kept" counts records only — watermarks and watermark statuses are counted
 * apart — and equal the oracle's (Flink's own deserializer) for the old subtasks Flink's restore
 * assigns; a key under which no record survives is warned about by name; a subtask that holds
 * only output state is refused with a hint at --output-state, --out never created; the report
 * names the operator and subtask and keeps input and output apart in --json.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  expectedRescales,
  FLINK_RANGE_FROM_3,
  listFlinkFixtures,
  type ExpectedKeyGroups,
  type FlinkFixture,
} from '../helpers/flink-expected.ts';
import { cutCompletions, WRITER_UPSTREAM_BY_GATE } from '../helpers/cut-completions.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { runRecover } from '../e2e/harness.ts';

const fixtures = listFlinkFixtures();
const relocate = (f: FlinkFixture) => ['--relocate', `${f.originalJobDir}=${f.jobDir}`];
const KEYED = 'b04c65efe1b1b80162da73517c40e7de';

describe.skipIf(fixtures.length === 0)('recover counts on real Flink checkpoints', () => {
  for (const f of fixtures.filter((x) => x.variant === 'watermarks')) {
    it(`${f.name}: records kept counts records only, watermarks apart, as Flink's restore sees them`, async () => {
      let seen = 0;
      let unassignedOnly = 0;
      let completions = 0;
      for (const r of expectedRescales(f.expected)) {
        const kg = JSON.parse(
          await readFile(join(r.dir, 'keygroups.json'), 'utf8'),
        ) as ExpectedKeyGroups;
        const assigned = FLINK_RANGE_FROM_3[`${r.index}/${r.parallelism}`]!;
        const mine = kg.channels.filter((c) => assigned.includes(c.oldSubtask));
        const watermarks = mine.reduce(
          (n, c) =>
            n +
            Object.entries(c.otherElements)
              .filter(([k]) => /^Watermark(Status)?:kept$/.test(k))
              .reduce((m, [, v]) => m + v, 0),
          0,
        );
        const base = await makeTempRoot();
        const run = await runRecover(f.checkpoint, join(base, 'out'), base, [
          '--operator',
          r.operator,
          '--rescale',
          `${r.index}/${r.parallelism}`,
          '--key',
          f.key,
          ...Object.entries(WRITER_UPSTREAM_BY_GATE).flatMap(([g, op]) => [
            '--upstream',
            `${g}=${op}`,
          ]),
          ...relocate(f),
          '--json',
        ]);
        expect(run.code, run.stderr).toBe(0);
        const { records } = JSON.parse(run.stdout) as { records: Record<string, number> };
        const label = `${r.index}/${r.parallelism}`;
        // Records cut at the end of an assigned old subtask's channel, completed from the
        // upstream's output state as Flink's restore completes them.
        const done = await cutCompletions(f.expected, r, kg, assigned);
        const completed = (kind: string, kept: boolean) =>
          done.filter((d) => d.kind === kind && d.framed !== undefined && d.kept === kept).length;
        expect(records.kept, label).toBe(
          mine.reduce((n, c) => n + c.kept.length, 0) + completed('record', true),
        );
        expect(records.watermarks, label).toBe(watermarks + completed('watermark', true));
        seen += watermarks;
        const all = kg.channels.reduce(
          (n, c) => n + Object.entries(c.otherElements).filter(([k]) => k.endsWith(':kept')).length,
          0,
        );
        if (all > 0 && watermarks === 0) unassignedOnly++;
        // Every whole record of every old subtask is read, and each completed one; none of
        // them is a watermark.
        expect(records.read, label).toBe(
          kg.keptRecords +
            kg.droppedRecords +
            completed('record', true) +
            completed('record', false),
        );
        expect(records.kept + records.dropped, label).toBe(records.read);
        // An assigned old subtask's channel that ends inside a record whose rest is not in the
        // checkpoint is said, not hidden.
        expect(records.cut, label).toBe(done.filter((d) => d.framed === undefined).length);
        completions += done.filter((d) => d.framed !== undefined).length;
      }
      // The fixture has watermarks, and some only in old subtasks a new one never reads.
      expect(seen).toBeGreaterThan(0);
      expect(completions).toBeGreaterThan(0);
      console.log(`${f.name}: ${unassignedOnly} rescale(s) whose watermarks are all unassigned`);
    }, 120_000);
  }

  const file = fixtures.find((x) => x.name === '2.3.0-file');

  it.skipIf(file === undefined)(
    'a subtask holding only output state: exit 2, one line hinting --output-state, --out never created',
    async () => {
      const base = await makeTempRoot();
      const out = join(base, 'out');
      const run = await runRecover(file!.checkpoint, out, base, [
        '--operator',
        'to-record-a',
        '--subtask',
        '0',
      ]);
      expect(run.code).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(/only output state \(3 subpartition\(s\)\): add --output-state/);
      expect(existsSync(out)).toBe(false);
    },
  );

  it.skipIf(file === undefined)(
    'a key under which no record survives is warned about by name; a key that keeps records is not',
    async () => {
      const base = await makeTempRoot();
      const rescale = (key: string, out: string) =>
        runRecover(file!.checkpoint, join(base, out), base, [
          '--operator',
          KEYED,
          '--rescale',
          '0/3',
          '--key',
          key,
          '--json',
        ]);
      const wrong = await rescale('bytes:3', 'a');
      expect(wrong.code, wrong.stderr).toBe(0);
      expect(JSON.parse(wrong.stdout).records.kept).toBe(0);
      expect(wrong.stderr).toMatch(/warning: no record of \d+ kept under --key bytes:3/);
      const right = await rescale('long', 'b');
      expect(JSON.parse(right.stdout).records.kept).toBeGreaterThan(0);
      expect(right.stderr).not.toMatch(/warning/);
    },
  );

  it.skipIf(file === undefined)(
    '--json names the operator and subtask and keeps input and output apart',
    async () => {
      const base = await makeTempRoot();
      const run = await runRecover(file!.checkpoint, join(base, 'out'), base, [
        '--operator',
        'slow-join',
        '--subtask',
        '1',
        '--output-state',
        '--json',
      ]);
      expect(run.code, run.stderr).toBe(0);
      const result = JSON.parse(run.stdout);
      expect(result).toMatchObject({ operator: KEYED, uid: 'slow-join', subtask: 1 });
      expect(result.input.channels).toBeGreaterThan(0);
      expect(result.input.bytes + (result.output?.bytes ?? 0)).toBe(result.bytes);
      expect(result.input.channels + (result.output?.channels ?? 0)).toBe(result.channels);
    },
  );
});
