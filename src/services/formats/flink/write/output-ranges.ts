/**
 * Where the elements named on the output side are. An output subpartition's state may begin
 * with the rest of a record whose first bytes the downstream holds, so its frames cannot be
 * cut from its first byte: `flink records` finds the first element boundary, and its element
 * iteration (`readFlinkRecords`) is used here as it is, so an output position means exactly
 * the element `flink records` prints there. Each element's byte range in the subpartition's
 * stream follows from the sizes it reports (a `partial` head: its piece; any other element:
 * its 4-byte length and its bytes).
 */
import { RewriteRefusedError } from '../../../errors.ts';
import type { SourceOptions } from '../../../locations/source.ts';
import type { FlinkPathOptions } from '../paths.ts';
import { readFlinkRecords } from '../records/read-records.ts';
import type { FlinkElementKind } from './frames.ts';
import { channelId, type ResolvedDrops } from './selectors.ts';

/** What the element reads need. */
export type ReadOptions = FlinkPathOptions & {
  signal?: AbortSignal | undefined;
  remote?: SourceOptions | undefined;
  /** Per gate, the upstream operator (`flink records --upstream`); else the only one. */
  upstream?: Readonly<Record<number, string>> | undefined;
};

/** One output element to drop: bytes `[start, end)` of its subpartition's payload stream. */
export interface OutputDrop {
  readonly start: number;
  readonly end: number;
  readonly index: number;
  readonly selector: string;
  readonly kind: Exclude<FlinkElementKind, 'partial'>;
  /** The head half of a record dropped at its input tail (reported there, not here). */
  readonly silent?: boolean;
}

/** A record cut between an input channel's end and its upstream's output head, to drop whole. */
export interface StitchedTail {
  readonly selector: string;
  /** Bytes of the record (both halves, length field included). */
  readonly bytes: number;
}

/**
 * The byte ranges of every output-side position in `drops`, per channel id (ascending).
 *
 * @throws RewriteRefusedError (`'partial'`) for a position naming a partial piece.
 * @example
 * ```ts
 * const ranges = await outputDropRanges('chk-7/_metadata', drops, {});
 * ```
 */
export async function outputDropRanges(
  metadataLocation: string,
  drops: ResolvedDrops,
  options: FlinkPathOptions & {
    signal?: AbortSignal | undefined;
    remote?: SourceOptions | undefined;
  },
): Promise<Map<string, OutputDrop[]>> {
  const wanted = new Map<string, { operator: string; subtask: number }>();
  for (const id of drops.positions.keys()) {
    const [operator, subtask, side] = id.split('/');
    if (side === 'output')
      wanted.set(`${operator}/${subtask}`, { operator: operator!, subtask: Number(subtask) });
  }
  const ranges = new Map<string, OutputDrop[]>();
  for (const { operator, subtask } of wanted.values()) {
    const offsets = new Map<string, number>();
    const elements = readFlinkRecords({
      checkpoint: metadataLocation,
      operator,
      subtask,
      outputState: true,
      allowPaths: options.allowPaths,
      relocate: options.relocate,
      signal: options.signal,
      remote: options.remote,
    });
    for await (const e of elements) {
      if (e.side !== 'output') continue;
      const id = channelId(operator, subtask, 'output', e.partition, e.subpartition);
      const start = offsets.get(id) ?? 0;
      const end = start + (e.kind === 'partial' ? e.bytes : 4 + e.bytes);
      offsets.set(id, end);
      const selector = drops.positions.get(id)?.get(e.index);
      if (selector === undefined) continue;
      if (e.kind === 'partial') {
        throw new RewriteRefusedError(
          'partial',
          `${selector}: element ${e.index} is a partial record (${e.bytes} byte(s) here; its ` +
            `first bytes are at the end of the downstream subtask's input channel state): ` +
            `dropping one half would corrupt the other, refused`,
        );
      }
      let list = ranges.get(id);
      if (list === undefined) ranges.set(id, (list = []));
      list.push({ start, end, index: e.index, selector, kind: e.kind });
    }
  }
  return ranges;
}

/**
 * Input positions that name a record cut at the end of an input channel and completed from the
 * upstream's output state (as `flink records` stitches it, with the same upstream): such a
 * record is dropped on both sides — its tail here (`tails`, by `channel id/index`) and its head
 * there (`heads`, a range of the upstream subpartition from byte 0, merged into the output
 * ranges). A cut record without a known upstream stays refused.
 *
 * @example
 * ```ts
 * const { tails, heads } = await stitchedTails('chk-7/_metadata', drops, { upstream: { 0: 'map' } });
 * ```
 */
export async function stitchedTails(
  metadataLocation: string,
  drops: ResolvedDrops,
  options: ReadOptions,
): Promise<{ tails: Map<string, StitchedTail>; heads: Map<string, OutputDrop[]> }> {
  const wanted = new Map<string, { operator: string; subtask: number }>();
  for (const id of drops.positions.keys()) {
    const [operator, subtask, side] = id.split('/');
    if (side === 'input')
      wanted.set(`${operator}/${subtask}`, { operator: operator!, subtask: Number(subtask) });
  }
  const tails = new Map<string, StitchedTail>();
  const heads = new Map<string, OutputDrop[]>();
  for (const { operator, subtask } of wanted.values()) {
    const elements = readFlinkRecords({
      checkpoint: metadataLocation,
      operator,
      subtask,
      allowPaths: options.allowPaths,
      relocate: options.relocate,
      signal: options.signal,
      remote: options.remote,
      upstream: options.upstream,
    });
    try {
      for await (const e of elements) {
        if (e.side !== 'input' || e.stitched === undefined) continue;
        const id = channelId(operator, subtask, 'input', e.gate, e.channel);
        const selector = drops.positions.get(id)?.get(e.index);
        if (selector === undefined) continue;
        const s = e.stitched;
        tails.set(`${id}/${e.index}`, { selector, bytes: 4 + e.bytes });
        const head = channelId(s.operator, s.subtask, 'output', s.partition, s.subpartition);
        heads.set(head, [
          { start: 0, end: s.bytes, index: 0, selector, kind: 'record', silent: true },
        ]);
      }
    } catch (error) {
      // Only an opportunity: what records cannot read stitches nothing, and a cut record
      // named there is refused as before. An abort is not swallowed.
      if (options.signal?.aborted === true) throw error;
    }
  }
  return { tails, heads };
}

/**
 * Drops byte ranges from one channel's stream as its chunks come (the ranges ascending).
 *
 * @example
 * ```ts
 * const filter = new RangeFilter(ranges, (b) => kept.push(Buffer.from(b)), (d) => seen(d));
 * filter.push(chunk);
 * ```
 */
export class RangeFilter {
  private position = 0;
  private next = 0;

  constructor(
    private readonly ranges: readonly OutputDrop[],
    private readonly emit: (bytes: Buffer) => void,
    private readonly dropped: (drop: OutputDrop) => void,
  ) {}

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      const pos = this.position + at;
      const range = this.ranges[this.next];
      if (range === undefined || pos < range.start) {
        const until =
          range === undefined ? chunk.length : Math.min(chunk.length, range.start - this.position);
        this.emit(chunk.subarray(at, until));
        at = until;
        continue;
      }
      if (pos === range.start) this.dropped(range);
      const until = Math.min(chunk.length, range.end - this.position);
      at = until;
      if (this.position + at >= range.end) this.next++;
    }
    this.position += chunk.length;
  }

  /** Output state ends on an element boundary: nothing is left over. */
  end(): undefined {
    return undefined;
  }
}
