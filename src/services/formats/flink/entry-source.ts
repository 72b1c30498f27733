/**
 * The Flink checkpoint as a source of entries for the fetch stage: the `_metadata` is read,
 * one operator and subtask (or, rescaling, all its old subtasks) selected, every delegate
 * stream its channel handles name located and confined first, then each delegate read once
 * per subtask, offsets ascending (Flink's `SequentialChannelStateReaderImpl`). The visitor sees
 * the same `onEntry`/`onPayload` calls an SPWC file gives, so spilling, filtering, hand-off
 * and every guarantee stay one code path.
 */
import type { CheckpointVisitor } from '../spwc/reader.ts';
import type { SourceOptions } from '../../locations/source.ts';
import { redactLocation } from '../../locations/redact.ts';
import { AbortedError, UnknownOperatorError } from '../../errors.ts';
import {
  readDelegateEntries,
  CHANNEL_STATE_INT_BYTES,
  type DelegateHandle,
} from './channel-state.ts';
import { readFlinkMetadata, resolveOperator } from './metadata.ts';
import type {
  FlinkChannelHandle,
  FlinkOperatorState,
  FlinkCheckpointMetadata,
} from './metadata-types.ts';
import { FlinkPaths, type DelegateLocation, type FlinkPathOptions } from './paths.ts';

/** How a Flink record's key is read for rescaling (`--key long|int|bytes:K`). */
export type FlinkKey = 'long' | 'int' | { bytes: number };

/**
 * Which channel state of a Flink checkpoint to recover.
 *
 * @example
 * ```ts
 * const flink: FlinkSelection = { operator: 'my-window-uid', subtask: 1 };
 * ```
 */
export interface FlinkSelection extends FlinkPathOptions {
  /** Operator id (32 hex digits), uid or name (v5+). */
  operator: string;
  /** The subtask whose state is recovered (ignored for the old subtasks when rescaling). */
  subtask: number;
  /** Recover the result subpartitions (output side) instead of the input channels. */
  outputState?: boolean | undefined;
  /** Rescaling: how each record's key is read; default `long`. */
  key?: FlinkKey | undefined;
  /**
   * Rescaling: per input gate, the operator (id, uid or name) feeding it, whose output state
   * completes a record cut at the end of an old subtask's channel. Without it, every operator
   * with output state is tried, and a record is completed only where exactly one fits.
   */
  upstream?: Readonly<Record<number, string>> | undefined;
}

/**
 * A selection with its plan already made (by {@link planFlinkRead} or
 * {@link planFlinkSelection}, for the same selection and side): the read starts at the channel
 * state, the `_metadata` is not read again. Internal: `recoverToDirectory` plans once.
 */
export interface PlannedFlinkSelection extends FlinkSelection {
  readonly plan?: FlinkReadPlan | undefined;
}

/** What the source tells its caller before the first entry. */
export interface FlinkSourceInfo {
  readonly metadata: FlinkCheckpointMetadata;
  readonly operator: FlinkOperatorState;
}

/** Options of {@link readFlinkEntries}. */
export interface ReadFlinkEntriesOptions {
  readChunkBytes?: number | undefined;
  signal?: AbortSignal | undefined;
  remote?: SourceOptions | undefined;
  /** Read every old subtask's input channels, subtasks ascending (rescaling). */
  allSubtasks?: boolean | undefined;
  /** Called with the total payload bytes the handles declare, before the first entry. */
  onOpen?: ((bytes: number) => void) | undefined;
  /** Called once the operator is resolved, before the first entry (a rescale's max parallelism). */
  onOperator?: ((info: FlinkSourceInfo) => void) | undefined;
  /** Called before the first entry of each delegate stream: its file, and Flink's 4-byte entry header. */
  onFile?: ((file: string, entryHeaderBytes: number) => void) | undefined;
}

/** What {@link readFlinkEntries} read. */
export interface FlinkEntriesSummary {
  entries: number;
  payloadBytes: number;
  /** Bytes of the delegate streams read (their declared sizes). */
  fileBytes: number;
  /** The `_metadata` version. */
  version: number;
  /** The `_metadata` actually read. */
  metadataLocation: string;
}

/** A subtask's selected handles grouped by delegate stream, in order of first appearance. */
interface Group {
  readonly where: DelegateLocation;
  readonly handles: DelegateHandle[];
}

/**
 * Streams the selected channel state of the Flink checkpoint at `location` (a directory
 * holding `_metadata`, or the `_metadata` itself; local, `http(s)://` or `s3://`) into
 * `visitor`.
 *
 * Errors: an unknown or ambiguous operator, or a subtask outside the operator's parallelism,
 * is an `UnknownOperatorError`; a path outside the
 * allowed roots a `CheckpointPathError` naming the path and the flag; malformed metadata or
 * channel-state bytes a `CorruptCheckpointError` naming the file and the byte.
 *
 * @example
 * ```ts
 * await readFlinkEntries('ckpt/job/chk-7', { operator: 'map', subtask: 0 }, {
 *   onEntry: (gate, channel) => void (key = `${gate}/${channel}`),
 *   onPayload: (chunk) => void sink(key, chunk),
 * });
 * ```
 */
