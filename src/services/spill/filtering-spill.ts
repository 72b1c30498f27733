/**
 * The filtering spill handler (Flink's `SpillingWithFilteringHandler`): parses the records of
 * every virtual channel and spills only the survivors into their (gate, channel). Everything
 * else about spilling is the {@link SpillWriter}'s: abort flag, discard, rotation, CRC,
 * hand-off and ownership are the same objects as without filtering.
 */
import { CHECKPOINT_VERSION, entryHeaderBytes } from '../formats/spwc/format.ts';
import type { EntryVisitor } from '../formats/entries.ts';
import type { ChannelInfo } from '../channel.ts';
import type { SpillWriter } from './spill-writer.ts';
import { SEGMENT_HEADER_BYTES } from './segment-format.ts';
import {
  RECORD_LENGTH_BYTES,
  RecordParser,
  type RecordCounts,
  type RecordRules,
  type VirtualChannel,
} from '../rescale/record-parser.ts';

/**
 * Number of records read, kept and dropped by a filtering recovery. A Flink recovery counts
 * records only there, and its other stream elements apart: `watermarks` (watermarks and
 * watermark statuses kept) and `elementsDropped` (latency markers, record attributes, and the
 * elements of old subtasks Flink's restore does not assign the new subtask).
 */
export interface RecordReport extends RecordCounts {
  watermarks?: number;
  elementsDropped?: number;
  /**
   * Old subtasks' input channels that end inside a record whose rest is the upstream's output
   * state, and that Spillway could not complete from there (no such state in the checkpoint,
   * or different records fit: `flink.upstream` names a gate's operator). Completed ones are
   * records like any other.
   */
  cut?: number;
}

/** A virtual channel that ended inside a record: see {@link FilteringSpill.openTails}. */
export interface CutTail {
  readonly id: number;
  readonly from: VirtualChannel;
  /** The record's bytes so far, from its length field on. */
  readonly bytes: Buffer;
}

/**
 * Where survivors go: a {@link SpillWriter}, or anything that takes bytes per channel the
 * same way (the pool's shape reader sums them instead of spilling them).
 */
export type SurvivorSink = Pick<
  SpillWriter,
  'noteChannel' | 'append' | 'keepTogether' | 'maxSegmentBytes'
>;

/** `subtask · 2^32 + gate · 2^16 + channel`: below 2^47, so an exact number key. */
function virtualChannelId(subtask: number, gate: number, channel: number): number {
  return subtask * 2 ** 32 + gate * 65536 + channel;
}

/**
 * Turns checkpoint entries into spilled survivors. Use {@link FilteringSpill.visitor} as the
 * checkpoint reader's visitor, then {@link FilteringSpill.finish} once the whole file was read.
 *
 * Memory: a parser exists only for a virtual channel that is inside a record at an entry's
 * end (one that ends between records is forgotten), and only a spanning record that may still
 * survive is held, at most `maxRecordBytes` of it (G8).
 *
 * @example
 * ```ts
 * const filter = new FilteringSpill(writer, recordRules({ subtask: 0, parallelism: 2 }, path));
 * await readCheckpoint(path, filter.visitor());
 * filter.finish(); // CorruptCheckpointError if a virtual channel ended inside a record
 * const state = await writer.close();
 * ```
 */
export class FilteringSpill {
  readonly counts: RecordCounts = { read: 0, kept: 0, dropped: 0 };
  /**
   * Virtual channels that ended inside a record (a Flink tail whose rest is upstream), of the
   * old subtasks `finish` was told count.
   */
  cutTails = 0;
  /** Bytes of the kept records as spilled (length fields included): what the drain delivers. */
  keptBytes = 0;
  private readonly parsers = new Map<number, RecordParser>();
  private headerBytes = entryHeaderBytes(CHECKPOINT_VERSION);
  private parser: RecordParser | undefined;
  private parserId = 0;
  private target: ChannelInfo = { gate: 0, channel: 0 };
  /** File offset of the next payload byte of the current entry. */
  private position = 0;
  private entryRemaining = 0;
  private readonly out: Buffer[] = [];

  constructor(
    private readonly writer: SurvivorSink,
    private rules: RecordRules,
  ) {}

  /**
   * The reader visitor. `onChunk` is called with every payload chunk before it is parsed
   * (progress counters).
   */
  visitor(onChunk?: (chunk: Buffer) => void): EntryVisitor {
    return {
      onVersion: (version) => void (this.headerBytes = entryHeaderBytes(version)),
      // A Flink source reads several files, each entry led by a 4-byte length: the records of
      // the parsers made from here on are reported in that file.
      onFile: (file, headerBytes) => {
        this.headerBytes = headerBytes;
        this.rules = { ...this.rules, file };
      },
      onEntry: (gate, channel, length, offset, subtask) => {
        // Every (gate, channel) the checkpoint names is recovered, even if nothing survives.
        this.target = { gate, channel };
        this.writer.noteChannel(this.target);
        this.position = offset + this.headerBytes;
        this.entryRemaining = length;
        this.parserId = virtualChannelId(subtask, gate, channel);
        this.parser = this.parsers.get(this.parserId);
        if (this.parser === undefined && length > 0) {
          this.parser = new RecordParser({ subtask, gate, channel }, this.rules, this.counts);
          this.parsers.set(this.parserId, this.parser);
        }
      },
      onPayload: (chunk) => {
        onChunk?.(chunk);
        return this.onPayload(chunk);
      },
    };
  }

