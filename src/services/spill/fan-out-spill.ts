/**
 * Every new subtask of a rescaled restore from ONE read of the checkpoint (`recover --rescale P`):
 * one {@link FilteringSpill} per new subtask, all fed the same entries, each writing through the
 * same spill writer under its own virtual gates. A new subtask's channel (g, c) is spilled as
 * gate `i · 65536 + g` (SPWC and Flink gates are below 65536, so the largest, for I = 32767, is
 * still an int32), and whoever drains it takes the new subtask back out with {@link fannedOut}.
 *
 * Each filter parses every element itself, exactly as a per-I run does: the files of new
 * subtask I are byte for byte those of `--rescale I/P`, read once instead of P times.
 */
import type { ChannelInfo } from '../channel.ts';
import type { EntryVisitor } from '../formats/entries.ts';
import { FilteringSpill, type RecordReport, type SurvivorSink } from './filtering-spill.ts';
import type { RecordRules } from '../rescale/record-parser.ts';

/** Gates per new subtask in the virtual gate space (Flink's and SPWC's gates are below it). */
const GATES_PER_SUBTASK = 65536;

/**
 * Internal recovery option: every new subtask `0 … parallelism-1` in one read. The channels of
 * new subtask I come out under virtual gates ({@link fannedOut} undoes them), and `onRecords`
 * is told each new subtask's record counts once the read is done.
 */
export interface RescaleFanOut {
  readonly parallelism: number;
  readonly onRecords?: ((bySubtask: RecordReport[]) => void) | undefined;
}

/**
 * Where a `rescale` option carries a {@link RescaleFanOut}: a symbol key, so that it rides the
 * public option (whose keys are checked by name) to the fetch stage unseen by any caller.
 */
const FAN_OUT = Symbol('spillway.rescaleFanOut');

/**
 * `rescale` (a target; its subtask is then ignored) asking for every new subtask in one read.
 *
 * @example
 * ```ts
 * startRecovery({ ...options, rescale: withFanOut({ subtask: 0, parallelism: 3 }, { parallelism: 3 }) });
 * ```
 */
export function withFanOut<T extends object>(rescale: T, fanOut: RescaleFanOut): T {
  return Object.assign({ ...rescale }, { [FAN_OUT]: fanOut });
}

/** The fan-out a `rescale` option carries, if any (see {@link withFanOut}). */
export function fanOutOf(rescale: object | undefined): RescaleFanOut | undefined {
  return (rescale as { [FAN_OUT]?: RescaleFanOut } | undefined)?.[FAN_OUT];
}

/**
 * The new subtask and real (gate, channel) of a channel a fan-out recovery delivers.
 *
 * @example
 * ```ts
 * fannedOut({ gate: 2 * 65536 + 1, channel: 3 }); // { subtask: 2, info: { gate: 1, channel: 3 } }
 * ```
 */
export function fannedOut(info: ChannelInfo): { subtask: number; info: ChannelInfo } {
  const subtask = Math.floor(info.gate / GATES_PER_SUBTASK);
  return {
    subtask,
    info: { gate: info.gate - subtask * GATES_PER_SUBTASK, channel: info.channel },
  };
}

/** A spill writer seen by new subtask `subtask`'s filter: its gates moved into its own range. */
function virtualSink(writer: SurvivorSink, subtask: number): SurvivorSink {
  // One mutable object: the writer copies what it keeps (G8).
  const target = { gate: 0, channel: 0 };
  const moved = (info: ChannelInfo): ChannelInfo => {
    target.gate = subtask * GATES_PER_SUBTASK + info.gate;
    target.channel = info.channel;
    return target;
  };
  return {
    maxSegmentBytes: writer.maxSegmentBytes,
    noteChannel: (info) => writer.noteChannel(moved(info)),
    keepTogether: (info, bytes) => writer.keepTogether(moved(info), bytes),
    append: (info, bytes, crc) => writer.append(moved(info), bytes, crc),
  };
}

/**
 * The filters of a rescaled recovery: one (a single new subtask, the sink as it is) or one per
 * new subtask (a fan-out, each under its virtual gates), fed by one visitor.
 *
 * @example
 * ```ts
 * const filters = new FilterSet(writer, [rulesOf(0), rulesOf(1)], true);
 * await readCheckpointEntries(path, filters.visitor(onChunk), options);
 * filters.finish(true);
 * ```
 */
export class FilterSet {
  readonly filters: FilteringSpill[];

  constructor(
    writer: SurvivorSink,
    readonly rules: readonly RecordRules[],
    fanOut: boolean,
  ) {
    this.filters = rules.map(
      (r, i) => new FilteringSpill(fanOut ? virtualSink(writer, i) : writer, r),
    );
  }

  /** One visitor feeding every filter; `onChunk` (progress) sees each chunk once. */
  visitor(onChunk?: (chunk: Buffer) => void): EntryVisitor {
    const visitors = this.filters.map((f, i) => f.visitor(i === 0 ? onChunk : undefined));
    if (visitors.length === 1) return visitors[0]!;
    return {
      onVersion: (version) => visitors.forEach((v) => v.onVersion?.(version)),
      onFile: (file, headerBytes) => visitors.forEach((v) => v.onFile?.(file, headerBytes)),
      onEntry: (...args) => visitors.forEach((v) => v.onEntry(...args)),
      // In turn: each filter's survivors are written before the next one parses the chunk.
      onPayload: async (chunk, crc) => {
        for (const v of visitors) await v.onPayload(chunk, crc);
      },
    };
  }

  /** Bytes of the kept records of every filter: what the drain delivers. */
  get keptBytes(): number {
    return this.filters.reduce((sum, f) => sum + f.keptBytes, 0);
  }

  /** Each filter's {@link FilteringSpill.finish}, with its own rules' assigned old subtasks. */
  finish(
    dropPartialTails: boolean,
    assigned?: (i: number) => ((oldSubtask: number) => boolean) | undefined,
  ): void {
    this.filters.forEach((f, i) => f.finish(dropPartialTails, assigned?.(i)));
  }
}

/**
 * Record counts added up: read, kept and dropped, and each optional count where any has it.
 *
 * @example
 * ```ts
 * addRecordReports([{ read: 3, kept: 1, dropped: 2 }, { read: 3, kept: 2, dropped: 1, cut: 1 }]);
 * // { read: 6, kept: 3, dropped: 3, cut: 1 }
 * ```
 */
export function addRecordReports(reports: readonly RecordReport[]): RecordReport {
  const total: RecordReport = { read: 0, kept: 0, dropped: 0 };
  for (const r of reports) {
    total.read += r.read;
    total.kept += r.kept;
    total.dropped += r.dropped;
    for (const k of ['watermarks', 'elementsDropped', 'cut'] as const) {
      const n = r[k];
      if (n !== undefined) total[k] = (total[k] ?? 0) + n;
    }
  }
  return total;
}
