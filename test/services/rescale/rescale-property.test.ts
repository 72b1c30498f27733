/**
 * Issue 16, "done means": for a v2 checkpoint written by several old subtasks, recovering as
 * every new subtask I of P gives outputs whose records, together, are each original record
 * exactly once, and each subtask's output equals the in-test reference
 * (test/helpers/rescale-reference.ts) byte for byte. Random P, M, K, records, entry cuts
 * (inside length fields too), interleavings and read-chunk sizes; the real task, real files.
 */
import { fc, test } from '@fast-check/vitest';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import type { RescaleOption } from '../../../src/services/rescale/rescale-options.ts';
import { makeTempRoot } from '../../helpers/temp.ts';
import {
  cutAt,
  parseRecords,
  refDefaultMaxParallelism,
  referenceFilter,
  serializeRecord,
  type V2Entry,
} from '../../helpers/rescale-reference.ts';
import { recoverBytes, writeV2 } from '../../helpers/v2-checkpoints.ts';
import { listTree } from '../../e2e/harness.ts';

interface Shape {
  entries: V2Entry[];
  /** Every record body, in virtual-channel order. */
  records: Buffer[];
}

/** Records per virtual channel, cut and interleaved into v2 entries. */
const shapeArb = (minBody: number): fc.Arbitrary<Shape> =>
  fc
    .record({
      subtasks: fc.integer({ min: 1, max: 3 }),
      gates: fc.integer({ min: 1, max: 2 }),
      channels: fc.integer({ min: 1, max: 2 }),
    })
    .chain(({ subtasks, gates, channels }) => {
      const n = subtasks * gates * channels;
      const stream = fc.record({
        bodies: fc.array(fc.uint8Array({ minLength: minBody, maxLength: minBody + 24 }), {
          maxLength: 6,
        }),
        cuts: fc.array(fc.nat({ max: 400 }), { maxLength: 8 }),
        empties: fc.nat({ max: 2 }),
      });
      return fc
        .tuple(
          fc.array(stream, { minLength: n, maxLength: n }),
          fc.array(fc.nat(), { maxLength: 60 }),
        )
        .map(([streams, picks]) => {
          const queues: V2Entry[][] = [];
          const records: Buffer[] = [];
          streams.forEach((s, v) => {
            const subtask = Math.floor(v / (gates * channels));
            const gate = Math.floor(v / channels) % gates;
            const channel = v % channels;
            const bodies = s.bodies.map((b) => Buffer.from(b));
            records.push(...bodies);
            const bytes = Buffer.concat(bodies.map(serializeRecord));
            const pieces = bytes.length === 0 ? [] : cutAt(bytes, s.cuts);
            // Zero-length entries go anywhere in the stream: they cut nothing.
            for (let e = 0; e < s.empties; e++)
              pieces.splice(e % (pieces.length + 1), 0, Buffer.alloc(0));
            queues.push(pieces.map((payload) => ({ subtask, gate, channel, payload })));
          });
          const entries: V2Entry[] = [];
          let k = 0;
          for (;;) {
            const active = queues.filter((q) => q.length > 0);
            if (active.length === 0) break;
            const pick = k < picks.length ? picks[k]! : k;
            k++;
            entries.push(active[pick % active.length]!.shift()!);
          }
          return { entries, records };
        });
    });

/** Recovers `file` with `rescale` and limits that cut everything small. */
function recoverAs(file: string, root: string, rescale: RescaleOption, readChunkBytes: number) {
  return recoverBytes(file, root, {
    rescale,
    limits: { readChunkBytes, maxSegmentBytes: 64, maxSpillFileBytes: 256, bufferBytes: 32 },
  });
}

const sortedHex = (records: Buffer[]) => records.map((r) => r.toString('hex')).sort();

describe('rescaled recovery as a property', () => {
  test.prop(
    [
      shapeArb(12),
      fc.integer({ min: 1, max: 4 }),
      fc.option(fc.integer({ min: 0, max: 252 }), { nil: undefined }),
      fc.integer({ min: 0, max: 12 }),
      fc.integer({ min: 1, max: 64 }),
    ],
    { numRuns: 25 },
  )(
    'every record lands in exactly one new subtask, each output equal to the reference byte for byte',
    async (shape, p, extraM, k, readChunkBytes) => {
      const m = extraM === undefined ? refDefaultMaxParallelism(p) : p + extraM;
      const dir = await makeTempRoot();
      const root = join(dir, 'root');
      await mkdir(root);
      const file = join(dir, 'v2.spwc');
      await writeV2(file, shape.entries);
      const together: Buffer[] = [];
      for (let i = 0; i < p; i++) {
        const rescale = { subtask: i, parallelism: p, keyBytes: k, maxParallelism: m };
        const { out, report } = await recoverAs(file, root, rescale, readChunkBytes);
        const want = referenceFilter(shape.entries, { i, p, m, k });
        expect([...out.keys()].sort()).toEqual([...want.keys()].sort());
        let kept = 0;
        for (const [key, bytes] of want) {
          expect(out.get(key)!.toString('hex'), `subtask ${i}, ${key}`).toBe(bytes.toString('hex'));
          const records = parseRecords(out.get(key)!);
          kept += records.length;
          together.push(...records);
        }
        expect(report.records).toEqual({
          read: shape.records.length,
          kept,
          dropped: shape.records.length - kept,
        });
      }
      expect(sortedHex(together)).toEqual(sortedHex(shape.records));
      expect((await listTree(root)).filter((f) => /task-|spill-segment/.test(f))).toEqual([]);
    },
  );

  test.prop([shapeArb(0), fc.integer({ min: 1, max: 64 }), fc.nat({ max: 7 })], { numRuns: 15 })(
    'a keep(record, from) predicate keeps exactly the records it accepts, as the reference does',
    async (shape, readChunkBytes, bit) => {
      const dir = await makeTempRoot();
      const root = join(dir, 'root');
      await mkdir(root);
      const file = join(dir, 'v2.spwc');
      await writeV2(file, shape.entries);
      const keep = (r: Buffer) => r.length === 0 || ((r[r.length - 1]! >> bit) & 1) === 1;
      const seen: { subtask: number; gate: number; channel: number }[] = [];
      const { out } = await recoverAs(
        file,
        root,
        {
          keep: (record, from) => {
            seen.push(from);
            return keep(record);
          },
        },
        readChunkBytes,
      );
      const want = referenceFilter(shape.entries, { keep });
      for (const [key, bytes] of want) expect(out.get(key)!.equals(bytes), key).toBe(true);
      expect(seen.length).toBe(shape.records.length);
    },
  );
});
