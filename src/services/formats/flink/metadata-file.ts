/**
 * What identifies a Flink checkpoint's metadata file, and nothing else: its name and its magic
 * number. Kept apart from the reader so that format detection (formats/entries.ts) and the CLI
 * can know them without loading the Flink reader.
 */

/** The file name Flink gives a checkpoint's metadata (`chk-N/_metadata`). */
export const METADATA_FILE_NAME = '_metadata';

/** Flink's `_metadata` magic number (`Checkpoints.HEADER_MAGIC_NUMBER`). */
export const FLINK_METADATA_MAGIC = 0x4960672d;
