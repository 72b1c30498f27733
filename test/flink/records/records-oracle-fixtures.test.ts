/**
 * `flink records` equals Flink's own reading on every committed Writer fixture (issue 30, "done
 * means" 2): on the nine older real checkpoints (test/fixtures/flink/{1.20.5,2.3.0}-{file,inline,
 * merging,watermarks} and both checkpoints of 2.3.0-pair), `readFlinkRecords` with the job's type
 * `Tuple2<Long,String>` yields, on every operator/subtask/side and channel, exactly the elements
 * RecordsOracle wrote (interop/flink, `--job writer`: Flink's StreamElementSerializer over
 * TupleSerializer(Long, String), each gate's upstream read off Flink's job graph): values with
 * 64-bit integers exact, timestamps, kinds (records, watermarks), partial heads at the start of
 * output subpartitions with their bytes, input tails joined to the head of the upstream feeding
 * that gate; with stitching off each joined record is instead a partial tail of exactly the bytes
 * the input channel holds of it. `spillway flink records` (the CLI on dist/) prints the same lines
 * on one fixture.
 * Reads the committed `records/` trees only: no java needed.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFlinkRecords } from '../../../src/index.ts';
import { toJson } from '../../../src/services/formats/flink/records/json.ts';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  channelOf,
  compareWithRecordsOracle,
  parseExact,
  readRecordsOracle,
  sortedText,
  type OraclePipeline,
} from '../../helpers/flink-records-oracle.ts';
import { FLINK_FIXTURES_DIR, listFlinkFixtures } from '../../helpers/flink-expected.ts';
import { runCli } from '../../e2e/harness.ts';

interface Case {
  name: string;
  checkpoint: string;
  records: string;
  relocate: { from: string; to: string }[];
}

/** Each Writer fixture's checkpoint with its oracle tree; the pair's two checkpoints apart. */
function writerCases(): Case[] {
  const out: Case[] = listFlinkFixtures().map((f) => ({
    name: f.name,
    checkpoint: f.checkpoint,
    records: join(f.dir, 'records'),
    relocate: [{ from: f.originalJobDir, to: f.jobDir }],
  }));
  const pair = join(FLINK_FIXTURES_DIR, '2.3.0-pair');
  if (existsSync(pair)) {
    const job = readdirSync(pair).find((d) => /^[0-9a-f]{32}$/.test(d))!;
    for (const chk of readdirSync(join(pair, job)).sort()) {
      out.push({
        name: `2.3.0-pair ${chk}`,
        checkpoint: join(pair, job, chk),
        records: join(pair, 'records', chk),
        relocate: [],
      });
    }
  }
  return out;
}

const cases = writerCases();

