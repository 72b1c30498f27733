/**
 * The size limits of spilling and draining (docs/formats.md) and their defaults, in one place
 * so the writer, the reader, the drainer and the pool agree on them.
 */
import type { RescaleOption } from '../rescale/rescale-options.ts';

/**
 * Size limits of the spill files (docs/formats.md) and of the I/O around them.
 *
 * @example
 * ```ts
 * recoverChannelState({ checkpoint, channels, limits: { maxSpillFileBytes: 16 * 1024 * 1024 } });
 * ```
 */
export interface SpillLimits {
  /** Rotate spill files at this size; default 64 MiB. */
  maxSpillFileBytes?: number;
  /** Cut segments at this size (header included); default 1 MiB. */
  maxSegmentBytes?: number;
  /** Bytes per buffer delivered to a channel; default 32 KiB. */
  bufferBytes?: number;
  /** Bytes per read of checkpoint and spill files; default 1 MiB (a drain that reuses: 2 MiB). */
  readChunkBytes?: number;
}

/** A segment (header + body) never exceeds this by default. */
export const DEFAULT_MAX_SEGMENT_BYTES = 1024 * 1024;
/** Spill files rotate once they hold this much by default. */
export const DEFAULT_MAX_SPILL_FILE_BYTES = 64 * 1024 * 1024;
/** Bytes per buffer handed to a channel consumer by default. */
export const DEFAULT_BUFFER_BYTES = 32 * 1024;
/**
 * After a task begins to end, how long a consumer call that has not returned is waited for
 * before it is abandoned (G11).
 */
export const DEFAULT_ABANDON_AFTER_MS = 3000;
/** Bytes per read of checkpoint files by default: ~10× faster than 32 KiB here. */
export const DEFAULT_READ_CHUNK_BYTES = 1024 * 1024;
/**
 * Bytes per read of spill files by default. The drain keeps two reads in flight on the thread
 * pool while it checks CRCs on the main thread, and each read costs a hand-off both ways: a
 * drain of 256 MiB ran at 0.83–0.86 of a synchronous read + CRC loop in 1 MiB reads and at
 * 0.98–1.00 in 2 MiB reads (tmpfs and disk; 3 MiB no better, 4 MiB worse). A fetch's reads are
 * not helped by it (1.00 and 1.02 of its floor), so they stay at 1 MiB. Only for a drain that
 * reuses its buffers (its consumers all borrow): a consumer that keeps what it is given keeps
 * the whole read each slice is of, and that stays 1 MiB.
 */
export const DEFAULT_SPILL_READ_CHUNK_BYTES = 2 * 1024 * 1024;

/** Bytes per read of spill files by default: 2 MiB for a reader that reuses its buffers. */
export function spillReadChunkBytes(reuseBuffers: boolean): number {
  return reuseBuffers ? DEFAULT_SPILL_READ_CHUNK_BYTES : DEFAULT_READ_CHUNK_BYTES;
}

/**
 * The limits of a rescaled recovery: unless the caller chose `bufferBytes`, a buffer holds a
 * whole spill segment. The filtering handler keeps records inside segments, so every delivery
 * then ends between records and a checkpoint taken during recovery cuts between records: its
 * remainder is exactly the survivors not yet delivered (G6 in record terms).
 *
 * @example
 * ```ts
 * rescaleLimits({}, { subtask: 0, parallelism: 2 }); // { bufferBytes: 1048576 }
 * ```
 */
export function rescaleLimits(
  limits: SpillLimits,
  rescale: RescaleOption | undefined,
): SpillLimits {
  if (rescale === undefined || limits.bufferBytes !== undefined) return limits;
  return { ...limits, bufferBytes: limits.maxSegmentBytes ?? DEFAULT_MAX_SEGMENT_BYTES };
}
