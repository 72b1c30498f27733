/**
 * The body of stage 1 (fetch): stream a checkpoint into spill files and seal them. Plain async
 * code; the fetch machine runs it on the channel-IO executor and turns its callbacks into
 * ownership events.
 */
import type { FileSystem } from '../fs.ts';
import { readCheckpointEntries, type EntryVisitor } from '../formats/entries.ts';
import type { FlinkSelection } from '../formats/flink/entry-source.ts';
import {
  flinkRecordRules,
  recordsOnly,
  type FlinkRecordRules,
} from '../formats/flink/stream-element.ts';
import { AbortedError, addSuppressed, isAbortConsequence } from '../errors.ts';
import type { FetchedChannelState } from './fetched-state.ts';
import type { SpillLimits } from './limits.ts';
import type { ProgressCounters } from '../progress.ts';
import { SpillWriter } from './spill-writer.ts';
import type { RecordReport } from './filtering-spill.ts';
import { FilterSet, addRecordReports, fanOutOf, type RescaleFanOut } from './fan-out-spill.ts';
import { recordRules, type RescaleOption } from '../rescale/rescale-options.ts';
import type { RemoteOptions } from '../locations/remote-options.ts';
import type { UpstreamSource } from './cut-tails.ts';
import { DEFAULT_MAX_RECORD_BYTES } from '../rescale/record-parser.ts';

export interface FetchStageInput {
  checkpoint: string;
  taskDir: string;
  /** The file seam the spill files go through (the recovery's own); the product's by default. */
  fs?: FileSystem | undefined;
  limits?: SpillLimits;
  /** Aborts the stage: sets the writer's abort flag (G3) and stops reading the checkpoint. */
  signal: AbortSignal;
  /**
   * Called synchronously right before the task dir is created: the owner must register the
   * writer's `discardSpilledFiles` now, not when the stage ends (G2).
   */
  onTaskDirAcquired: (writer: SpillWriter) => void;
  /**
   * Called synchronously with the first failure, before the stage cleans up after it. Cleanup
   * takes I/O time; reporting first means a cancel arriving meanwhile cannot become the cause
   * (G5).
   */
  onFailure?: (error: unknown) => void;
  /** Counters the stage bumps as it reads and spills (coalesced by whoever watches). */
  progress?: ProgressCounters;
  /**
   * Rescaling: spill only the records that survive (the filtering handler) instead of every
   * byte verbatim.
   */
  rescale?: RescaleOption;
  /** A remote checkpoint's endpoint and retry policy; each retry bumps `progress.retries`. */
  remote?: RemoteOptions | undefined;
  /** A Flink checkpoint: which operator, subtask and side (the seam picks the Flink source). */
  flink?: FlinkSelection | undefined;
}

/** What the fetch stage reports once its state is handed on. */
export type FetchReport = Omit<FetchStageResult, 'state'>;

export interface FetchStageResult {
  state: FetchedChannelState;
  spillFiles: number;
  spilledBytes: number;
  payloadBytes: number;
  entries: number;
  /** Records read, kept and dropped: only when rescaling. */
  records?: RecordReport;
}

/**
 * Reads `checkpoint` entry by entry into a {@link SpillWriter} and seals it.
 *
 * On any failure the stage cleans up after itself (rows F2, F3): it discards the task dir,
 * whether or not a fetched state was ever built, and rethrows the first cause with the cleanup
 * error suppressed. On success the caller receives the state with its hand-off grant.
 *
 * @example
 * ```ts
 * const { state } = await fetchToSpill({ checkpoint, taskDir, signal, onTaskDirAcquired });
 * ```
 */
