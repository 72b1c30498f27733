/**
 * One subtask's channel state read as elements: the entries `readFlinkEntries` streams (Flink's
 * reading order) go to one framer per channel, each complete element is decoded and handed on
 * with its position, and when the read ends each channel's open piece becomes a `partial`.
 * An output subpartition's state may begin inside a record (its first bytes are the
 * downstream's), so its start is probed for the first element boundary before it is framed.
 */
import { CorruptCheckpointError } from '../../../errors.ts';
import {
  ChannelFramer,
  FrameLengthError,
  decodeElement,
  type ElementBody,
  type ElementReading,
  type FlinkElement,
  type FlinkElementPosition,
  type OpenFrame,
} from './elements.ts';
import { ValueShapeError } from './decode.ts';
import { findFirstElement, type FrameCheck } from './stitch.ts';

/** Where a channel is, without the element index. */
export type ChannelPosition = FlinkElementPosition extends infer P
  ? P extends unknown
    ? Omit<P, 'index'>
    : never
  : never;

/** A channel's read so far. */
export interface ChannelRead {
  readonly position: ChannelPosition;
  /** The delegate file its entries are in (for error messages). */
  file: string;
  index: number;
  readonly framer: ChannelFramer;
  /** Output side, while the first element boundary is not yet found: the bytes so far. */
  probe:
    { pieces: { chunk: Buffer; fileOffset: number }[]; bytes: number; tried: number } | undefined;
}

/** Describes a channel for messages: `input gate 0 channel 1`. */
export function describeChannel(p: ChannelPosition): string {
  return p.side === 'input'
    ? `input gate ${p.gate} channel ${p.channel}`
    : `output partition ${p.partition} subpartition ${p.subpartition}`;
}

/**
 * The reader's per-element work: framing, decoding, errors with their channel and index.
 * `emit` receives each element in order.
 */
export class ElementSink {
  private readonly probeLimit: number;
  readonly check: FrameCheck;

  constructor(
    private readonly reading: ElementReading,
    private readonly maxElementBytes: number,
    private readonly emit: (element: FlinkElement) => void,
  ) {
    // A start that frames as nothing valid within this many bytes is given up on (bounded memory).
    this.probeLimit = 2 * maxElementBytes + (1 << 20);
    this.check = (buf, start, end) => {
      try {
        decodeElement(buf, start, end, reading);
        return true;
      } catch (error) {
        if (error instanceof ValueShapeError) return false;
        throw error;
      }
    };
  }

  /** A new channel read: output subpartitions start probing for their first element. */
  open(position: ChannelPosition, file: string): ChannelRead {
    return {
      position,
      file,
      index: 0,
      framer: new ChannelFramer(this.maxElementBytes),
      probe: position.side === 'output' ? { pieces: [], bytes: 0, tried: 0 } : undefined,
    };
  }

  corrupt(read: ChannelRead, fileOffset: number, reason: string): CorruptCheckpointError {
    return new CorruptCheckpointError(
      read.file,
      fileOffset,
      `${describeChannel(read.position)} element ${read.index}: ${reason}`,
    );
  }

  /** A new element at the channel's next index: its position set, the rest to be filled. */
  private positioned(read: ChannelRead): FlinkElement {
    const p = read.position;
    const index = read.index++;
    return (
      p.side === 'input'
        ? {
            operator: p.operator,
            subtask: p.subtask,
            side: p.side,
            gate: p.gate,
            channel: p.channel,
            index,
          }
        : {
            operator: p.operator,
            subtask: p.subtask,
            side: p.side,
            partition: p.partition,
            subpartition: p.subpartition,
            index,
          }
    ) as FlinkElement;
  }

  private element(read: ChannelRead, body: ElementBody): FlinkElement {
    return Object.assign(this.positioned(read), body);
  }

  /** Decodes one framed element and emits it. */
  frame(read: ChannelRead, buf: Buffer, start: number, end: number, fileOffset: number): void {
    const element = this.positioned(read);
    try {
      decodeElement(buf, start, end, this.reading, element);
    } catch (error) {
      if (!(error instanceof ValueShapeError)) throw error;
      read.index--;
      throw this.corrupt(read, fileOffset + 4 + error.at, error.message);
    }
    this.emit(element);
  }

  /** The next piece of a channel's bytes. */
  push(read: ChannelRead, chunk: Buffer, fileOffset: number): void {
    if (read.probe !== undefined) {
      read.probe.pieces.push({ chunk: Buffer.from(chunk), fileOffset });
      read.probe.bytes += chunk.length;
      if (read.probe.bytes >= 2 * read.probe.tried + 256) this.tryProbe(read, false);
      return;
    }
    this.feed(read, chunk, fileOffset);
  }

  private feed(read: ChannelRead, chunk: Buffer, fileOffset: number): void {
    try {
      read.framer.push(chunk, fileOffset, (buf, start, end, at) =>
        this.frame(read, buf, start, end, at),
      );
    } catch (error) {
      if (error instanceof FrameLengthError)
        throw this.corrupt(read, error.fileOffset, error.message);
      throw error;
    }
  }

  /** Looks for the first element boundary of an output subpartition; frames from it once found. */
  private tryProbe(read: ChannelRead, complete: boolean): void {
    const probe = read.probe!;
    probe.tried = probe.bytes;
    const bytes = Buffer.concat(probe.pieces.map((p) => p.chunk));
    const giveUp = !complete && probe.bytes > this.probeLimit;
    const head = findFirstElement(bytes, complete || giveUp, this.maxElementBytes, this.check);
    if (head === undefined) return;
    read.probe = undefined;
    if (head > 0) {
      this.emit(
        this.element(read, {
          kind: 'partial',
          bytes: head,
          end: 'head',
          value: bytes.toString('base64', 0, head),
        }),
      );
    }
    let skip = head;
    for (const { chunk, fileOffset } of probe.pieces) {
      if (skip >= chunk.length) {
        skip -= chunk.length;
        continue;
      }
      this.feed(read, chunk.subarray(skip), fileOffset + skip);
      skip = 0;
    }
  }

  /** The channel's state ended: a probe still open is decided, an open element returned. */
  finish(read: ChannelRead): OpenFrame | undefined {
    if (read.probe !== undefined) this.tryProbe(read, true);
    return read.framer.open();
  }

  /** Emits an open piece as a `partial` element (an input channel's tail). */
  partial(read: ChannelRead, open: OpenFrame, end: 'head' | 'tail'): void {
    this.emit(
      this.element(read, {
        kind: 'partial',
        bytes: open.bytes.length,
        end,
        ...(open.length !== undefined ? { length: open.length } : {}),
        value: open.bytes.toString('base64'),
      }),
    );
  }

  /** Emits a record completed from the upstream's head (at the tail's index). */
  stitched(
    read: ChannelRead,
    element: Buffer,
    open: OpenFrame,
    from: FlinkElement['stitched'],
  ): void {
    let body: ElementBody;
    try {
      body = decodeElement(element, 0, element.length, this.reading);
    } catch (error) {
      if (!(error instanceof ValueShapeError)) throw error;
      throw this.corrupt(
        read,
        open.fileOffset + 4 + error.at,
        `${error.message} (the record completed from upstream ${from!.operator} subtask ${from!.subtask})`,
      );
    }
    this.emit(this.element(read, { ...body, stitched: from! }));
  }
}
