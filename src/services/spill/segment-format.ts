/**
 * The spill segment format (internal; docs/formats.md), the one definition the writer and the
 * reader share: `int32 gate, int32 channel, int32 bodyLength, uint32 crc32(body), body`, in
 * files `spill-segment-<N>.bin` that are never empty.
 */

/** Segment header: int32 gate, int32 channel, int32 bodyLength, uint32 crc32(body). */
export const SEGMENT_HEADER_BYTES = 16;

/** A segment header as it is on disk. */
export interface SegmentHeader {
  readonly gate: number;
  readonly channel: number;
  /** Body bytes after the header; never 0 on disk. */
  readonly bodyLength: number;
  /** CRC-32 of the body. */
  readonly crc: number;
}

/**
 * The name of the `index`-th spill file of a task.
 *
 * @example
 * ```ts
 * spillFileName(0); // 'spill-segment-0.bin'
 * ```
 */
export function spillFileName(index: number): string {
  return `spill-segment-${index}.bin`;
}

/** Matches a spill file's name (and nothing else a task dir holds). */
export const SPILL_FILE_NAME_RE = /^spill-segment-\d+\.bin$/;

/** Writes `header` at `buf[at…at+16)`. */
export function writeSegmentHeader(buf: Buffer, at: number, header: SegmentHeader): void {
  buf.writeInt32BE(header.gate, at);
  buf.writeInt32BE(header.channel, at + 4);
  buf.writeInt32BE(header.bodyLength, at + 8);
  buf.writeUInt32BE(header.crc, at + 12);
}

/** Reads the header at `buf[0…16)`; the caller checks that it is possible. */
export function readSegmentHeader(buf: Buffer): SegmentHeader {
  return {
    gate: buf.readInt32BE(0),
    channel: buf.readInt32BE(4),
    bodyLength: buf.readInt32BE(8),
    crc: buf.readUInt32BE(12),
  };
}
