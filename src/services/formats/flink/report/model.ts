/**
 * What `spillway flink report` shows (DESIGN §8), computed from a listing with channel rows:
 * totals, per operator and subtask the input and output bytes, a subtask × channel matrix, the
 * largest channels, and skew — max ÷ median of the subtasks' in-flight bytes, the number that
 * says "one subtask is backpressured far more than its peers".
 */
import type { FlinkCheckpointListing, FlinkChannelListing } from '../list.ts';
import type { FlinkElementCounts } from '../records/element-counts.ts';

/** Counts of a listing's row, when it has them (`--type`/`--key`). */
function countsOf(row: Partial<FlinkElementCounts>): { counts?: FlinkElementCounts } {
  if (row.records === undefined) return {};
  return {
    counts: {
      records: row.records,
      watermarks: row.watermarks ?? 0,
      otherElements: row.otherElements ?? 0,
      partial: row.partial ?? 0,
    },
  };
}

/** A channel as the report names it: `in g/c` (input gate/channel), `out p/s` (partition/sub). */
export const channelLabel = (c: FlinkChannelListing): string =>
  c.side === 'input' ? `in ${c.gate}/${c.channel}` : `out ${c.partition}/${c.subpartition}`;

export interface ReportSubtask {
  index: number;
  inputBytes: number;
  outputBytes: number;
  /** Its elements by kind, when counted (`--type`/`--key`). */
  counts?: FlinkElementCounts;
}

export interface ReportOperator {
  id: string;
  name?: string;
  uid?: string;
  parallelism: number;
  inputBytes: number;
  outputBytes: number;
  /** Its elements by kind, when counted. */
  counts?: FlinkElementCounts;
  /** Every subtask 0..parallelism-1 (one without state has 0 bytes). */
  subtasks: ReportSubtask[];
  /** Max ÷ median of the subtasks' in-flight bytes; undefined when the median is 0. */
  skew: number | undefined;
  maxSubtaskBytes: number;
  medianSubtaskBytes: number;
  /** Channel labels (columns of the heat map), inputs then outputs, by position. */
  channels: string[];
  /** `heat[subtask][column]`: bytes (0 where that subtask has no such channel). */
  heat: number[][];
}

export interface ReportChannel {
  operator: string;
  operatorLabel: string;
  subtask: number;
  channel: FlinkChannelListing;
}

export interface FlinkReportModel {
  checkpointId: number;
  version: number;
  inputBytes: number;
  outputBytes: number;
  inputChannels: number;
  outputSubpartitions: number;
  /** The checkpoint's elements by kind, when counted (`--type`/`--key`). */
  counts?: FlinkElementCounts;
  /** Operators with channel state, largest in-flight first. */
  operators: ReportOperator[];
  /** How many operators hold no channel state (not drawn). */
  emptyOperators: number;
  /** The largest channels of the checkpoint, largest first. */
  topChannels: ReportChannel[];
}

/** The middle value (mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** How an operator is named in the report: name, else uid, else its id. */
export function operatorLabel(op: { id: string; name?: string; uid?: string }): string {
  return op.name ?? op.uid ?? op.id;
}

/**
 * The report's model of `listing` (which must carry channel rows: `{ channels: true }`).
 *
 * @example
 * ```ts
 * const model = reportModel(listFlinkMetadata(meta, { channels: true }));
 * model.operators[0]?.skew; // e.g. 1.7: the busiest subtask holds 1.7× the median
 * ```
 */
export function reportModel(listing: FlinkCheckpointListing, top = 10): FlinkReportModel {
  const all = [...listing.operators].sort(
    (a, b) => b.inputBytes + b.outputBytes - (a.inputBytes + a.outputBytes),
  );
  const withState = all.filter((o) => o.inputBytes + o.outputBytes > 0);
  const operators = withState.map((op): ReportOperator => {
    const count = Math.max(op.parallelism, ...op.subtasks.map((s) => s.index + 1));
    const subtasks: ReportSubtask[] = Array.from({ length: count }, (_, index) => {
      const s = op.subtasks.find((x) => x.index === index);
      return {
        index,
        inputBytes: s?.inputBytes ?? 0,
        outputBytes: s?.outputBytes ?? 0,
        ...countsOf(s ?? (op.records === undefined ? {} : { records: 0 })),
      };
    });
    const labels = new Map<string, FlinkChannelListing>();
    for (const s of op.subtasks) for (const c of s.channels ?? []) labels.set(channelLabel(c), c);
    const channels = [...labels.entries()]
      .sort(([, a], [, b]) => order(a) - order(b) || position(a) - position(b))
      .map(([label]) => label);
    const column = new Map(channels.map((label, i) => [label, i]));
    const heat = subtasks.map(() => new Array<number>(channels.length).fill(0));
    for (const s of op.subtasks) {
      for (const c of s.channels ?? []) heat[s.index]![column.get(channelLabel(c))!]! += c.bytes;
    }
    const inFlight = subtasks.map((s) => s.inputBytes + s.outputBytes);
    const max = Math.max(...inFlight);
    const mid = median(inFlight);
    return {
      id: op.id,
      ...(op.name !== undefined ? { name: op.name } : {}),
      ...(op.uid !== undefined ? { uid: op.uid } : {}),
      parallelism: op.parallelism,
      inputBytes: op.inputBytes,
      outputBytes: op.outputBytes,
      ...countsOf(op),
      subtasks,
      skew: mid > 0 ? max / mid : undefined,
      maxSubtaskBytes: max,
      medianSubtaskBytes: mid,
      channels,
      heat,
    };
  });
  const topChannels = withState
    .flatMap((op) =>
      op.subtasks.flatMap((s) =>
        (s.channels ?? []).map((channel) => ({
          operator: op.id,
          operatorLabel: operatorLabel(op),
          subtask: s.index,
          channel,
        })),
      ),
    )
    .sort((a, b) => b.channel.bytes - a.channel.bytes)
    .slice(0, top);
  return {
    checkpointId: listing.checkpointId,
    version: listing.version,
    inputBytes: listing.inputBytes,
    outputBytes: listing.outputBytes,
    inputChannels: listing.inputChannels,
    outputSubpartitions: listing.outputSubpartitions,
    ...countsOf(listing),
    operators,
    emptyOperators: all.length - withState.length,
    topChannels,
  };
}

const order = (c: FlinkChannelListing): number => (c.side === 'input' ? 0 : 1);
const position = (c: FlinkChannelListing): number =>
  c.side === 'input' ? c.gate * 1e6 + c.channel : c.partition * 1e6 + c.subpartition;
