/**
 * One channel's bytes as Flink's network stack frames them — `[int32 length][StreamElement]`,
 * an element free to span entries — cut into elements, and each element read as
 * `StreamElementSerializer` wrote it (tags 0–6, the same in 1.20 and 2.x). The framer holds at
 * most the one element that is still open, so memory is bounded by the largest element allowed.
 */
import { StreamElementTag } from '../stream-element.ts';
import { KEY_HASH_SEED, hashKeyBytes, keyGroupForKeyHash } from '../../../rescale/key-groups.ts';
import type { FlinkKey } from '../entry-source.ts';
import { ValueShapeError, type FlinkValue, type ValueDecoder } from './decode.ts';

/** What an element is, as `flink records` prints it (DESIGN §8). */
export type FlinkElementKind =
  'record' | 'watermark' | 'watermarkStatus' | 'latencyMarker' | 'recordAttributes' | 'partial';

/**
 * Where an element is: the operator (its id), the subtask, and either an input channel
 * (`gate`, `channel`) or an output subpartition (`partition`, `subpartition`); `index` is the
 * element's 0-based place among that one channel's elements in Flink's reading order, partial
 * pieces included. `flink rewrite --drop` selects elements by exactly this.
 */
export type FlinkElementPosition =
  | {
      operator: string;
      subtask: number;
      side: 'input';
      gate: number;
      channel: number;
      index: number;
    }
  | {
      operator: string;
      subtask: number;
      side: 'output';
      partition: number;
      subpartition: number;
      index: number;
    };

/** Where the rest of a stitched record came from: the upstream's output subpartition. */
export interface StitchedFrom {
  operator: string;
  subtask: number;
  partition: number;
  subpartition: number;
  /** Bytes taken from the head of that subpartition's state. */
  bytes: number;
}

/**
 * One element of a channel's in-flight data. `bytes` is the element's size (its tag and
 * payload; for a `partial`, the bytes of the piece, length field included). A record's `value`
 * is decoded by the type (64-bit integers as `bigint`), or its value bytes in base64; a
 * partial's `value` is its bytes in base64.
 */
export type FlinkElement = FlinkElementPosition & {
  kind: FlinkElementKind;
  bytes: number;
  /** A record's timestamp (tag 0), or a watermark's. */
  timestamp?: bigint;
  key?: FlinkValue;
  keyGroup?: number;
  value?: FlinkValue;
  /** A partial: `head` (the start of an output subpartition) or `tail` (the end of an input channel). */
  end?: 'head' | 'tail';
  /** A partial's declared element length, when its length field is whole. */
  length?: number;
  /** A watermark status: Flink's `WatermarkStatus` (-1 idle, 0 active). */
  status?: 'idle' | 'active';
  /** Record attributes: `isBacklog`. */
  backlog?: boolean;
  /** A latency marker: marked time, operator id (32 hex digits), subtask. */
  markedTime?: bigint;
  markerOperator?: string;
  markerSubtask?: number;
  /** A 2.x internal watermark: the subpartition it is for. */
  watermarkSubpartition?: number;
  /** A record completed from the upstream's output state. */
  stitched?: StitchedFrom;
};

/** How records are read: their value (a type's decoder or a user hook) and key. */
export interface ElementReading {
  /** A value decoder compiled from a type spec. */
  readonly decodeValue?: ValueDecoder | undefined;
  /** A user hook: the value's bytes to a value; it wins over `decodeValue`. */
  readonly decode?: ((bytes: Uint8Array) => unknown) | undefined;
  readonly key?: FlinkKey | undefined;
  /** For a key's key group (`murmurHash(keyHash) % maxParallelism`). */
  readonly maxParallelism: number;
}

/** Each fixed-size element's exact size, tag included. */
export const FIXED_ELEMENT_SIZES: Readonly<Record<number, number>> = {
  [StreamElementTag.WATERMARK]: 1 + 8,
  [StreamElementTag.LATENCY_MARKER]: 1 + 8 + 8 + 8 + 4,
  [StreamElementTag.WATERMARK_STATUS]: 1 + 4,
  [StreamElementTag.RECORD_ATTRIBUTES]: 1 + 1,
  [StreamElementTag.INTERNAL_WATERMARK]: 1 + 4 + 8,
};

/** The parts of an element past its position: kind, size and what it says. */
export type ElementBody = Omit<FlinkElement, keyof FlinkElementPosition>;

function hex64(v: bigint): string {
  return BigInt.asUintN(64, v).toString(16).padStart(16, '0');
}

