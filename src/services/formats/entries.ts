/**
 * The checkpoint-source seam: one call that turns any supported checkpoint into the same stream
 * of entries for a {@link CheckpointVisitor}. SPWC v1/v2 files go to {@link readCheckpoint}
 * unchanged; a Flink checkpoint (a `_metadata` file, magic `0x4960672d`, or a directory holding
 * one) goes to the Flink entry source with the caller's selection (operator, subtask, side).
 */
import { join } from 'node:path';
import { fsSeam } from '../fs.ts';
import {
  readCheckpoint,
  type CheckpointVisitor,
  type ReadCheckpointOptions,
} from './spwc/reader.ts';
import { isRemoteLocation } from '../locations/schemes.ts';
import { openCheckpointSource, type SourceOptions } from '../locations/source.ts';
import type { FlinkSelection, FlinkSourceInfo } from './flink/entry-source.ts';
import { FLINK_METADATA_MAGIC, METADATA_FILE_NAME } from './flink/metadata-file.ts';

/** The formats the seam reads. */
export type CheckpointFormat = 'spwc-v1' | 'spwc-v2' | 'flink';

export { FLINK_METADATA_MAGIC } from './flink/metadata-file.ts';

/**
 * A visitor that may also hear which file the next entries come from and how long an entry's
 * header is there (an SPWC reader never calls it: one file, 16- or 20-byte headers).
 */
export interface EntryVisitor extends CheckpointVisitor {
  onFile?(file: string, entryHeaderBytes: number): void;
}

/**
 * What {@link readCheckpointEntries} read: entry and byte counts, the file's version (SPWC
 * 1 or 2, or the `_metadata` version 3–6) and the format.
 */
export interface EntriesSummary {
  entries: number;
  payloadBytes: number;
  fileBytes: number;
  version: number;
  format: CheckpointFormat;
}

/**
 * Options of {@link readCheckpointEntries}: the reader's, plus a Flink selection.
 *
 * @example
 * ```ts
 * const options: ReadEntriesOptions = { flink: { operator: 'map', subtask: 0 } };
 * ```
 */
export interface ReadEntriesOptions extends ReadCheckpointOptions {
  /** Required for a Flink checkpoint: which operator, subtask and side to read. */
  flink?: FlinkSelection | undefined;
  /** Flink: read every old subtask (rescaling). */
  allSubtasks?: boolean | undefined;
  /** Flink: called with the operator before the first entry. */
  onFlinkOperator?: ((info: FlinkSourceInfo) => void) | undefined;
}

/**
 * Streams the entries of the checkpoint at `location` into `visitor`. Without `options.flink`
 * the location is an SPWC file and this is exactly {@link readCheckpoint} (the same reads, the
 * same errors: its bad-magic error is what a Flink `_metadata` without a selection gives);
 * with it, the location is a Flink checkpoint whose magic the metadata reader checks.
 *
 * @example
 * ```ts
 * const summary = await readCheckpointEntries('ckpt/job/chk-7', visitor, {
 *   flink: { operator: 'map', subtask: 1 },
 * });
 * summary.format; // 'flink'
 * ```
 */
export async function readCheckpointEntries(
  location: string,
  visitor: EntryVisitor,
  options: ReadEntriesOptions = {},
): Promise<EntriesSummary> {
  const { flink, allSubtasks, onFlinkOperator, ...spwc } = options;
  if (flink === undefined) {
    const summary = await readCheckpoint(location, visitor, spwc);
    return { ...summary, format: summary.version === 1 ? 'spwc-v1' : 'spwc-v2' };
  }
  try {
    // Flink's reader is loaded when a Flink checkpoint is read, not when the package is imported.
    const { readFlinkEntries } = await import('./flink/entry-source.ts');
    const summary = await readFlinkEntries(location, flink, visitor, {
      readChunkBytes: spwc.readChunkBytes,
      signal: spwc.signal,
      remote: spwc.remote,
      allSubtasks,
      onOpen: spwc.onOpen,
      onOperator: onFlinkOperator,
      onFile: visitor.onFile?.bind(visitor),
    });
    return {
      entries: summary.entries,
      payloadBytes: summary.payloadBytes,
      fileBytes: summary.fileBytes,
      version: summary.version,
      format: 'flink',
    };
  } catch (error) {
    spwc.onFailure?.(error);
    throw error;
  }
}

/**
 * Tells a checkpoint's format by its magic number (never by its name): `SPWC` and its version,
 * or Flink's `_metadata` magic; a local directory holding `_metadata` is Flink. Undefined for
 * anything else (the readers then say what is wrong, with the offset). Opening errors
 * (missing, not a file, remote not found) propagate as the readers would raise them.
 *
 * @example
 * ```ts
 * await detectCheckpointFormat('ckpt/job/chk-7'); // 'flink'
 * ```
 */
export async function detectCheckpointFormat(
  location: string,
  remote: SourceOptions = {},
): Promise<CheckpointFormat | undefined> {
  if (!isRemoteLocation(location)) {
    const st = await fsSeam.stat(location).catch(() => undefined);
    if (st?.isDirectory() === true) {
      const inner = await fsSeam.stat(join(location, METADATA_FILE_NAME)).catch(() => undefined);
      return inner?.isFile() === true ? 'flink' : undefined;
    }
  }
  const { file, bytes } = await openCheckpointSource(location, { ...remote, probeEnd: 7 });
  try {
    const head = Buffer.alloc(8);
    let got = 0;
    while (got < Math.min(8, bytes)) {
      const n = await file.read(head, got, Math.min(8, bytes) - got, got);
      if (n === 0) break;
      got += n;
    }
    if (got >= 4 && head.readUInt32BE(0) === FLINK_METADATA_MAGIC) return 'flink';
    if (got >= 8 && head.toString('latin1', 0, 4) === 'SPWC') {
      const version = head.readUInt32BE(4);
      return version === 1 ? 'spwc-v1' : version === 2 ? 'spwc-v2' : undefined;
    }
    return undefined;
  } finally {
    await file.close();
  }
}
