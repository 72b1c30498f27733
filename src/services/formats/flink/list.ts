/**
 * The `spillway flink ls` model (DESIGN §7, §8): per operator its id, name, uid and parallelism,
 * and per subtask how many input channels and result subpartitions have a channel-state handle and
 * how many bytes those hold, as Flink's `getStateSize()` counts them (entry lengths included);
 * totals per checkpoint and operator, and on request one row per channel and (counted by the
 * records reader, `records/count.ts`) its elements by kind.
 */
import { CancelledError, SpillwayError, ours } from '../../errors.ts';
import {
  addCounts,
  countKey,
  noElements,
  type FlinkElementCounts,
} from './records/element-counts.ts';
import type { CountFlinkElementsOptions } from './records/count.ts';
import type {
  FlinkChannelHandle,
  FlinkCheckpointMetadata,
  ReadFlinkMetadataOptions,
} from './metadata-types.ts';

export { resolveOperator, describeOperator } from './metadata-resolve.ts';

/**
 * One input channel's or result subpartition's state (`flink ls --channels`): positions named as
 * `flink records` names them. Several handles of one channel (one per delegate stream) are summed.
 * With counts (`--type`/`--key`), its elements by kind too.
 */
export type FlinkChannelListing = (
  | { side: 'input'; gate: number; channel: number; bytes: number; entries: number }
  | { side: 'output'; partition: number; subpartition: number; bytes: number; entries: number }
) &
  Partial<FlinkElementCounts>;

/** One subtask's channel state, as `flink ls --json` prints it. */
export interface FlinkSubtaskListing extends Partial<FlinkElementCounts> {
  index: number;
  finished: boolean;
  inputChannels: number;
  inputBytes: number;
  outputSubpartitions: number;
  outputBytes: number;
  /** With `channels: true`: input channels then subpartitions, each by gate then channel. */
  channels?: FlinkChannelListing[];
}

/** One operator, as `flink ls --json` prints it (name and uid: metadata v5+, when set). */
export interface FlinkOperatorListing extends Partial<FlinkElementCounts> {
  id: string;
  name?: string;
  uid?: string;
  parallelism: number;
  maxParallelism: number;
  /** Sum over the subtasks. */
  inputBytes: number;
  /** Sum over the subtasks. */
  outputBytes: number;
  subtasks: FlinkSubtaskListing[];
}

/** What `spillway flink ls --json` prints. */
export interface FlinkCheckpointListing extends Partial<FlinkElementCounts> {
  version: number;
  checkpointId: number;
  /** Sums over every operator and subtask. */
  inputBytes: number;
  outputBytes: number;
  inputChannels: number;
  outputSubpartitions: number;
  operators: FlinkOperatorListing[];
}

/** What to list beyond the per-subtask counts. */
export interface ListFlinkOptions {
  /** One row per input channel and result subpartition in every subtask (`flink ls --channels`). */
  channels?: boolean;
  /**
   * Element counts per channel ({@link countFlinkElements} of the same metadata): every channel
   * row, subtask, operator and the checkpoint then carry `records`, `watermarks`,
   * `otherElements` and `partial` (sums above the channel).
   */
  counts?: ReadonlyMap<string, FlinkElementCounts> | undefined;
}

/** What {@link listFlinkCheckpoint} takes: with `type` or `key`, the elements are counted. */
export type ListFlinkCheckpointOptions = ReadFlinkMetadataOptions &
  Omit<ListFlinkOptions, 'counts'> &
  Omit<CountFlinkElementsOptions, 'signal' | 'remote'>;

const bytesOf = (handles: readonly FlinkChannelHandle[]): number =>
  handles.reduce((sum, h) => sum + h.stateSize, 0);

const sum = <T>(items: readonly T[], f: (item: T) => number): number =>
  items.reduce((total, item) => total + f(item), 0);

/** One row per (gate, channel): a channel with entries in two delegate streams has two handles. */
function channelRows(
  side: 'input' | 'output',
  handles: readonly FlinkChannelHandle[],
  countsOf?: (side: 'input' | 'output', gate: number, channel: number) => FlinkElementCounts,
): FlinkChannelListing[] {
  const rows = new Map<string, { gate: number; channel: number; bytes: number; entries: number }>();
  for (const h of handles) {
    const key = `${h.gate}/${h.channel}`;
    const row = rows.get(key);
    if (row === undefined) {
      rows.set(key, {
        gate: h.gate,
        channel: h.channel,
        bytes: h.stateSize,
        entries: h.offsets.length,
      });
    } else {
      row.bytes += h.stateSize;
      row.entries += h.offsets.length;
    }
  }
  return [...rows.values()]
    .sort((a, b) => a.gate - b.gate || a.channel - b.channel)
    .map(({ gate, channel, bytes, entries }) => {
      const counts = countsOf?.(side, gate, channel) ?? {};
      return side === 'input'
        ? { side, gate, channel, bytes, entries, ...counts }
        : { side, partition: gate, subpartition: channel, bytes, entries, ...counts };
    });
}

