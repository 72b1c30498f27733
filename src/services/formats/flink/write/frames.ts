/**
 * Cuts one channel's bytes into Flink's network frames `[int32 length][StreamElement]` as they
 * arrive (chunks of entries, a frame spanning any number of them) and keeps or drops each
 * frame whole. An input channel's state starts at a frame (Flink snapshots a half-read record
 * from its start); what is left at the end is a `partial` element, the head of a record whose
 * rest is in the upstream's output state: it is never dropped (a drop there would corrupt the
 * upstream's half too) and never decided on.
 */
import { StreamElementTag } from '../stream-element.ts';

/** What a stream element is, by its tag (`StreamElementSerializer`). */
export type FlinkElementKind =
  | 'record'
  | 'watermark'
  | 'latencyMarker'
  | 'watermarkStatus'
  | 'recordAttributes'
  | 'internalWatermark'
  | 'partial';

/** The kind a tag byte says. Unknown tags read as `record` is never assumed: they throw. */
export function elementKind(tag: number | undefined): Exclude<FlinkElementKind, 'partial'> {
  switch (tag) {
    case StreamElementTag.RECORD_WITH_TIMESTAMP:
    case StreamElementTag.RECORD_WITHOUT_TIMESTAMP:
      return 'record';
    case StreamElementTag.WATERMARK:
      return 'watermark';
    case StreamElementTag.LATENCY_MARKER:
      return 'latencyMarker';
    case StreamElementTag.WATERMARK_STATUS:
      return 'watermarkStatus';
    case StreamElementTag.RECORD_ATTRIBUTES:
      return 'recordAttributes';
    case StreamElementTag.INTERNAL_WATERMARK:
      return 'internalWatermark';
    default:
      throw new RangeError(`unknown stream element tag ${tag}`);
  }
}

/**
 * Decides one whole frame: `element` is the StreamElement without its length (borrowed for
 * the call), `index` its position in the channel. True drops it.
 */
export type FrameDecision = (element: Buffer, index: number) => boolean;

/**
 * A streaming frame filter for one channel.
 *
 * @example
 * ```ts
 * const filter = new FrameFilter((element, index) => index === 3, (b) => kept.push(b));
 * filter.push(chunk); // per chunk of the channel's entries, in order
 * const tail = filter.end(); // the partial element left, if any
 * ```
 */
export class FrameFilter {
  /** The position of the frame being read (= frames completed so far). */
  private index = 0;
  /** The 4 length bytes of the frame being read, as far as they came. */
  private readonly lengthBytes = Buffer.alloc(4);
  private lengthFill = 0;
  /** The frame being read, length included, once its length is known (null before). */
  private frame: Buffer | null = null;
  private frameFill = 0;

  /**
   * @param decide called once per complete frame.
   * @param emit receives kept bytes, borrowed for the call (copy to keep).
   * @param corrupt makes the error for a negative length (`at`: bytes of the channel before it).
   */
  constructor(
    private readonly decide: FrameDecision,
    private readonly emit: (bytes: Buffer) => void,
    private readonly corrupt: (at: number, reason: string) => Error,
  ) {}

  /** Bytes of the channel seen so far. */
  private seen = 0;

  /** The channel's next bytes. */
  push(chunk: Buffer): void {
    let pos = 0;
    while (pos < chunk.length) {
      if (this.frame === null) {
        // A frame wholly inside the chunk is decided where it lies: no copy.
        if (this.lengthFill === 0 && chunk.length - pos >= 4) {
          const length = chunk.readInt32BE(pos);
          this.checkLength(length, pos);
          if (chunk.length - pos >= 4 + length) {
            const whole = chunk.subarray(pos, pos + 4 + length);
            if (!this.decide(whole.subarray(4), this.index)) this.emit(whole);
            this.index++;
            pos += 4 + length;
            continue;
          }
        }
        const n = Math.min(4 - this.lengthFill, chunk.length - pos);
        chunk.copy(this.lengthBytes, this.lengthFill, pos, pos + n);
        this.lengthFill += n;
        pos += n;
        if (this.lengthFill < 4) break;
        const length = this.lengthBytes.readInt32BE(0);
        this.checkLength(length, pos - 4);
        this.frame = Buffer.allocUnsafe(4 + length);
        this.lengthBytes.copy(this.frame, 0);
        this.frameFill = 4;
      }
      const n = Math.min(this.frame.length - this.frameFill, chunk.length - pos);
      chunk.copy(this.frame, this.frameFill, pos, pos + n);
      this.frameFill += n;
      pos += n;
      if (this.frameFill === this.frame.length) {
        if (!this.decide(this.frame.subarray(4), this.index)) this.emit(this.frame);
        this.index++;
        this.frame = null;
        this.lengthFill = 0;
      }
    }
    this.seen += chunk.length;
  }

  private checkLength(length: number, at: number): void {
    if (length < 0) {
      throw this.corrupt(this.seen + at, `negative stream element length ${length}`);
    }
  }

  /**
   * The channel ended: the bytes of an unfinished frame (the `partial` element, at index
   * `index`) are emitted as they are — unless `drop(index)` says its whole record goes (its
   * other half is dropped from the upstream's output state too) — and returned with their index.
   */
  end(
    drop: (index: number) => boolean = () => false,
  ): { index: number; bytes: number } | undefined {
    let piece: Buffer | undefined;
    if (this.frame !== null) piece = this.frame.subarray(0, this.frameFill);
    else if (this.lengthFill > 0) piece = this.lengthBytes.subarray(0, this.lengthFill);
    if (piece === undefined) return undefined;
    if (!drop(this.index)) this.emit(piece);
    return { index: this.index, bytes: piece.length };
  }
}
