/**
 * `spillway flink diff` (DESIGN §8): two checkpoints of one job lined up per operator, subtask
 * and channel, with the change in bytes — "which channel's backlog grew". Operators are matched
 * by id, channels by position (subtask, side, gate/partition, channel/subpartition); a channel in
 * only one checkpoint counts 0 bytes in the other.
 */
import type { FlinkCheckpointListing, FlinkChannelListing } from './list.ts';
import { channelLabel, operatorLabel } from './report/model.ts';

/** One side's and the other's bytes, and `b - a`. */
export interface ByteChange {
  a: number;
  b: number;
  change: number;
}

/** With counts (`--type`/`--key` on both listings): records and watermarks, A and B. */
export interface CountChanges {
  records?: ByteChange;
  watermarks?: ByteChange;
}

export interface FlinkChannelDiff extends ByteChange, CountChanges {
  operator: string;
  operatorLabel: string;
  subtask: number;
  /** `in g/c` or `out p/s`, as the report names a channel. */
  channel: string;
  side: 'input' | 'output';
}

export interface FlinkOperatorDiff extends ByteChange, CountChanges {
  id: string;
  label: string;
  subtasks: Array<ByteChange & CountChanges & { index: number }>;
}

/** What `flink diff --json` prints: totals, operators and channels, each sorted by growth. */
export interface FlinkCheckpointDiff extends CountChanges {
  checkpointA: number;
  checkpointB: number;
  inputBytes: ByteChange;
  outputBytes: ByteChange;
  operators: FlinkOperatorDiff[];
  channels: FlinkChannelDiff[];
}

const change = (a: number, b: number): ByteChange => ({ a, b, change: b - a });

type Counted = { records?: number; watermarks?: number } | undefined;

/** Records and watermarks of A and B (absent ones count 0), when both listings are counted. */
function countChanges(counted: boolean, a: Counted, b: Counted): CountChanges {
  if (!counted) return {};
  return {
    records: change(a?.records ?? 0, b?.records ?? 0),
    watermarks: change(a?.watermarks ?? 0, b?.watermarks ?? 0),
  };
}

/** Largest growth first; equal growth: larger B first, then by name (a stable, total order). */
function byGrowth<T extends ByteChange>(key: (x: T) => string) {
  return (x: T, y: T): number =>
    y.change - x.change || y.b - x.b || (key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : 0);
}

/**
 * Lines up `a` and `b` (listings with channel rows: `{ channels: true }`).
 *
 * @example
 * ```ts
 * const d = diffListings(listFlinkMetadata(a, { channels: true }), listFlinkMetadata(b, { channels: true }));
 * d.channels[0]; // the channel whose bytes grew most
 * ```
 */
export function diffListings(
  a: FlinkCheckpointListing,
  b: FlinkCheckpointListing,
): FlinkCheckpointDiff {
  const counted = a.records !== undefined && b.records !== undefined;
  const ids = [...new Set([...a.operators, ...b.operators].map((o) => o.id))];
  const operators: FlinkOperatorDiff[] = [];
  const channels = new Map<string, FlinkChannelDiff>();
  for (const id of ids) {
    const opA = a.operators.find((o) => o.id === id);
    const opB = b.operators.find((o) => o.id === id);
    const label = operatorLabel(opB ?? opA!);
    const indexes = [
      ...new Set([...(opA?.subtasks ?? []), ...(opB?.subtasks ?? [])].map((s) => s.index)),
    ].sort((x, y) => x - y);
    const bytesOf = (op: typeof opA, index: number): number => {
      const s = op?.subtasks.find((x) => x.index === index);
      return s === undefined ? 0 : s.inputBytes + s.outputBytes;
    };
    const subtasks = indexes.map((index) => ({
      index,
      ...change(bytesOf(opA, index), bytesOf(opB, index)),
      ...countChanges(
        counted,
        opA?.subtasks.find((x) => x.index === index),
        opB?.subtasks.find((x) => x.index === index),
      ),
    }));
    const total = (op: typeof opA) => (op === undefined ? 0 : op.inputBytes + op.outputBytes);
    operators.push({
      id,
      label,
      ...change(total(opA), total(opB)),
      ...countChanges(counted, opA, opB),
      subtasks,
    });
    for (const [which, op] of [
      ['a', opA],
      ['b', opB],
    ] as const) {
      for (const s of op?.subtasks ?? []) {
        for (const c of s.channels ?? []) {
          const key = `${id}/${s.index}/${channelLabel(c)}`;
          const row = channels.get(key) ?? {
            operator: id,
            operatorLabel: label,
            subtask: s.index,
            channel: channelLabel(c),
            side: c.side,
            ...change(0, 0),
            ...countChanges(counted, undefined, undefined),
          };
          const listed = c as FlinkChannelListing;
          row[which] += listed.bytes;
          row.change = row.b - row.a;
          for (const kind of ['records', 'watermarks'] as const) {
            const counts = row[kind];
            if (counts === undefined) continue;
            counts[which] += listed[kind] ?? 0;
            counts.change = counts.b - counts.a;
          }
          channels.set(key, row);
        }
      }
    }
  }
  return {
    checkpointA: a.checkpointId,
    checkpointB: b.checkpointId,
    inputBytes: change(a.inputBytes, b.inputBytes),
    outputBytes: change(a.outputBytes, b.outputBytes),
    ...countChanges(counted, a, b),
    operators: operators.sort(byGrowth((o) => o.id)),
    channels: [...channels.values()].sort(
      byGrowth((c) => `${c.operator}/${String(c.subtask).padStart(6, '0')}/${c.channel}`),
    ),
  };
}
