/**
 * The streaming checkpoint reader: validates every field of an SPWC v1 or v2 file while handing its
 * payload to a visitor, one reused buffer at a time. Every byte goes through `fsSeam`, so
 * fault-injection tests reach all of it.
 */
import { crc32, crc32Combine } from '../crc32.ts';
import { AbortedError, CorruptCheckpointError, addSuppressed } from '../errors.ts';
import { openCheckpointSource, type SourceOptions } from './source.ts';
import { redactLocation } from './redact.ts';
import {
  CHECKPOINT_HEADER_BYTES,
  CHECKPOINT_VERSION,
  CHECKPOINT_VERSION_V2,
  MAX_CHANNEL,
  MAX_ENTRY_LENGTH,
  MAX_GATE,
  MAX_SUBTASK,
  SUBTASK_FIELD_BYTES,
  checkMagic,
  entryHeaderBytes,
  hex32,
  type CheckpointVersion,
} from './format.ts';

const DEFAULT_READ_CHUNK_BYTES = 1024 * 1024;

/**
 * Receives a checkpoint's entries in file order from {@link readCheckpoint}. Both callbacks
 * may be async; the reader awaits each before it reads on, which is what makes it safe to
 * reuse one buffer and gives natural backpressure.
 *
 * @example
 * ```ts
 * const visitor: CheckpointVisitor = {
 *   onEntry(gate, channel) { current = channelKey({ gate, channel }); },
 *   async onPayload(chunk) { await sinks.get(current).write(chunk); },
 * };
 * ```
 */
export interface CheckpointVisitor {
  /**
   * A new entry starts; `offset` = byte offset of its header, `subtask` = the old subtask that
   * wrote it (always 0 in a v1 file, which has no such field).
   */
  onEntry(
    gate: number,
    channel: number,
    length: number,
    offset: number,
    subtask: number,
  ): void | Promise<void>;
  /** The file header was read: the file's version (called once, before the first entry). */
  onVersion?(version: CheckpointVersion): void;
  /**
   * Next piece of the current entry's payload. The buffer is only valid during the call (it is
   * reused). Never called with an empty chunk. `crc` is the CRC-32 of `chunk`: the reader
   * computes it to check the entry anyway, and a spill writer can reuse it instead of hashing
   * the same bytes again.
   */
  onPayload(chunk: Buffer, crc: number): void | Promise<void>;
}

/**
 * What {@link readCheckpoint} read from a valid checkpoint.
 *
 * @example
 * ```ts
 * const { entries, payloadBytes, fileBytes } = await readCheckpoint(path, visitor);
 * ```
 */
export interface CheckpointSummary {
  /** Number of entries, zero-length ones included. */
  entries: number;
  /** Sum of all payload lengths. */
  payloadBytes: number;
  /** Size of the file in bytes. */
  fileBytes: number;
  /** The file's format version. */
  version: CheckpointVersion;
}

/**
 * Options of {@link readCheckpoint}.
 *
 * @example
 * ```ts
 * await readCheckpoint(path, visitor, { readChunkBytes: 64 * 1024, signal: controller.signal });
 * ```
 */
export interface ReadCheckpointOptions {
  /** Size of each read and of the one reused read buffer; default 1 MiB. */
  readChunkBytes?: number;
  /** Called once the file is open, with its size (a progress bar's total). */
  onOpen?: (bytes: number) => void;
  /** Aborting stops the read before the next chunk with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * Called synchronously with the first error, before the file is closed: a caller can report
   * the cause before any cleanup I/O gives a cancel the chance to overtake it (G5).
   */
  onFailure?: (error: unknown) => void;
  /** For an `http(s)://` or `s3://` checkpoint: endpoint, retry policy, retry callback. */
  remote?: SourceOptions;
}

type ReadState = 'fileHeader' | 'entryHeader' | 'payload';

