/**
 * Checkpoint file v1 (`SPWC`, docs/formats.md): the layout and its limits, shared by the reader,
 * the writer and the generator.
 *
 * Layout (big-endian): `"SPWC"`, `uint32 version = 1`, then entries until EOF, each
 * `int32 gate, int32 channel, int32 length, uint32 crc32(payload), payload`.
 */
import type { CorruptCheckpointError } from '../errors.ts';

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
 * The only version this code reads and writes.
 *
 * @example
 * ```ts
 * header.readUInt32BE(4) === CHECKPOINT_VERSION;
 * ```
 */
export const CHECKPOINT_VERSION = 1;

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
 * Size of an entry header (gate, channel, length, crc32).
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

/**
 * Largest valid payload length of one entry (256 MiB, inclusive).
 *
 * @example
 * ```ts
 * if (payload.length > MAX_ENTRY_LENGTH) throw new RangeError('entry too large');
 * ```
 */
export const MAX_ENTRY_LENGTH = 268435456;

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
      throw corrupt(
        0,
        `bad magic 0x${header.subarray(0, n).toString('hex')} (expected 0x${CHECKPOINT_MAGIC.toString('hex')} "SPWC")`,
      );
    }
  }
}