/** The sums of `items`' counts, or nothing when they are not counted. */
function sumCounts(
  counted: boolean,
  items: readonly Partial<FlinkElementCounts>[],
): Partial<FlinkElementCounts> {
  if (!counted) return {};
  const total = noElements();
  for (const item of items) addCounts(total, { ...noElements(), ...item });
  return total;
}

/**
 * The listing of already-read metadata: operators in metadata order, subtasks ascending.
 *
 * @example
 * ```ts
 * const listing = listFlinkMetadata(await readFlinkMetadata('chk-17'), { channels: true });
 * listing.inputBytes; // every subtask's input-channel state, as Flink counts it
 * ```
 */
export function listFlinkMetadata(
  meta: FlinkCheckpointMetadata,
  options: ListFlinkOptions = {},
): FlinkCheckpointListing {
  const { counts } = options;
  const counted = counts !== undefined;
  const operators = meta.operators.map((op): FlinkOperatorListing => {
    const subtasks = [...op.subtasks]
      .sort((a, b) => a.index - b.index)
      .map((s): FlinkSubtaskListing => {
        const countsOf = (side: 'input' | 'output', gate: number, channel: number) =>
          counts?.get(countKey(op.id, s.index, side, gate, channel)) ?? noElements();
        const rows = [
          ...channelRows('input', s.inputChannels, counted ? countsOf : undefined),
          ...channelRows('output', s.outputSubpartitions, counted ? countsOf : undefined),
        ];
        return {
          index: s.index,
          finished: s.finished,
          inputChannels: s.inputChannels.length,
          inputBytes: bytesOf(s.inputChannels),
          outputSubpartitions: s.outputSubpartitions.length,
          outputBytes: bytesOf(s.outputSubpartitions),
          ...sumCounts(counted, rows),
          ...(options.channels === true ? { channels: rows } : {}),
        };
      });
    return {
      id: op.id,
      ...(op.name !== undefined ? { name: op.name } : {}),
      ...(op.uid !== undefined ? { uid: op.uid } : {}),
      parallelism: op.parallelism,
      maxParallelism: op.maxParallelism,
      inputBytes: sum(subtasks, (s) => s.inputBytes),
      outputBytes: sum(subtasks, (s) => s.outputBytes),
      ...sumCounts(counted, subtasks),
      subtasks,
    };
  });
  const subtasks = operators.flatMap((o) => o.subtasks);
  return {
    version: meta.version,
    checkpointId: meta.checkpointId,
    inputBytes: sum(operators, (o) => o.inputBytes),
    outputBytes: sum(operators, (o) => o.outputBytes),
    inputChannels: sum(subtasks, (s) => s.inputChannels),
    outputSubpartitions: sum(subtasks, (s) => s.outputSubpartitions),
    ...sumCounts(counted, operators),
    operators,
  };
}

/**
 * Lists a Flink checkpoint's operators and per-subtask channel state: `location` is a checkpoint
 * directory holding `_metadata` or the file itself, local, `http(s)://` or `s3://`.
 *
 * @throws CorruptCheckpointError for a malformed `_metadata` (file and byte offset); every
 * other failure is a `SpillwayError` too (`CheckpointPathError`, a remote error, `IoError`, a
 * `CancelledError` whose `cause` is the signal's reason).
 * @example
 * ```ts
 * const { operators } = await listFlinkCheckpoint('/ckpt/job/chk-17');
 * for (const op of operators) console.log(op.id, op.subtasks.map((s) => s.inputBytes));
 * ```
 */
export async function listFlinkCheckpoint(
  location: string,
  options: ListFlinkCheckpointOptions = {},
): Promise<FlinkCheckpointListing> {
  try {
    // The metadata reader is loaded on first use: importing the package does not pay for it.
    const { readFlinkMetadata } = await import('./metadata.ts');
    const meta = await readFlinkMetadata(location, options);
    if (options.type === undefined && options.key === undefined) {
      return listFlinkMetadata(meta, options);
    }
    const { countFlinkElements } = await import('./records/count.ts');
    const counts = await countFlinkElements(meta, options);
    return listFlinkMetadata(meta, { ...options, counts });
  } catch (error) {
    // Every error leaving the library is ours (DESIGN §5): an abort is a CancelledError whose
    // cause is the signal's reason, a read's errno an IoError, anything else an InternalError.
    if (options.signal?.aborted === true && !(error instanceof SpillwayError)) {
      throw new CancelledError('listing the Flink checkpoint was cancelled', {
        cause: options.signal.reason,
      });
    }
    throw ours(error);
  }
}