/** A record's key, read as `--key` says from the start of its value, and its key group. */
function readKey(
  buf: Buffer,
  at: number,
  end: number,
  reading: ElementReading,
): { key: FlinkValue; keyGroup: number } {
  const key = reading.key!;
  const need = key === 'long' ? 8 : key === 'int' ? 4 : key.bytes;
  if (end - at < need) {
    throw new ValueShapeError(at, `a ${end - at}-byte value is shorter than its ${need}-byte key`);
  }
  let value: FlinkValue;
  let hash: number;
  if (key === 'long') {
    value = buf.readBigInt64BE(at);
    hash = (buf.readInt32BE(at) ^ buf.readInt32BE(at + 4)) | 0;
  } else if (key === 'int') {
    value = buf.readInt32BE(at);
    hash = value;
  } else {
    value = buf.toString('base64', at, at + need);
    hash = hashKeyBytes(KEY_HASH_SEED, buf, at, at + need);
  }
  return { key: value, keyGroup: keyGroupForKeyHash(hash, reading.maxParallelism) };
}

/**
 * Reads one stream element (`buf[start, end)`, without its length field).
 *
 * @throws ValueShapeError (`at` relative to `start`) for an element that is not what its tag
 *   says: an unknown tag, a wrong size, a value that does not parse under the type.
 * @example
 * ```ts
 * decodeElement(Buffer.from([2, 0, 0, 0, 0, 0, 0, 0, 7]), 0, 9, { maxParallelism: 128 });
 * // { kind: 'watermark', bytes: 9, timestamp: 7n }
 * ```
 */
export function decodeElement(
  buf: Buffer,
  start: number,
  end: number,
  reading: ElementReading,
  into: ElementBody = {} as ElementBody,
): ElementBody {
  const size = end - start;
  if (size <= 0) throw new ValueShapeError(0, 'an empty stream element (no tag)');
  const tag = buf[start]!;
  if (
    tag === StreamElementTag.RECORD_WITH_TIMESTAMP ||
    tag === StreamElementTag.RECORD_WITHOUT_TIMESTAMP
  ) {
    const hasTimestamp = tag === StreamElementTag.RECORD_WITH_TIMESTAMP;
    const valueAt = start + (hasTimestamp ? 9 : 1);
    if (valueAt > end)
      throw new ValueShapeError(1, `a record of ${size} byte(s) cannot hold its timestamp`);
    // Written into the caller's object (its position already set): one allocation an element.
    const out = into;
    out.kind = 'record';
    out.bytes = size;
    if (hasTimestamp) out.timestamp = buf.readBigInt64BE(start + 1);
    if (reading.key !== undefined) {
      const { key, keyGroup } = readKey(buf, valueAt, end, reading);
      out.key = key;
      out.keyGroup = keyGroup;
    }
    if (reading.decode !== undefined) {
      // A copy: the chunk under `buf` is reused once this call returns.
      out.value = reading.decode(Uint8Array.prototype.slice.call(buf, valueAt, end)) as FlinkValue;
    } else if (reading.decodeValue !== undefined) {
      const cursor = { buf, pos: valueAt, end };
      try {
        out.value = reading.decodeValue(cursor);
      } catch (error) {
        if (error instanceof ValueShapeError)
          throw new ValueShapeError(error.at - start, error.message);
        throw error;
      }
      if (cursor.pos !== end) {
        throw new ValueShapeError(
          cursor.pos - start,
          `the value ends ${end - cursor.pos} byte(s) before the record does (the type does not match)`,
        );
      }
    } else {
      out.value = buf.toString('base64', valueAt, end);
    }
    return out;
  }
  const fixed = FIXED_ELEMENT_SIZES[tag];
  if (fixed === undefined) throw new ValueShapeError(0, `unknown stream element tag ${tag}`);
  if (size !== fixed) {
    throw new ValueShapeError(
      0,
      `a stream element with tag ${tag} has ${size} bytes, expected ${fixed}`,
    );
  }
  switch (tag) {
    case StreamElementTag.WATERMARK:
      return Object.assign(into, {
        kind: 'watermark' as const,
        bytes: size,
        timestamp: buf.readBigInt64BE(start + 1),
      });
    case StreamElementTag.INTERNAL_WATERMARK:
      return Object.assign(into, {
        kind: 'watermark' as const,
        bytes: size,
        watermarkSubpartition: buf.readInt32BE(start + 1),
        timestamp: buf.readBigInt64BE(start + 5),
      });
    case StreamElementTag.WATERMARK_STATUS: {
      const status = buf.readInt32BE(start + 1);
      if (status !== -1 && status !== 0) {
        throw new ValueShapeError(
          1,
          `watermark status ${status} (Flink writes -1 idle or 0 active)`,
        );
      }
      return Object.assign(into, {
        kind: 'watermarkStatus' as const,
        bytes: size,
        status: status === -1 ? ('idle' as const) : ('active' as const),
      });
    }
    case StreamElementTag.RECORD_ATTRIBUTES:
      return Object.assign(into, {
        kind: 'recordAttributes' as const,
        bytes: size,
        backlog: buf[start + 1] !== 0,
      });
    default:
      // LatencyMarker: marked time, the operator id's lower then upper half, the subtask.
      return {
        kind: 'latencyMarker',
        bytes: size,
        markedTime: buf.readBigInt64BE(start + 1),
        markerOperator:
          hex64(buf.readBigInt64BE(start + 17)) + hex64(buf.readBigInt64BE(start + 9)),
        markerSubtask: buf.readInt32BE(start + 25),
      };
  }
}

