/**
 * Record and watermark counts (issue 30, DESIGN §8): `flink ls --channels` with `--type` or
 * `--key` says per input channel / output subpartition how many records, watermarks, other
 * elements and partial record pieces its bytes hold, and the subtask, operator and checkpoint
 * sums; `flink report` shows them; `flink diff --type` puts records beside bytes. The truth is
 * Flink's own reading of the committed typed fixtures (RecordsOracle's records.jsonl): each
 * channel is counted from its own bytes, so an element the oracle joined across an input
 * channel's tail and the upstream's head counts as a partial piece there, never as a record.
 */
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listFlinkCheckpoint } from '../../src/index.ts';
import type { FlinkCheckpointDiff } from '../../src/services/formats/flink/diff.ts';
import type { FlinkCheckpointListing } from '../../src/services/formats/flink/list.ts';
import { readFlinkMetadata } from '../../src/services/formats/flink/metadata.ts';
import { countFlinkElements, countKey } from '../../src/services/formats/flink/records/count.ts';
import type { FlinkElementCounts } from '../../src/services/formats/flink/records/element-counts.ts';
import { channelLabel } from '../../src/services/formats/flink/report/model.ts';
import { runCli } from '../e2e/harness.ts';
import {
  expectedRescales,
  FLINK_FIXTURES_DIR,
  listFlinkFixtures,
  readExpectedKeyGroups,
} from '../helpers/flink-expected.ts';
import { typedFixtures } from '../helpers/flink-records-oracle.ts';
import { removeDir, tempDir } from '../helpers/temp.ts';

const fixtures = typedFixtures(join(FLINK_FIXTURES_DIR, 'typed'));

interface Pipeline {
  name: string;
  spec: string;
  upstream: string;
  downstream: string;
}

/** Per channel (countKey), the oracle's elements counted as one channel's bytes count them. */
function oracleCounts(expected: string): Map<string, FlinkElementCounts> {
  const out = new Map<string, FlinkElementCounts>();
  for (const line of readFileSync(join(expected, 'records.jsonl'), 'utf8').split('\n')) {
    if (line === '') continue;
    // Positions and kinds only: no 64-bit value is looked at.
    const e = JSON.parse(line) as Record<string, unknown> & { kind: string; stitched?: unknown };
    const key =
      e.side === 'input'
        ? countKey(
            e.operator as string,
            e.subtask as number,
            'input',
            e.gate as number,
            e.channel as number,
          )
        : countKey(
            e.operator as string,
            e.subtask as number,
            'output',
            e.partition as number,
            e.subpartition as number,
          );
    const c = out.get(key) ?? { records: 0, watermarks: 0, otherElements: 0, partial: 0 };
    if (e.kind === 'partial' || e.stitched !== undefined) c.partial++;
    else if (e.kind === 'record') c.records++;
    else if (e.kind === 'watermark') c.watermarks++;
    else c.otherElements++;
    out.set(key, c);
  }
  return out;
}

/** Per channel (countKey), the counts a listing carries. */
function listedCounts(listing: FlinkCheckpointListing): Map<string, FlinkElementCounts> {
  const out = new Map<string, FlinkElementCounts>();
  for (const op of listing.operators) {
    for (const s of op.subtasks) {
      for (const c of s.channels ?? []) {
        const [gate, channel] =
          c.side === 'input' ? [c.gate, c.channel] : [c.partition, c.subpartition];
        const { records, watermarks, otherElements, partial } = c;
        out.set(countKey(op.id, s.index, c.side, gate, channel), {
          records: records!,
          watermarks: watermarks!,
          otherElements: otherElements!,
          partial: partial!,
        });
      }
    }
  }
  return out;
}

const zero = { records: 0, watermarks: 0, otherElements: 0, partial: 0 };

