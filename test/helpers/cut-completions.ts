/**
 * What Flink's restore makes of a record cut at the end of an old subtask's input channel, from
 * the oracle's own files (Flink's bytes, read by Flink's classes): the channel's raw payload
 * ends with `trailingBytes` of a record (keygroups.json), whose rest heads the upstream
 * subtask's raw output subpartition (`<upstream>/subtask-<channel>/partition-0-subpartition-
 * <old subtask>.bin`). Restoring, Flink feeds both to one deserializer: the record is whole and
 * kept by new subtask I if its key maps there (a watermark always). Independent of Spillway's
 * join: plain byte arithmetic on the oracle's files.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { keyHash } from '../../src/services/formats/flink/stream-element.ts';
import { operatorForKeyHash } from '../../src/services/rescale/key-groups.ts';
import type { ExpectedKeyGroups, ExpectedRescale } from './flink-expected.ts';

/**
 * The Writer job (interop/flink): `a.keyBy(…).connect(b.keyBy(…))` into slow-join, so gate 0
 * is fed by to-record-a and gate 1 by to-record-b (ids from their uids, both releases).
 */
export const WRITER_UPSTREAM_BY_GATE: Readonly<Record<number, string>> = {
  0: '75a8463fc951dbeecf93ec4dce2ad287',
  1: '31636f66a6463785898b8304801d1def',
};

/** One cut tail and what the restore made of it. */
export interface CutCompletion {
  readonly oldSubtask: number;
  readonly gate: number;
  readonly channel: number;
  /** The whole element, framed `[int32 length][element]`; undefined: its rest is not there. */
  readonly framed?: Buffer;
  /** Whether new subtask I keeps it (a record of its key groups, or a watermark). */
  readonly kept: boolean;
  readonly kind: 'record' | 'watermark' | 'other';
}

/**
 * The cut tails of the old subtasks `assigned` to new subtask `r.index`, completed from the
 * upstream's output state as Flink's restore completes them, by old subtask ascending.
 */
export async function cutCompletions(
  expected: string,
  r: ExpectedRescale,
  kg: ExpectedKeyGroups,
  assigned: readonly number[],
): Promise<CutCompletion[]> {
  const out: CutCompletion[] = [];
  const cut = kg.channels
    .filter((c) => c.trailingBytes > 0 && assigned.includes(c.oldSubtask))
    .sort((a, b) => a.oldSubtask - b.oldSubtask);
  for (const c of cut) {
    const input = await readFile(
      join(
        expected,
        r.operator,
        `subtask-${c.oldSubtask}`,
        `gate-${c.gate}-channel-${c.channel}.bin`,
      ),
    );
    const tail = input.subarray(input.length - c.trailingBytes);
    const upstream = WRITER_UPSTREAM_BY_GATE[c.gate]!;
    const headFile = join(
      expected,
      upstream,
      `subtask-${c.channel}`,
      `partition-0-subpartition-${c.oldSubtask}.bin`,
    );
    const head = existsSync(headFile) ? await readFile(headFile) : Buffer.alloc(0);
    const joined = Buffer.concat([tail, head]);
    const where = { oldSubtask: c.oldSubtask, gate: c.gate, channel: c.channel };
    if (joined.length < 4 || joined.length < 4 + joined.readInt32BE(0)) {
      out.push({ ...where, kept: false, kind: 'other' });
      continue;
    }
    const framed = joined.subarray(0, 4 + joined.readInt32BE(0));
    const tag = framed[4];
    if (tag === 0 || tag === 1) {
      // Tuple2<Long, String>: the key is the first field, after the tag and (tag 0) timestamp.
      const key = framed.readBigInt64BE(tag === 0 ? 13 : 5);
      const mine = operatorForKeyHash(keyHash(key), r.parallelism, kg.maxParallelism) === r.index;
      out.push({ ...where, framed, kept: mine, kind: 'record' });
    } else {
      const watermark = tag === 2 || tag === 4;
      out.push({ ...where, framed, kept: watermark, kind: watermark ? 'watermark' : 'other' });
    }
  }
  return out;
}