/** A complete element's bytes (without the length field) and the file byte it started at. */
export type OnFrame = (buf: Buffer, start: number, end: number, fileOffset: number) => void;

/** What a framer holds when its channel ends inside an element. */
export interface OpenFrame {
  /** The piece: from the element's length field to the channel's end. */
  readonly bytes: Buffer;
  /** File offset of the piece's first byte. */
  readonly fileOffset: number;
  /** The declared element length, when the length field is whole. */
  readonly length: number | undefined;
}

/** Thrown by a framer for a length field no element can have. */
export class FrameLengthError extends Error {
  constructor(
    readonly fileOffset: number,
    reason: string,
  ) {
    super(reason);
  }
}

/**
 * Cuts one channel's byte stream into elements. Whole elements inside one chunk are handed
 * on as views of it (no copy); only an element that spans chunks is copied, and only it.
 *
 * @example
 * ```ts
 * const framer = new ChannelFramer(16 << 20);
 * framer.push(chunk, fileOffset, (buf, start, end, at) => console.log(end - start, at));
 * framer.open(); // the piece left when the channel ended inside an element, or undefined
 * ```
 */
export class ChannelFramer {
  private readonly lengthField = Buffer.alloc(4);
  private lengthFill = 0;
  private body: Buffer | undefined;
  private bodyFill = 0;
  private startOffset = -1;

  constructor(private readonly maxElementBytes: number) {}

  /** Feeds the next piece of the channel; `fileOffset` is the file byte of `chunk[0]`. */
  push(chunk: Buffer, fileOffset: number, onFrame: OnFrame): void {
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      if (this.lengthFill === 0 && this.body === undefined && n - i >= 4) {
        // Fast path: a length field, maybe the whole element, inside this chunk.
        const length = this.checkLength(chunk.readInt32BE(i), fileOffset + i);
        if (n - i - 4 >= length) {
          onFrame(chunk, i + 4, i + 4 + length, fileOffset + i);
          i += 4 + length;
          continue;
        }
        this.startOffset = fileOffset + i;
        chunk.copy(this.lengthField, 0, i, i + 4);
        this.lengthFill = 4;
        this.body = Buffer.allocUnsafe(length);
        this.bodyFill = 0;
        i += 4;
        continue;
      }
      if (this.lengthFill < 4) {
        if (this.lengthFill === 0) this.startOffset = fileOffset + i;
        const take = Math.min(4 - this.lengthFill, n - i);
        chunk.copy(this.lengthField, this.lengthFill, i, i + take);
        this.lengthFill += take;
        i += take;
        if (this.lengthFill < 4) break;
        const length = this.checkLength(this.lengthField.readInt32BE(0), this.startOffset);
        this.body = Buffer.allocUnsafe(length);
        this.bodyFill = 0;
      }
      const body = this.body!;
      const take = Math.min(body.length - this.bodyFill, n - i);
      chunk.copy(body, this.bodyFill, i, i + take);
      this.bodyFill += take;
      i += take;
      if (this.bodyFill === body.length) {
        const at = this.startOffset;
        this.reset();
        onFrame(body, 0, body.length, at);
      }
    }
  }

  private checkLength(length: number, at: number): number {
    if (length <= 0 || length > this.maxElementBytes) {
      throw new FrameLengthError(
        at,
        length <= 0
          ? `element length ${length} (an element holds at least its tag)`
          : `element length ${length} is larger than the ${this.maxElementBytes}-byte limit`,
      );
    }
    return length;
  }

  private reset(): void {
    this.lengthFill = 0;
    this.body = undefined;
    this.bodyFill = 0;
    this.startOffset = -1;
  }

  /** The open element's piece, when the channel ended inside one (Flink's `hasPartialData`). */
  open(): OpenFrame | undefined {
    if (this.lengthFill === 0) return undefined;
    const field = this.lengthField.subarray(0, this.lengthFill);
    const bytes =
      this.body === undefined
        ? Buffer.from(field)
        : Buffer.concat([field, this.body.subarray(0, this.bodyFill)]);
    return {
      bytes,
      fileOffset: this.startOffset,
      length: this.lengthFill === 4 ? this.lengthField.readInt32BE(0) : undefined,
    };
  }
}