describe('counts equal Flink’s own reading (committed typed fixtures)', () => {
  it('has a typed fixture for 1.20.5 and for 2.3.0', () => {
    expect(fixtures.map((f) => f.release)).toEqual(['1.20.5', '2.3.0']);
  });

  for (const f of fixtures) {
    describe(f.release, () => {
      const oracle = oracleCounts(f.expected);

      it('flink ls --channels --key long --json: every channel’s records, watermarks, other elements and partial pieces are the oracle’s; subtask, operator and checkpoint are their sums', async () => {
        const r = await runCli([
          'flink',
          'ls',
          f.checkpoint,
          '--channels',
          '--key',
          'long',
          '--json',
        ]);
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        const listing = JSON.parse(r.stdout) as FlinkCheckpointListing;
        const ours = listedCounts(listing);
        for (const [key, want] of oracle) expect(ours.get(key), key).toEqual(want);
        // Every other listed channel holds nothing the oracle saw.
        for (const [key, got] of ours) if (!oracle.has(key)) expect(got, key).toEqual(zero);
        const sum = (xs: readonly Partial<FlinkElementCounts>[], k: keyof FlinkElementCounts) =>
          xs.reduce((n, x) => n + x[k]!, 0);
        for (const k of ['records', 'watermarks', 'otherElements', 'partial'] as const) {
          for (const op of listing.operators) {
            for (const s of op.subtasks) expect(s[k]).toBe(sum(s.channels!, k));
            expect(op[k]).toBe(sum(op.subtasks, k));
          }
          expect(listing[k]).toBe(sum(listing.operators, k));
          expect(listing[k]).toBe(sum([...oracle.values()], k));
        }
        expect(listing.records).toBeGreaterThan(100);
        expect(listing.watermarks).toBeGreaterThan(0);
        expect(listing.partial).toBeGreaterThan(0);
        // The library's listing is the CLI's.
        expect(await listFlinkCheckpoint(f.checkpoint, { channels: true, key: 'long' })).toEqual(
          listing,
        );
      });

      it('--type of each pipeline counts its operators as the oracle does (values decoded by that type)', async () => {
        const meta = await readFlinkMetadata(f.checkpoint);
        const pipelines = JSON.parse(
          readFileSync(join(f.expected, 'types.json'), 'utf8'),
        ) as Pipeline[];
        for (const p of pipelines) {
          const counts = await countFlinkElements(meta, { type: p.spec }, [
            p.upstream,
            p.downstream,
          ]);
          const mine = [...oracle].filter(
            ([k]) => k.startsWith(p.upstream) || k.startsWith(p.downstream),
          );
          expect(mine.length, p.name).toBeGreaterThan(0);
          for (const [key, want] of mine)
            expect(counts.get(key) ?? zero, `${p.name} ${key}`).toEqual(want);
          expect(counts.size, p.name).toBe(mine.length);
        }
      });

      it('the table: counts beside bytes per channel, and the totals', async () => {
        const pipelines = JSON.parse(
          readFileSync(join(f.expected, 'types.json'), 'utf8'),
        ) as Pipeline[];
        const p = pipelines.find((x) => x.name === 'tuple3')!;
        const r = await runCli([
          'flink',
          'ls',
          f.checkpoint,
          '--operator',
          p.downstream,
          '--channels',
          '--type',
          p.spec,
        ]);
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toMatch(
          /subtask\s+channel\s+bytes\s+entries\s+records\s+watermarks\s+other\s+partial/,
        );
        const want = [...oracle].filter(([k]) => k.startsWith(p.downstream)).map(([, c]) => c);
        const records = want.reduce((n, c) => n + c.records, 0);
        expect(r.stdout).toContain(`elements: ${records} record(s), `);
        for (const [key, c] of oracle) {
          if (!key.startsWith(p.downstream)) continue;
          const [, subtask, , gate, channel] = key.split('/');
          expect(r.stdout).toMatch(
            new RegExp(
              `^\\s+${subtask}\\s+input gate ${gate} channel ${channel}\\s+\\S+ \\S+\\s+\\d+\\s+${c.records}\\s+${c.watermarks}\\s+${c.otherElements}\\s+${c.partial}$`,
              'm',
            ),
          );
        }
      });
    });
  }
});

