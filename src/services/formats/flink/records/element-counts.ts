/**
 * Element counts by kind (DESIGN §8): the shape `flink ls`, `report` and `diff` print and the
 * sums over channels, kept apart from the reader (`count.ts`) so a listing without counts does
 * not load it.
 */

/**
 * A channel's elements by kind, as `flink records` prints them. A record cut at the channel's
 * edge (the tail of an input channel, the head of an output subpartition: its other part is in
 * the neighbour's state) is counted under `partial` on each side it spans, never as a record:
 * each channel is counted from its own bytes alone.
 */
export interface FlinkElementCounts {
  records: number;
  watermarks: number;
  /** Watermark statuses, latency markers, record attributes. */
  otherElements: number;
  /** Pieces of records cut at the channel's start or end. */
  partial: number;
}

/** Zero counts. */
export const noElements = (): FlinkElementCounts => ({
  records: 0,
  watermarks: 0,
  otherElements: 0,
  partial: 0,
});

/** Adds `b` into `a`. */
export function addCounts(a: FlinkElementCounts, b: FlinkElementCounts): FlinkElementCounts {
  a.records += b.records;
  a.watermarks += b.watermarks;
  a.otherElements += b.otherElements;
  a.partial += b.partial;
  return a;
}

/** The key of a channel in the map {@link countFlinkElements} returns. */
export const countKey = (
  operator: string,
  subtask: number,
  side: 'input' | 'output',
  gate: number,
  channel: number,
): string => `${operator}/${subtask}/${side}/${gate}/${channel}`;