/**
 * Streams a checkpoint file through `visitor`, validating every field. Memory stays at one
 * buffer of `readChunkBytes` whatever the file size. The file is always closed, also on error.
 *
 * Errors: any malformed input is a `CorruptCheckpointError(path, offset, reason)` whose offset
 * is the bad field (or where the data ran out); a CRC mismatch is detected after that entry's
 * payload was delivered. a path that is not a usable file is a `CheckpointPathError`
 * (opening never blocks: a FIFO without a writer fails at once); seam errors (EIO, ...) and
 * visitor errors propagate unchanged; an
 * abort rejects with `signal.reason`.
 *
 * @example
 * ```ts
 * const sizes = new Map<string, number>();
 * let key = '';
 * const summary = await readCheckpoint('job.spwc', {
 *   onEntry: (gate, channel) => void (key = channelKey({ gate, channel })),
 *   onPayload: (chunk) => void sizes.set(key, (sizes.get(key) ?? 0) + chunk.length),
 * });
 * ```
 */
export async function readCheckpoint(
  path: string,
  visitor: CheckpointVisitor,
  options: ReadCheckpointOptions = {},
): Promise<CheckpointSummary> {
  const chunkBytes = options.readChunkBytes ?? DEFAULT_READ_CHUNK_BYTES;
  if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1) {
    throw new RangeError(`readChunkBytes must be a positive integer, got ${chunkBytes}`);
  }
  const signal = options.signal;
  const throwIfAborted = (): void => {
    if (signal?.aborted === true) {
      throw signal.reason ?? new AbortedError(`${path}: checkpoint read aborted`);
    }
  };
  throwIfAborted();

  // A presigned URL's query string is a credential: errors name the location redacted.
  const corrupt = (offset: number, reason: string): CorruptCheckpointError =>
    new CorruptCheckpointError(redactLocation(path), offset, reason);

  const { file, bytes } = await openCheckpointSource(path, { ...options.remote, signal });
  options.onOpen?.(bytes);
  let primary: unknown;
  try {
    // One buffer for the whole file: the visitor only borrows slices of it.
    const buf = Buffer.allocUnsafe(chunkBytes);
    // Headers may straddle reads (any chunk size is allowed), so they are assembled here.
    const header = Buffer.alloc(entryHeaderBytes(CHECKPOINT_VERSION_V2));
    let version: CheckpointVersion = CHECKPOINT_VERSION;
    let entryHeaderSize = entryHeaderBytes(version);
    // Where gate, channel, length and crc start in the header: after the subtask in v2.
    let fields = 0;
    let headerFill = 0;
    let state: ReadState = 'fileHeader';
    let filePos = 0;
    let entryOffset = 0;
    let entryLength = 0;
    let remaining = 0;
    let expectedCrc = 0;
    let crc = 0;
    let entries = 0;
    let payloadBytes = 0;

    const checkCrc = (): void => {
      if (crc !== expectedCrc) {
        throw corrupt(
          entryOffset + fields + 12,
          `crc32 mismatch: header says ${hex32(expectedCrc)}, payload has ${hex32(crc)}`,
        );
      }
    };

    for (;;) {
      throwIfAborted();
      const n = await file.read(buf, 0, chunkBytes, filePos);
      if (n === 0) break;
      const base = filePos;
      filePos += n;
      let i = 0;
      while (i < n) {
        if (state === 'payload') {
          const take = Math.min(remaining, n - i);
          const chunk = buf.subarray(i, i + take);
          // The piece's own CRC, combined into the entry's: the same value as a running
          // crc32(chunk, crc), and the visitor gets the piece's CRC for free.
          const chunkCrc = crc32(chunk);
          crc = remaining === entryLength ? chunkCrc : crc32Combine(crc, chunkCrc, take);
          i += take;
          remaining -= take;
          payloadBytes += take;
          throwIfAborted();
          // Awaited only when the visitor returned a promise: a synchronous visitor (a spill
          // write that only copied) costs no microtask and no promise per entry, which at
          // hundreds of thousands of small entries is most of the garbage (G8).
          const written = visitor.onPayload(chunk, chunkCrc);
          if (written !== undefined) await written;
          if (remaining === 0) {
            checkCrc();
            state = 'entryHeader';
          }
          continue;
        }

        const need = state === 'fileHeader' ? CHECKPOINT_HEADER_BYTES : entryHeaderSize;
        if (headerFill === 0 && state === 'entryHeader') entryOffset = base + i;
        const take = Math.min(need - headerFill, n - i);
        buf.copy(header, headerFill, i, i + take);
        headerFill += take;
        i += take;
        if (state === 'fileHeader') {
          // Checked as soon as bytes arrive so that a short non-checkpoint reads as "bad magic".
          checkMagic(header, headerFill, corrupt);
          if (headerFill < need) continue;
          const found = header.readUInt32BE(4);
          if (found !== CHECKPOINT_VERSION && found !== CHECKPOINT_VERSION_V2) {
            throw corrupt(
              4,
              `unsupported version ${found} (expected ${CHECKPOINT_VERSION} or ${CHECKPOINT_VERSION_V2})`,
            );
          }
          version = found;
          entryHeaderSize = entryHeaderBytes(version);
          fields = version === CHECKPOINT_VERSION_V2 ? SUBTASK_FIELD_BYTES : 0;
          visitor.onVersion?.(version);
          headerFill = 0;
          state = 'entryHeader';
          continue;
        }
        if (headerFill < need) continue;
        headerFill = 0;

        // A v1 entry counts as written by subtask 0 (DESIGN.md §3).
        const subtask = fields === 0 ? 0 : header.readInt32BE(0);
        const gate = header.readInt32BE(fields);
        const channel = header.readInt32BE(fields + 4);
        entryLength = header.readInt32BE(fields + 8);
        expectedCrc = header.readUInt32BE(fields + 12);
        if (subtask < 0 || subtask > MAX_SUBTASK) {
          throw corrupt(entryOffset, `subtask ${subtask} out of range 0..${MAX_SUBTASK}`);
        }
        if (gate < 0 || gate > MAX_GATE) {
          throw corrupt(entryOffset + fields, `gate ${gate} out of range 0..${MAX_GATE}`);
        }
        if (channel < 0 || channel > MAX_CHANNEL) {
          throw corrupt(
            entryOffset + fields + 4,
            `channel ${channel} out of range 0..${MAX_CHANNEL}`,
          );
        }
        if (entryLength < 0 || entryLength > MAX_ENTRY_LENGTH) {
          throw corrupt(
            entryOffset + fields + 8,
            `entry length ${entryLength} out of range 0..${MAX_ENTRY_LENGTH}`,
          );
        }
        entries++;
        const entered = visitor.onEntry(gate, channel, entryLength, entryOffset, subtask);
        if (entered !== undefined) await entered;
        remaining = entryLength;
        crc = 0;
        if (entryLength === 0) {
          // An empty payload has CRC 0; anything else is a corrupt header.
          checkCrc();
        } else {
          state = 'payload';
        }
      }
    }

    if (filePos === 0) throw corrupt(0, 'empty file');
    if (state === 'fileHeader') {
      throw corrupt(
        filePos,
        `truncated file header: ${filePos} of ${CHECKPOINT_HEADER_BYTES} bytes present`,
      );
    }
    if (state === 'payload') {
      throw corrupt(
        filePos,
        `truncated payload of entry at byte ${entryOffset}: expected ${entryLength} bytes, ` +
          `${entryLength - remaining} present`,
      );
    }
    if (headerFill > 0) {
      throw corrupt(
        entryOffset,
        `truncated entry header: ${headerFill} of ${entryHeaderSize} bytes present`,
      );
    }
    return { entries, payloadBytes, fileBytes: filePos, version };
  } catch (e) {
    primary = e;
    options.onFailure?.(e);
    throw e;
  } finally {
    try {
      await file.close();
    } catch (closeError) {
      // The first cause wins (G5): a close failure only replaces a success.
      if (primary === undefined) throw closeError;
      if (primary instanceof Error) addSuppressed(primary, closeError);
    }
  }
}
