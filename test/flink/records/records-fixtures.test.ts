/**
 * `readFlinkRecords` on the committed real-Flink checkpoints (1.20.5 and 2.3.0, test/fixtures/
 * flink/): every element of every operator/subtask/side lies exactly where Flink's bytes (the
 * oracle's .bin files, read by Flink's own classes) put it — the framing accounts for every
 * byte, partial pieces sit at the very start of an output subpartition or the very end of an
 * input channel — every record decodes under `Tuple<Long, String>` with its key as the first
 * field, and each input tail joined to its upstream's output head is a whole record whose head
 * length is the one the output side found on its own.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readFlinkRecords, type FlinkElement } from '../../../src/index.ts';
import {
  expectedSubtasks,
  listFlinkFixtures,
  type FlinkFixture,
} from '../../helpers/flink-expected.ts';

const fixtures = listFlinkFixtures();

async function collect(
  f: FlinkFixture,
  operator: string,
  subtask: number,
  extra: Partial<Parameters<typeof readFlinkRecords>[0]> = {},
): Promise<FlinkElement[]> {
  const out: FlinkElement[] = [];
  for await (const e of readFlinkRecords({
    checkpoint: f.checkpoint,
    operator,
    subtask,
    relocate: [{ from: f.originalJobDir, to: f.jobDir }],
    ...extra,
  })) {
    out.push(e);
  }
  return out;
}

const channelOf = (e: FlinkElement): string =>
  e.side === 'input'
    ? `gate-${e.gate}-channel-${e.channel}`
    : `partition-${e.partition}-subpartition-${e.subpartition}`;

/** Walks Flink's bytes of one channel along the elements: every byte accounted for. */
function expectFramedExactly(bytes: Buffer, elements: FlinkElement[], where: string): void {
  let pos = 0;
  elements.forEach((e, i) => {
    expect(e.index, where).toBe(i);
    if (e.kind === 'partial') {
      const piece = Buffer.from(e.value as string, 'base64');
      expect(piece.length, where).toBe(e.bytes);
      if (e.end === 'head') {
        expect(i, `${where}: a head is the first element`).toBe(0);
        expect(piece.equals(bytes.subarray(0, e.bytes)), where).toBe(true);
      } else {
        expect(i, `${where}: a tail is the last element`).toBe(elements.length - 1);
        expect(piece.equals(bytes.subarray(pos)), where).toBe(true);
      }
      pos += e.bytes;
      return;
    }
    expect(bytes.readInt32BE(pos), `${where} element ${i}: its length field`).toBe(e.bytes);
    if (e.kind === 'record') {
      const valueAt = pos + 4 + (e.timestamp !== undefined ? 9 : 1);
      expect(bytes[pos + 4], where).toBe(e.timestamp !== undefined ? 0 : 1);
      expect(
        Buffer.from(e.value as string, 'base64').equals(bytes.subarray(valueAt, pos + 4 + e.bytes)),
        where,
      ).toBe(true);
    }
    pos += 4 + e.bytes;
  });
  expect(pos, `${where}: every byte is in an element`).toBe(bytes.length);
}

describe.runIf(fixtures.length > 0)('flink records on real Flink checkpoints', () => {
  for (const f of fixtures) {
    it(`${f.name}: every element lies where Flink's bytes put it, partial pieces at the ends`, async () => {
      let partials = 0;
      for (const s of expectedSubtasks(f.expected)) {
        for (const [outputState, files] of [
          [false, s.inputFiles],
          [true, s.outputFiles],
        ] as const) {
          if (files.length === 0) continue;
          const elements = await collect(f, s.operator, s.subtask, { outputState });
          const byChannel = new Map<string, FlinkElement[]>();
          for (const e of elements) {
            const k = channelOf(e);
            byChannel.set(k, [...(byChannel.get(k) ?? []), e]);
          }
          expect([...byChannel.keys()].sort()).toEqual(
            files.map((x) => x.replace(/\.bin$/, '')).sort(),
          );
          for (const file of files) {
            const key = file.replace(/\.bin$/, '');
            const list = byChannel.get(key)!;
            partials += list.filter((e) => e.kind === 'partial').length;
            expectFramedExactly(
              readFileSync(join(s.dir, file)),
              list,
              `${f.name} ${s.operator}/${s.subtask}/${key}`,
            );
          }
        }
      }
      expect(partials, 'real checkpoints cut records between subtasks').toBeGreaterThan(0);
    });

    it(`${f.name}: records decode as Tuple<Long, String>, the key is the first field, tails join their upstream's head`, async () => {
      const outputs = expectedSubtasks(f.expected).filter((s) => s.outputFiles.length > 0);
      // Which upstream writes which records: to-record-a's strings start with 'a', b's with 'b'.
      const upstreamOf = new Map<string, string>();
      const heads = new Map<string, number>();
      for (const s of outputs) {
        for (const e of await collect(f, s.operator, s.subtask, {
          outputState: true,
          type: 'Tuple<Long, String>',
        })) {
          if (e.side !== 'output') continue;
          if (e.kind === 'record') upstreamOf.set((e.value as [bigint, string])[1][0]!, s.operator);
          if (e.kind === 'partial')
            heads.set(`${s.operator}/${s.subtask}/${e.partition}/${e.subpartition}`, e.bytes);
        }
      }
      expect([...upstreamOf.keys()].sort()).toEqual(['a', 'b']);
      const keyed = expectedSubtasks(f.expected).filter((s) => s.operator === f.keyedOperator);
      // Gate → letter, read off the records of the keyed operator's input.
      const gateLetter = new Map<number, string>();
      for (const s of keyed) {
        for (const e of await collect(f, s.operator, s.subtask, { type: 'Tuple<Long, String>' })) {
          if (e.side === 'input' && e.kind === 'record')
            gateLetter.set(e.gate, (e.value as [bigint, string])[1][0]!);
        }
      }
      const upstream = Object.fromEntries([...gateLetter].map(([g, l]) => [g, upstreamOf.get(l)!]));
      let stitched = 0;
      for (const s of keyed) {
        const elements = await collect(f, s.operator, s.subtask, {
          type: 'Tuple<Long, String>',
          key: 'long',
          upstream,
        });
        for (const e of elements) {
          if (e.side !== 'input') continue;
          if (e.kind === 'record') {
            const [k, v] = e.value as [bigint, string];
            expect(e.key).toBe(k);
            expect(typeof k).toBe('bigint');
            expect(v[0]).toBe(gateLetter.get(e.gate));
            expect(e.keyGroup).toBeGreaterThanOrEqual(0);
          }
          if (e.stitched !== undefined) {
            stitched++;
            expect(e.stitched.subtask).toBe(e.channel);
            expect(e.stitched.subpartition).toBe(s.subtask);
            const head = heads.get(
              `${e.stitched.operator}/${e.stitched.subtask}/${e.stitched.partition}/${e.stitched.subpartition}`,
            );
            expect(
              head,
              `the upstream's own head for ${channelOf(e)} of subtask ${s.subtask}`,
            ).toBe(e.stitched.bytes);
          }
          expect(e.kind, 'with the upstream named, no tail is left partial').not.toBe('partial');
        }
      }
      expect(stitched).toBeGreaterThan(0);
    });
  }
});
