/**
 * Checkpoint files v1 and v2 (`SPWC`, docs/formats.md): the layout and its limits, shared by
 * the reader, the writer and the generator.
 *
 * Layout (big-endian): `"SPWC"`, `uint32 version` (1 or 2), then entries until EOF, each
 * `int32 gate, int32 channel, int32 length, uint32 crc32(payload), payload`; a v2 entry is led
 * by `int32 subtask` (the old subtask that wrote it) before `gate`.
 */
import { isWebPage, WEB_PAGE_ANSWER } from '../web-page.ts';
import type { CorruptCheckpointError } from '../../errors.ts';

/**
 * The four magic bytes every checkpoint starts with.
 *
 * @example
 * ```ts
 * header.subarray(0, 4).equals(CHECKPOINT_MAGIC); // true for a checkpoint
 * ```
 */
export const CHECKPOINT_MAGIC: Buffer = Buffer.from('SPWC', 'latin1');

/**
 * The version written by default: v1, whose entries carry no subtask.
 *
 * @example
 * ```ts
 * header.readUInt32BE(4) === CHECKPOINT_VERSION;
 * ```
 */
export const CHECKPOINT_VERSION = 1;

/**
 * The rescalable version: each entry is led by the old subtask that wrote it.
 *
 * @example
 * ```ts
 * const writer = await CheckpointWriter.create(path, { version: CHECKPOINT_VERSION_V2 });
 * ```
 */
export const CHECKPOINT_VERSION_V2 = 2;

/** A checkpoint file version this code reads and writes. */
export type CheckpointVersion = typeof CHECKPOINT_VERSION | typeof CHECKPOINT_VERSION_V2;

/**
 * Size of a v2 entry's extra leading field (`int32 subtask`).
 *
 * @example
 * ```ts
 * const headerBytes = ENTRY_HEADER_BYTES + (version === 2 ? SUBTASK_FIELD_BYTES : 0); // 20
 * ```
 */
export const SUBTASK_FIELD_BYTES = 4;

/**
 * Largest valid old-subtask index of a v2 entry (`0 ≤ subtask < 32768`, Flink's largest
 * parallelism).
 *
 * @example
 * ```ts
 * if (subtask > MAX_SUBTASK) throw new RangeError('subtask out of range');
 * ```
 */
export const MAX_SUBTASK = 32767;

/** The entry header size of a file of `version`: 16 bytes in v1, 20 in v2. */
export function entryHeaderBytes(version: CheckpointVersion): number {
  return version === CHECKPOINT_VERSION_V2
    ? ENTRY_HEADER_BYTES + SUBTASK_FIELD_BYTES
    : ENTRY_HEADER_BYTES;
}

/**
 * Size of the file header (magic + version).
 *
 * @example
 * ```ts
 * const firstEntryOffset = CHECKPOINT_HEADER_BYTES; // 8
 * ```
 */
export const CHECKPOINT_HEADER_BYTES = 8;

/**
 * Size of a v1 entry header (gate, channel, length, crc32); a v2 one adds the subtask.
 *
 * @example
 * ```ts
 * const next = entryOffset + ENTRY_HEADER_BYTES + length;
 * ```
 */
export const ENTRY_HEADER_BYTES = 16;

/**
 * Largest valid gate index (gates are `0 ≤ gate < 65536`).
 *
 * @example
 * ```ts
 * if (gate > MAX_GATE) throw new RangeError('gate out of range');
 * ```
 */
export const MAX_GATE = 65535;

/**
 * Largest valid channel index (channels are `0 ≤ channel < 65536`).
 *
 * @example
 * ```ts
 * if (channel > MAX_CHANNEL) throw new RangeError('channel out of range');
 * ```
 */
export const MAX_CHANNEL = 65535;

// One fact shared with rescale/ (a rescaled record is written back as one entry).
export { MAX_ENTRY_LENGTH } from '../../entry-length.ts';

/** `0x0000abcd`: how CRCs and other 32-bit fields appear in messages. */
export function hex32(value: number): string {
  return `0x${(value >>> 0).toString(16).padStart(8, '0')}`;
}

/**
 * Throws unless the first `fill` bytes of `header` match the magic. Called as soon as bytes
 * arrive, so a short non-checkpoint reads as "bad magic", not as "truncated".
 */
export function checkMagic(
  header: Buffer,
  fill: number,
  corrupt: (offset: number, reason: string) => CorruptCheckpointError,
): void {
  const n = Math.min(fill, CHECKPOINT_MAGIC.length);
  for (let k = 0; k < n; k++) {
    if (header[k] !== CHECKPOINT_MAGIC[k]) {
      if (fill >= 4 && isWebPage(header)) {
        throw corrupt(0, `${WEB_PAGE_ANSWER} (HTML), not a checkpoint file`);
      }
      throw corrupt(
        0,
        `bad magic 0x${header.subarray(0, n).toString('hex')} (expected 0x${CHECKPOINT_MAGIC.toString('hex')} "SPWC")`,
      );
    }
  }
}