describe('counts equal Flink’s own reading (the eight other real fixtures: the keyed operator’s input)', () => {
  // Their oracle deserialized every element of the keyed operator's input channels with Flink's
  // StreamElementSerializer for the rescale expectations (keygroups.json): per old subtask,
  // gate and channel, the records (kept + dropped), the watermarks and a cut tail.
  const others = listFlinkFixtures();
  it('there are real fixtures', () => expect(others.length).toBeGreaterThan(0));
  for (const f of others) {
    it(`${f.name}: records, watermarks and the partial tail of every input channel of ${f.keyedOperator.slice(0, 8)}…`, async () => {
      const want = new Map<string, FlinkElementCounts>();
      for (const r of expectedRescales(f.expected)) {
        if (r.operator !== f.keyedOperator) continue;
        for (const c of readExpectedKeyGroups(r.dir).channels) {
          const key = countKey(f.keyedOperator, c.oldSubtask, 'input', c.gate, c.channel);
          const counts = {
            records: c.kept.length + c.droppedRecords,
            watermarks: Object.entries(c.otherElements)
              .filter(([k]) => k.startsWith('Watermark:'))
              .reduce((n, [, v]) => n + v, 0),
            otherElements: Object.entries(c.otherElements)
              .filter(([k]) => !k.startsWith('Watermark:'))
              .reduce((n, [, v]) => n + v, 0),
            partial: c.trailingBytes > 0 ? 1 : 0,
          };
          // Every rescale of one old subtask read the same channel: the same counts.
          expect(want.get(key) ?? counts, key).toEqual(counts);
          want.set(key, counts);
        }
      }
      expect(want.size).toBeGreaterThan(0);
      const listing = await listFlinkCheckpoint(f.checkpoint, {
        channels: true,
        key: 'long',
        relocate: [{ from: f.originalJobDir, to: f.jobDir }],
      });
      const ours = listedCounts(listing);
      for (const [key, counts] of want) expect(ours.get(key), key).toEqual(counts);
      const keyed = [...ours].filter(
        ([k]) => k.startsWith(`${f.keyedOperator}/`) && k.includes('/input/'),
      );
      expect(keyed.map(([k]) => k).sort()).toEqual([...want.keys()].sort());
    });
  }
});

