/**
 * A spill writer's segments in memory, before any I/O: the open segment (its channel, length
 * and body CRC-32), the sealed segments waiting to be written, and the two buffers that
 * alternate between filling and the write in flight. It never touches a file: every path that
 * creates or grows one stays in spill-writer.ts, where the abort rule (G3) is checked.
 */
import { crc32, crc32Combine, crc32Suffix } from '../crc32.ts';
import type { ChannelInfo } from '../channel.ts';
import { SEGMENT_HEADER_BYTES, writeSegmentHeader } from './segment-format.ts';
import { ioBuffers } from '../buffer-pool.ts';
import { MisuseError } from '../errors.ts';

/** A segment just sealed: its channel and its length, header included. */
export interface SealedSegment {
  readonly gate: number;
  readonly channel: number;
  readonly length: number;
}

/**
 * The filling buffer is 2 × maxSegmentBytes: sealed segments waiting to be written at
 * [0, pending), then the open segment (header space first, body after it). Fewer than
 * maxSegmentBytes are ever pending when a segment opens, so the open one always fits.
 *
 * @example
 * ```ts
 * const segments = new SegmentBuffer(1 << 20);
 * segments.open({ gate: 0, channel: 1 });
 * segments.add(bytes, 0, bytes.length, undefined);
 * segments.seal(); // { gate: 0, channel: 1, length: 20 + bytes.length }
 * await file.write(segments.take(segments.pending));
 * ```
 */
export class SegmentBuffer {
  private buffer: Buffer;
  /**
   * The other buffer (allocated at the first write): it holds the bytes of the write in flight
   * and is not touched until that write settles. The writer waits for it before {@link take}.
   */
  private spare: Buffer | undefined;
  /** Bytes of sealed segments waiting to be written. */
  pending = 0;
  /** The open segment's length so far, header included; 0 when none is open. */
  length = 0;
  gate = -1;
  channel = -1;
  /** CRC-32 of the open segment's body up to `hashed` bytes. */
  private crc = 0;
  /**
   * Body bytes `crc` covers. Bytes added without a known CRC are hashed later, in one pass over
   * the body in the buffer (at the seal, or before a piece with a known CRC is combined in):
   * a filtering spill adds kept records of ~1 KiB each, and the CRC-32's cost per call made
   * its hashing ~6× that of one call per segment (G9's check itself is unchanged: the
   * segment's CRC is of its body, the drain verifies it).
   */
  private hashed = 0;
  private released = false;

  constructor(private readonly maxSegmentBytes: number) {
    this.buffer = ioBuffers.take(2 * maxSegmentBytes);
  }

  /** Starts a segment of `info` after the pending ones. */
  open(info: ChannelInfo): void {
    this.checkUsable();
    this.gate = info.gate;
    this.channel = info.channel;
    this.length = SEGMENT_HEADER_BYTES;
    this.crc = 0;
    this.hashed = 0;
  }

  /** The buffers went back to the pool at {@link release}: any use after it is a bug. */
  private checkUsable(): void {
    if (this.released) throw new MisuseError('segment buffer used after release()');
  }

  /** Brings `crc` up to the whole body so far: hashes what was added without a known CRC. */
  private hashBody(): void {
    const body = this.length - SEGMENT_HEADER_BYTES;
    if (this.hashed === body) return;
    const at = this.pending + SEGMENT_HEADER_BYTES;
    this.crc = crc32(this.buffer.subarray(at + this.hashed, at + body), this.crc);
    this.hashed = body;
  }

  /**
   * Copies `bytes[offset, offset + n)` into the open segment. `restCrc`, when the caller knows
   * it, is the CRC-32 of `bytes[offset…]`: the piece's CRC is then derived from it rather than
   * hashed, and the returned value is the CRC of what is left after the piece.
   */
  add(bytes: Buffer, offset: number, n: number, restCrc: number | undefined): number | undefined {
    this.checkUsable();
    const rest = bytes.length - offset;
    const piece = n === bytes.length ? bytes : bytes.subarray(offset, offset + n);
    if (restCrc !== undefined) {
      this.hashBody();
      const bodyBefore = this.length - SEGMENT_HEADER_BYTES;
      // Split off this segment's piece: hash the piece, derive the rest's CRC from it.
      const pieceCrc = n === rest ? restCrc : crc32(piece);
      if (n < rest) restCrc = crc32Suffix(restCrc, pieceCrc, rest - n);
      this.crc = bodyBefore === 0 ? pieceCrc : crc32Combine(this.crc, pieceCrc, n);
      this.hashed = bodyBefore + n;
    }
    piece.copy(this.buffer, this.pending + this.length);
    this.length += n;
    return restCrc;
  }

  /**
   * Seals the open segment in place (its header written before its body), or drops it when it
   * has no body: never an empty segment, hence never an empty file.
   */
  seal(): SealedSegment | undefined {
    this.checkUsable();
    const bodyLength = this.length - SEGMENT_HEADER_BYTES;
    if (bodyLength > 0) this.hashBody();
    const length = this.length;
    this.length = 0;
    if (bodyLength === 0) return undefined;
    const at = this.pending;
    writeSegmentHeader(this.buffer, at, {
      gate: this.gate,
      channel: this.channel,
      bodyLength,
      crc: this.crc,
    });
    this.pending = at + length;
    return { gate: this.gate, channel: this.channel, length };
  }

  /**
   * Hands the first `length` pending bytes to a write: the filled buffer now belongs to it, and
   * the next bytes go to the other one, which no write may hold any more. Pending bytes are
   * dropped whatever the write's outcome: after a failed write everything is discarded, and a
   * retry would write them twice.
   */
  take(length: number): Buffer {
    this.checkUsable();
    const buffer = this.buffer;
    this.buffer = this.spare ?? ioBuffers.take(buffer.length);
    this.spare = buffer;
    this.pending = 0;
    return buffer.subarray(0, length);
  }

  /**
   * Gives both buffers to the process's pool (buffer-pool.ts) for the next writer. Only once
   * no write holds either any more (the writer's last write settled); idempotent, and the
   * buffer refuses any use after it.
   */
  release(): void {
    if (this.released) return;
    this.released = true;
    ioBuffers.give(this.buffer);
    if (this.spare !== undefined) ioBuffers.give(this.spare);
    this.spare = undefined;
    this.pending = 0;
    this.length = 0;
  }
}