export async function readFlinkEntries(
  location: string,
  selection: PlannedFlinkSelection,
  visitor: CheckpointVisitor,
  options: ReadFlinkEntriesOptions = {},
): Promise<FlinkEntriesSummary> {
  const { signal } = options;
  if (signal?.aborted === true) throw signal.reason ?? new AbortedError('Flink read aborted');
  const { metadata, operator, plan, declared } =
    selection.plan ?? (await planFlinkRead(location, selection, options));
  options.onOperator?.({ metadata, operator });
  options.onOpen?.(declared);

  let entries = 0;
  let payloadBytes = 0;
  let fileBytes = 0;
  for (const groups of plan) {
    for (const { where, handles } of groups) {
      options.onFile?.(where.shown, CHANNEL_STATE_INT_BYTES);
      const read = await readDelegateEntries(where, handles, visitor, {
        readChunkBytes: options.readChunkBytes,
        signal,
        remote: options.remote,
      });
      entries += read.entries;
      payloadBytes += read.payloadBytes;
      fileBytes += where.length;
    }
  }
  return {
    entries,
    payloadBytes,
    fileBytes,
    version: metadata.version,
    metadataLocation: metadata.location,
  };
}

/** What a Flink read will do, worked out before a byte of channel state is read. */
export interface FlinkReadPlan extends FlinkSourceInfo {
  /** Per selected subtask (ascending), its delegate streams with their handles. */
  readonly plan: readonly (readonly Group[])[];
  /** Payload bytes the selected handles declare (their state sizes less the entry lengths). */
  readonly declared: number;
  /** Channels (input) or subpartitions (output) the selection names. */
  readonly channels: number;
}

/**
 * Reads the `_metadata`, resolves the operator and subtask, and locates (confines) every
 * delegate stream the selection needs. The CLI calls it before it creates anything, so a bad
 * operator, subtask or path is refused with nothing touched.
 *
 * @example
 * ```ts
 * const { operator, channels } = await planFlinkRead('ckpt/job/chk-7', { operator: 'map', subtask: 0 });
 * ```
 */
export async function planFlinkRead(
  location: string,
  selection: FlinkSelection,
  options: Pick<ReadFlinkEntriesOptions, 'signal' | 'remote' | 'allSubtasks'> = {},
): Promise<FlinkReadPlan> {
  const { signal } = options;
  if (signal?.aborted === true) throw signal.reason ?? new AbortedError('Flink read aborted');
  const metadata = await readFlinkMetadata(location, {
    ...(signal !== undefined ? { signal } : {}),
    ...(options.remote !== undefined ? { remote: options.remote } : {}),
  });
  return planFlinkSelection(metadata, selection, options);
}

/**
 * {@link planFlinkRead} on metadata already read: one `_metadata` read serves every selection
 * of a recovery (both sides of a subtask, every subtask of `recover --all`).
 *
 * @example
 * ```ts
 * const metadata = await readFlinkMetadata('ckpt/job/chk-7');
 * const input = await planFlinkSelection(metadata, { operator: 'map', subtask: 0 });
 * ```
 */
export async function planFlinkSelection(
  metadata: FlinkCheckpointMetadata,
  selection: FlinkSelection,
  options: Pick<ReadFlinkEntriesOptions, 'allSubtasks'> = {},
): Promise<FlinkReadPlan> {
  const operator = resolveOperator(metadata, selection.operator);
  const subtasks = selectSubtasks(metadata, operator, selection, options.allSubtasks === true);
  const paths = new FlinkPaths(metadata.location, selection);
  const plan: Group[][] = [];
  let declared = 0;
  let channels = 0;
  for (const subtask of subtasks) {
    const groups = new Map<string, Group>();
    const handles: readonly FlinkChannelHandle[] =
      selection.outputState === true ? subtask.outputSubpartitions : subtask.inputChannels;
    for (const handle of handles) {
      channels++;
      // No entries, nothing to read (an empty file-merging segment names no file at all).
      if (handle.offsets.length === 0) continue;
      const where = await paths.locate(handle.delegate);
      let group = groups.get(where.key);
      if (group === undefined) {
        group = { where, handles: [] };
        groups.set(where.key, group);
      }
      group.handles.push({ handle, subtask: subtask.index });
    }
    for (const { where, handles } of groups.values()) {
      // Payload bytes: each handle's state size less its entries' length fields, and never
      // more than the stream can hold (Flink counts an inline blob's header in its size).
      let entries = 0;
      let payload = 0;
      for (const { handle } of handles) {
        entries += handle.offsets.length;
        payload += Math.max(0, handle.stateSize - CHANNEL_STATE_INT_BYTES * handle.offsets.length);
      }
      declared += Math.max(
        0,
        Math.min(payload, where.length - CHANNEL_STATE_INT_BYTES * (entries + 1)),
      );
    }
    plan.push([...groups.values()]);
  }
  return { metadata, operator, plan, declared, channels };
}

/**
 * The subtask states to read: the one asked for, or every one ascending. A subtask the
 * operator has no state for (finished, or never written) reads as no channels; one outside
 * the operator's parallelism is bad input, an `UnknownOperatorError` of kind `'subtask'`.
 */
function selectSubtasks(
  metadata: FlinkCheckpointMetadata,
  operator: FlinkOperatorState,
  selection: FlinkSelection,
  all: boolean,
): FlinkOperatorState['subtasks'] {
  const sorted = [...operator.subtasks].sort((a, b) => a.index - b.index);
  if (all) return sorted;
  const n = selection.subtask;
  if (!Number.isSafeInteger(n) || n < 0 || n >= operator.parallelism) {
    throw new UnknownOperatorError(
      redactLocation(metadata.location),
      operator.id,
      'subtask',
      operator.parallelism > 0 ? [`0..${operator.parallelism - 1}`] : [],
      n,
    );
  }
  return sorted.filter((s) => s.index === n);
}