  private onPayload(chunk: Buffer): Promise<void> | void {
    const parser = this.parser!;
    parser.push(chunk, this.position, this.out);
    this.position += chunk.length;
    this.entryRemaining -= chunk.length;
    if (this.entryRemaining === 0 && !parser.hasPartialData) this.parsers.delete(this.parserId);
    // Survivors go out in the order they completed; the writer copies each before resolving,
    // so slices of `chunk` are safe while the reader awaits this.
    return this.spillOut(0);
  }

  /**
   * Spills `out[from…]` and empties it: synchronously while the writer copies without I/O
   * (no promise per chunk or per kept run, as the verbatim path), else once it waited.
   */
  private spillOut(from: number): Promise<void> | void {
    const out = this.out;
    try {
      for (let i = from; i < out.length; i++) {
        const waiting = this.spill(out[i]!);
        if (waiting !== undefined) {
          return waiting.then(
            () => this.spillOut(i + 1),
            (error: unknown) => {
              out.length = 0;
              throw error;
            },
          );
        }
      }
    } catch (error) {
      out.length = 0;
      throw error;
    }
    out.length = 0;
  }

  /**
   * Spills whole records, none of them split across segments unless it is larger than a
   * segment: a run too long for the open segment is cut at record boundaries.
   */
  private spill(records: Buffer): Promise<void> | void {
    this.keptBytes += records.length;
    const { writer, target } = this;
    if (records.length <= writer.maxSegmentBytes - SEGMENT_HEADER_BYTES) {
      const kept = writer.keepTogether(target, records.length);
      if (kept !== undefined) return kept.then(() => writer.append(target, records));
      return writer.append(target, records);
    }
    return this.spillCut(records);
  }

  /** {@link spill} of a run longer than a segment: cut at record boundaries. */
  private async spillCut(records: Buffer): Promise<void> {
    const writer = this.writer;
    const room = writer.maxSegmentBytes - SEGMENT_HEADER_BYTES;
    let start = 0;
    let end = 0;
    while (end < records.length) {
      const next = end + RECORD_LENGTH_BYTES + records.readInt32BE(end);
      if (next - start > room && end > start) {
        await writer.keepTogether(this.target, end - start);
        await writer.append(this.target, records.subarray(start, end));
        start = end;
      }
      end = next;
    }
    await writer.keepTogether(this.target, end - start);
    await writer.append(this.target, records.subarray(start, end));
  }

  /**
   * The virtual channels the read left inside a record (cut tails), of the old subtasks
   * `counted` says count: their channel and bytes so far (from the length field on).
   */
  openTails(counted: (subtask: number) => boolean = () => true): CutTail[] {
    const tails: CutTail[] = [];
    for (const [id, parser] of this.parsers) {
      const bytes = parser.hasPartialData ? parser.partialBytes() : undefined;
      if (bytes !== undefined && counted(parser.from.subtask)) {
        tails.push({ id, from: parser.from, bytes });
      }
    }
    return tails;
  }

  /**
   * Completes cut tail `tail` with `record` (its whole body, joined from the upstream's output
   * state): judged and counted as any record, and spilled to the end of its channel if it
   * survives. The tail is then no longer cut.
   */
  async complete(tail: CutTail, record: Buffer): Promise<void> {
    const parser = this.parsers.get(tail.id);
    if (parser === undefined) return;
    this.parsers.delete(tail.id);
    this.target = { gate: tail.from.gate, channel: tail.from.channel };
    parser.completeWith(record, this.out);
    await this.spillOut(0);
  }

  /**
   * The whole checkpoint was read: throws a `CorruptCheckpointError` for a virtual channel that
   * ended inside a record, at that record's start (the earliest such record, if several).
   *
   * `dropPartialTails`: a Flink input channel's state may end inside a record whose rest is in
   * the upstream subtask's output state (unaligned checkpoints split records there; Flink's
   * recovery completes them from the network). Such a tail is not corrupt: it is dropped, as
   * Flink's own filtering of that state alone would leave it (never delivered, never kept).
   */
  finish(dropPartialTails = false, counted: (subtask: number) => boolean = () => true): void {
    if (dropPartialTails) {
      for (const parser of this.parsers.values()) {
        if (parser.hasPartialData && counted(parser.from.subtask)) this.cutTails++;
      }
      this.parsers.clear();
      return;
    }
    let first: RecordParser | undefined;
    for (const parser of this.parsers.values()) {
      if (!parser.hasPartialData) continue;
      if (first === undefined || parser.partialRecordStart < first.partialRecordStart) {
        first = parser;
      }
    }
    this.parsers.clear();
    first?.finish();
  }
}