export async function fetchToSpill(input: FetchStageInput): Promise<FetchStageResult> {
  const { signal, progress } = input;
  if (signal.aborted) throw new AbortedError('fetch aborted before it started');
  let reported = false;
  const report = (error: unknown): void => {
    if (reported) return;
    reported = true;
    input.onFailure?.(error);
  };
  const writer = new SpillWriter({
    taskDir: input.taskDir,
    maxSegmentBytes: input.limits?.maxSegmentBytes,
    maxSpillFileBytes: input.limits?.maxSpillFileBytes,
    onFirstAcquire: input.onTaskDirAcquired,
    // Writes run behind the reading: a failed one is reported the moment it fails, not when
    // the next append rethrows it, so nothing arriving in between can become the cause (G5).
    onWriteFailure: report,
    ...(input.fs !== undefined ? { fs: input.fs } : {}),
  });
  const onAbort = () => writer.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    // One mutable object, not one per entry: the writer copies what it keeps (G8).
    const current = { gate: 0, channel: 0 };
    const onChunk = (chunk: Buffer): void => {
      if (progress !== undefined) {
        progress.bytesRead += chunk.length;
        progress.bytesSpilled = writer.spilledBytes;
        progress.spillFiles = writer.fileCount;
      }
    };
    // Rescaling swaps in the filtering handler over the same writer (Flink's handler factory).
    // A Flink source's rules need the operator's max parallelism: made once it is known.
    const { flink, rescale } = input;
    // `recover --rescale P`: every new subtask in this one read (fan-out-spill.ts).
    const fanOut = fanOutOf(rescale);
    // The new subtasks one read filters for: the target's, or (fan-out) every one.
    const targets = <T>(rules: (target: RescaleOption) => T): T[] =>
      fanOut === undefined
        ? [rules(rescale!)]
        : Array.from({ length: fanOut.parallelism }, (_, subtask) =>
            rules({ ...rescale!, subtask }),
          );
    let filter =
      rescale === undefined || flink !== undefined
        ? undefined
        : new FilterSet(
            writer,
            targets((target) => recordRules(target, input.checkpoint)),
            fanOut !== undefined,
          );
    let filtering: EntryVisitor | undefined = filter?.visitor(onChunk);
    let flinkRules: FlinkRecordRules[] | undefined;
    let upstreamOf: Pick<UpstreamSource, 'operator' | 'metadata'> | undefined;
    const verbatim: EntryVisitor = {
      onEntry(gate, channel) {
        current.gate = gate;
        current.channel = channel;
        writer.noteChannel(current);
      },
      onPayload(chunk, crc) {
        onChunk(chunk);
        // The reader's CRC of the chunk becomes the segments' CRCs: one hash pass, not two.
        return writer.append(current, chunk, crc);
      },
    };
    const visitor: EntryVisitor =
      flink === undefined || rescale === undefined
        ? (filtering ?? verbatim)
        : {
            onFile: (file, headerBytes) => filtering!.onFile?.(file, headerBytes),
            onEntry: (...args) => filtering!.onEntry(...args),
            onPayload: (chunk, crc) => filtering!.onPayload(chunk, crc),
          };
    const summary = await readCheckpointEntries(input.checkpoint, visitor, {
      flink,
      allSubtasks: flink !== undefined && rescale !== undefined,
      onFlinkOperator:
        flink !== undefined && rescale !== undefined
          ? ({ operator, metadata }) => {
              flinkRules = targets((target) =>
                flinkRecordRules(
                  target,
                  flink.key,
                  operator.maxParallelism,
                  metadata.location,
                  operator.parallelism,
                ),
              );
              filter = new FilterSet(writer, flinkRules, fanOut !== undefined);
              filtering = filter.visitor(onChunk);
              upstreamOf = { operator, metadata };
            }
          : undefined,
      readChunkBytes: input.limits?.readChunkBytes,
      signal,
      onFailure: report,
      remote: {
        ...input.remote,
        onRetry: (info) => {
          if (progress !== undefined) progress.retries++;
          input.remote?.onRetry?.(info);
        },
      },
      ...(progress !== undefined
        ? { onOpen: (bytes: number) => (progress.checkpointBytes = bytes) }
        : {}),
    });
    if (filter !== undefined && flink !== undefined && upstreamOf !== undefined) {
      // Flink's restore completes a cut tail from the upstream's replayed output state. Loaded
      // here, as the Flink reader is (formats/entries.ts): importing the package stays small.
      const { completeCutTails } = await import('./cut-tails.ts');
      await completeCutTails(
        filter.filters,
        filter.filters.map((_, i) => flinkRules?.[i]?.assigned),
        {
          ...upstreamOf,
          checkpoint: input.checkpoint,
          allowPaths: flink.allowPaths,
          relocate: flink.relocate,
          remote: input.remote,
          signal,
          maxElementBytes: rescale?.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES,
          upstream: flink.upstream,
        },
      );
    }
    // A cut tail of an old subtask Flink does not assign the new one is never missed.
    filter?.finish(flink !== undefined, (i) => flinkRules?.[i]?.assigned);
    const state = await writer.close();
    if (progress !== undefined) {
      progress.bytesSpilled = writer.spilledBytes;
      progress.spillFiles = state.files.length;
      // What the drain will deliver: with rescaling, the kept records only (the bar's 100 %).
      progress.payloadBytes = filter !== undefined ? filter.keptBytes : summary.payloadBytes;
      progress.channels = state.channels.length;
    }
    return {
      state,
      spillFiles: state.files.length,
      spilledBytes: writer.spilledBytes,
      payloadBytes: summary.payloadBytes,
      entries: summary.entries,
      ...(filter !== undefined ? { records: recordReport(filter, flinkRules, fanOut) } : {}),
    };
  } catch (caught) {
    report(caught);
    // The stage itself owns cleanup on its own failure: nobody else may ever learn of these
    // files if it does not (Flink's F2/F3 leaks). The discard waits for the write in flight.
    let cleanupError: unknown;
    await writer.discardSpilledFiles().catch((e: unknown) => (cleanupError = e));
    const error = withLateWriteFailure(caught, writer.writeFailure);
    if (cleanupError !== undefined) addSuppressed(error as Error, cleanupError);
    throw error;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/**
 * A rescaled read's record counts: one new subtask's, or (fan-out) every one's added up, each
 * new subtask's own handed to `fanOut.onRecords`.
 */
function recordReport(
  filters: FilterSet,
  flinkRules: readonly FlinkRecordRules[] | undefined,
  fanOut: RescaleFanOut | undefined,
): RecordReport {
  const bySubtask = filters.filters.map((f, i): RecordReport => {
    const rules = flinkRules?.[i];
    return rules !== undefined
      ? { ...recordsOnly(f.counts, rules.elements), cut: f.cutTails }
      : { ...f.counts };
  });
  if (fanOut === undefined) return bySubtask[0]!;
  fanOut.onRecords?.(bySubtask);
  return addRecordReports(bySubtask);
}

/**
 * Folds the outcome of the write that was still in flight when the stage stopped into its
 * error. Writes run behind the reading, so an abort now usually stops the reader while a write
 * is in flight, where the reader used to be waiting for that write: its outcome (the write that
 * lost the race, or a real I/O error behind it) is then the stage's account of the abort, as
 * it was before. Any other failure stays first; a real I/O error of that write is suppressed.
 */
function withLateWriteFailure(caught: unknown, late: unknown): unknown {
  if (late === undefined || late === caught) return caught;
  if (isAbortConsequence(caught)) return late;
  const real = !(late instanceof AbortedError) || late.cause !== undefined;
  if (real && caught instanceof Error) addSuppressed(caught, late);
  return caught;
}