describe('counting refuses what it cannot read, in one line', () => {
  const f = fixtures[0]!;
  it('a value that does not parse under --type: exit 2, one line naming the operator, subtask, channel and element, nothing on stdout', async () => {
    const r = await runCli([
      'flink',
      'ls',
      f.checkpoint,
      '--type',
      'Tuple<Long, Integer, String>',
      '--json',
    ]);
    expect(r.code).toBe(2);
    const error = (JSON.parse(r.stdout) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('ERR_SPILLWAY_CORRUPT_CHECKPOINT');
    expect(error.message).toMatch(
      /operator [0-9a-f]{32}.* subtask \d+: (input gate \d+ channel \d+|output partition \d+ subpartition \d+) element \d+: /,
    );
    const text = await runCli([
      'flink',
      'ls',
      f.checkpoint,
      '--type',
      'Tuple<Long, Integer, String>',
    ]);
    expect(text.code).toBe(2);
    expect(text.stdout).toBe('');
    expect(text.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('flink report and flink diff under a --type the values do not have: exit 2, one line, no page and nothing beside it', async () => {
    const dir = await tempDir();
    try {
      const type = 'Tuple<Long, Integer, String>';
      const r = await runCli([
        'flink',
        'report',
        f.checkpoint,
        '--out',
        join(dir, 'r.html'),
        '--type',
        type,
      ]);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(
        /corrupt checkpoint at byte \d+: operator .* subtask \d+: .* element \d+: /,
      );
      expect(r.stderr).not.toContain('    at ');
      expect(await readdir(dir)).toEqual([]);
      const d = await runCli(['flink', 'diff', f.checkpoint, f.checkpoint, '--type', type]);
      expect(d.code).toBe(2);
      expect(d.stdout).toBe('');
      expect(d.stderr.trim().split('\n')).toHaveLength(1);
    } finally {
      await removeDir(dir);
    }
  });

  it('a --type syntax error points at the character, before anything is read; --relocate without counting is a usage error', async () => {
    const r = await runCli(['flink', 'ls', f.checkpoint, '--type', 'Tuple<Long,>']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('at character 12');
    const u = await runCli([
      'flink',
      'report',
      f.checkpoint,
      '--out',
      '/nonexistent/x.html',
      '--relocate',
      'a=b',
    ]);
    expect(u.code).toBe(2);
    expect(u.stderr).toContain('needs --type or --key');
  });
});

describe('flink report and flink diff show the counts', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await removeDir(d);
  });

  it('flink report --key long: the page’s record and watermark cards are the checkpoint’s counts; without --key it has none', async () => {
    const f = fixtures[1] ?? fixtures[0]!;
    const dir = await tempDir();
    dirs.push(dir);
    const listing = await listFlinkCheckpoint(f.checkpoint, { channels: true, key: 'long' });
    const r = await runCli([
      'flink',
      'report',
      f.checkpoint,
      '--out',
      join(dir, 'r.html'),
      '--key',
      'long',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      `${listing.records} record(s) and ${listing.watermarks} watermark(s)`,
    );
    const html = await readFile(join(dir, 'r.html'), 'utf8');
    const card = (label: string) =>
      new RegExp(`<div class="label">${label}</div><b>([\\d,]+)</b>`).exec(html)?.[1];
    expect(card('records')).toBe(listing.records!.toLocaleString('en-US'));
    expect(card('watermarks')).toBe(listing.watermarks!.toLocaleString('en-US'));
    expect(html).toContain('<th>records</th><th>watermarks</th>');
    const plain = await runCli(['flink', 'report', f.checkpoint, '--out', join(dir, 'p.html')]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(await readFile(join(dir, 'p.html'), 'utf8')).not.toContain('<th>records</th>');
  });

  it('flink diff --type: per channel, records and watermarks of A and B beside the bytes, each equal to flink ls of that checkpoint', async () => {
    const job = join(FLINK_FIXTURES_DIR, '2.3.0-pair', '7036eeddfce3a8f1f84b57fd6a2302a4');
    const [A, B] = [join(job, 'chk-2'), join(job, 'chk-3')];
    const type = 'Tuple<Long, String>';
    const r = await runCli(['flink', 'diff', A, B, '--type', type, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const diff = JSON.parse(r.stdout) as FlinkCheckpointDiff;
    const per = async (chk: string) => {
      const listing = await listFlinkCheckpoint(chk, { channels: true, type });
      const out = new Map<string, number>();
      for (const op of listing.operators)
        for (const s of op.subtasks)
          for (const c of s.channels ?? [])
            out.set(`${op.id}/${s.index}/${channelLabel(c)}`, c.records!);
      return { listing, out };
    };
    const [a, b] = [await per(A), await per(B)];
    expect(diff.records).toEqual({
      a: a.listing.records,
      b: b.listing.records,
      change: b.listing.records! - a.listing.records!,
    });
    let changed = 0;
    for (const c of diff.channels) {
      const key = `${c.operator}/${c.subtask}/${c.channel}`;
      expect(c.records, key).toEqual({
        a: a.out.get(key) ?? 0,
        b: b.out.get(key) ?? 0,
        change: (b.out.get(key) ?? 0) - (a.out.get(key) ?? 0),
      });
      if (c.records!.change !== 0) changed++;
    }
    expect(changed).toBeGreaterThan(0);
    const text = await runCli(['flink', 'diff', A, B, '--type', type]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^records \d+ → \d+ \([-+]?\d+\), watermarks \d+ → \d+/m);
    expect(text.stdout).toMatch(/change\s+records\s+watermarks/);
  });
});