describe('flink records equals Flink’s own reading on the committed Writer fixtures', () => {
  it('covers the eight fixtures with fixture.json and both checkpoints of the pair', () => {
    expect(cases.map((c) => c.name)).toEqual([
      '1.20.5-file',
      '1.20.5-inline',
      '1.20.5-merging',
      '1.20.5-watermarks',
      '2.3.0-file',
      '2.3.0-inline',
      '2.3.0-merging',
      '2.3.0-watermarks',
      '2.3.0-pair chk-2',
      '2.3.0-pair chk-3',
    ]);
  });

  for (const c of cases) {
    it(`${c.name}: every element of every operator/subtask/side, element for element`, async () => {
      const counts = await compareWithRecordsOracle(c.checkpoint, c.records, {
        relocate: c.relocate,
      });
      console.log(`${c.name}: ${JSON.stringify(counts)}`);
      expect(counts.record).toBeGreaterThan(1000);
      expect(counts.head, 'records cut between subtasks: heads at output starts').toBeGreaterThan(
        0,
      );
      expect(counts.stitched, 'each cut input tail joined to its head').toBe(counts.head);
      expect(counts.partial ?? 0, 'no piece left over once each gate’s upstream is named').toBe(
        counts.head,
      );
      if (c.name.endsWith('watermarks')) expect(counts.watermark).toBeGreaterThan(0);
    });

    it(`${c.name}: stitching off, each joined record is a partial tail of the bytes the channel holds`, async () => {
      const [p] = JSON.parse(
        readFileSync(join(c.records, 'types.json'), 'utf8'),
      ) as OraclePipeline[];
      const oracle = readRecordsOracle(c.records);
      let tails = 0;
      for (const subtask of [0, 1, 2]) {
        const mine = new Map<string, Record<string, unknown>[]>();
        for await (const e of readFlinkRecords({
          checkpoint: c.checkpoint,
          operator: p!.downstream!,
          subtask,
          type: 'Tuple2<Long,String>',
          stitch: false,
          relocate: c.relocate,
        })) {
          const key = channelOf(e as unknown as Record<string, unknown>);
          mine.set(key, [
            ...(mine.get(key) ?? []),
            parseExact(toJson(e)) as Record<string, unknown>,
          ]);
        }
        for (const [key, list] of mine) {
          const want = oracle.get(key)! as Record<string, unknown>[];
          expect(list.length, key).toBe(want.length);
          list.forEach((e, i) => {
            const w = want[i]!;
            if (w.stitched === undefined) {
              expect(sortedText(e), `${key} element ${i}`).toBe(sortedText(w));
              return;
            }
            // Flink's element: [int32 length][bytes]; the upstream holds stitched.bytes of it.
            const whole = 4 + Number((w.bytes as { n: string }).n);
            const head = Number(((w.stitched as Record<string, unknown>).bytes as { n: string }).n);
            expect(i, `${key}: the cut record is the channel's last element`).toBe(list.length - 1);
            expect(e.kind).toBe('partial');
            expect(e.end).toBe('tail');
            const piece = Buffer.from(e.value as string, 'base64');
            expect(piece.length, key).toBe(whole - head);
            expect(Number((e.bytes as { n: string }).n), key).toBe(whole - head);
            if (piece.length >= 4) expect(piece.readInt32BE(0), key).toBe(whole - 4);
            tails++;
          });
        }
      }
      expect(tails).toBeGreaterThan(0);
    });
  }
});

describe('spillway flink records prints Flink’s own reading (the CLI on dist/)', () => {
  const c = cases.find((x) => x.name === '1.20.5-merging')!;
  const [pipeline] = JSON.parse(
    readFileSync(join(c.records, 'types.json'), 'utf8'),
  ) as OraclePipeline[];
  const oracle = readRecordsOracle(c.records);

  /** Runs the CLI on one operator/subtask/side; checks each line against the oracle's channel. */
  async function expectSameAsOracle(extra: string[]): Promise<number> {
    const { code, stdout, stderr } = await runCli([
      'flink',
      'records',
      c.checkpoint,
      '--type',
      'Tuple2<Long,String>',
      '--relocate',
      `${c.relocate[0]!.from}=${c.relocate[0]!.to}`,
      ...extra,
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const byChannel = new Map<string, unknown[]>();
    for (const line of stdout.split('\n').filter((l) => l !== '')) {
      const e = parseExact(line) as Record<string, unknown>;
      const flat = Object.fromEntries(
        Object.entries(e).map(([k, v]) => [
          k,
          typeof v === 'object' && v !== null && 'n' in v ? Number((v as { n: string }).n) : v,
        ]),
      );
      const key = channelOf(flat);
      byChannel.set(key, [...(byChannel.get(key) ?? []), e]);
    }
    expect(byChannel.size).toBeGreaterThan(0);
    let n = 0;
    for (const [key, mine] of byChannel) {
      const want = oracle.get(key)!;
      expect(want, key).toBeDefined();
      expect(mine.map(sortedText), key).toEqual(want.map(sortedText));
      n += mine.length;
    }
    return n;
  }

  it(`${c.name}: slow-join's input (each gate's upstream named) and an upstream's output state`, async () => {
    const upstream = Object.entries(pipeline!.upstreams!).flatMap(([g, id]) => [
      '--upstream',
      `${g}=${id}`,
    ]);
    const input = await expectSameAsOracle([
      '--operator',
      pipeline!.downstream!,
      '--subtask',
      '0',
      ...upstream,
    ]);
    const output = await expectSameAsOracle([
      '--operator',
      pipeline!.upstreams!['0']!,
      '--subtask',
      '1',
      '--output-state',
    ]);
    console.log(`CLI on ${c.name}: ${input} input and ${output} output elements compared`);
    expect(input).toBeGreaterThan(50);
    expect(output).toBeGreaterThan(100);
  }, 60_000);
});
