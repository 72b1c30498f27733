/**
 * The streaming checkpoint reader: validates every field of an SPWC v1 or v2 file while handing its
 * payload to a visitor, one reused buffer at a time. Every byte goes through `fsSeam`, so
 * fault-injection tests reach all of it.
 */
import { crc32, crc32Combine } from '../../crc32.ts';
import { AbortedError, CorruptCheckpointError } from '../../errors.ts';
import { closeAfter, openCheckpointSource, type SourceOptions } from '../../locations/source.ts';
import { ioBuffers } from '../../buffer-pool.ts';
import { redactLocation } from '../../locations/redact.ts';
import { isRemoteLocation } from '../../locations/schemes.ts';
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
 * Streams a checkpoint file through `visitor`, validating every field. Memory stays at two
 * buffers of `readChunkBytes` (one for a remote source) whatever the file size. The file is
 * always closed, also on error.
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
  // Two buffers for the whole file, alternating: the visitor only borrows slices of the one
  // being parsed while the next chunk of a local file is read into the other, so the read on
  // the thread pool overlaps the CRC and the spill copy on the main thread. A remote source
  // reads one range at a time (its reads are resumable streams), so one buffer. They come from
  // the process's pool (buffer-pool.ts), and a local file's go back to it at the end: a
  // visitor's slices are valid only during its call, and the read ahead has settled by then.
  // A remote read's buffer is not given back: a stream cut short need not have stopped writing.
  const readAhead = !isRemoteLocation(path);
  let buf = ioBuffers.take(chunkBytes);
  let other = readAhead ? ioBuffers.take(chunkBytes) : buf;
  let next: Promise<number> | undefined;
  try {
    return await closeAfter(file, async () => {
      try {
        const parser = new CheckpointParser(visitor, corrupt, throwIfAborted);
        for (;;) {
          throwIfAborted();
          const n = await (next ?? file.read(buf, 0, chunkBytes, parser.filePos));
          next = undefined;
          if (n === 0) break;
          if (readAhead && parser.filePos + n < bytes) {
            next = file.read(other, 0, chunkBytes, parser.filePos + n);
            // Handled here so a failure while this chunk is parsed is no unhandled rejection;
            // it is still thrown by the await above. closeAfter's close waits for the read.
            next.catch(() => undefined);
          }
          parser.startChunk(n);
          while (parser.at < n) {
            // Awaited only when the visitor returned a promise: a synchronous visitor (a spill
            // write that only copied) costs no microtask and no promise per entry, which at
            // hundreds of thousands of small entries is most of the garbage (G8).
            const waiting = parser.step(buf, n);
            if (waiting !== undefined) await waiting;
          }
          [buf, other] = [other, buf];
        }
        return parser.end();
      } catch (e) {
        options.onFailure?.(e);
        throw e;
      }
    });
  } finally {
    if (readAhead) {
      await next?.catch(() => undefined);
      ioBuffers.give(buf);
      ioBuffers.give(other);
    }
  }
}

/**
 * The reader's state machine over the bytes of one file, one method per state (ws's Receiver
 * does the same): the file header, an entry header, an entry's payload. Headers may straddle
 * reads (any chunk size is allowed), so they are assembled in `header`. A step returns the
 * visitor's promise when the visitor returned one, and the state moves on once it settled.
 */
class CheckpointParser {
  /** File offset of the next read. */
  filePos = 0;
  /** Where the chunk being parsed starts in the file, and how far into it the parser is. */
  private base = 0;
  at = 0;
  private state: ReadState = 'fileHeader';
  private readonly header = Buffer.alloc(entryHeaderBytes(CHECKPOINT_VERSION_V2));
  private headerFill = 0;
  private version: CheckpointVersion = CHECKPOINT_VERSION;
  private entryHeaderSize = entryHeaderBytes(CHECKPOINT_VERSION);
  /** Where gate, channel, length and crc start in an entry header: after the subtask in v2. */
  private fields = 0;
  private entryOffset = 0;
  private entryLength = 0;
  private remaining = 0;
  private expectedCrc = 0;
  private crc = 0;
  private entries = 0;
  private payloadBytes = 0;

  constructor(
    private readonly visitor: CheckpointVisitor,
    private readonly corrupt: (offset: number, reason: string) => CorruptCheckpointError,
    private readonly throwIfAborted: () => void,
  ) {}

  /** A read of `n` bytes landed at `filePos`. */
  startChunk(n: number): void {
    this.base = this.filePos;
    this.filePos += n;
    this.at = 0;
  }

  /** Parses from `at` on, as far as the current state goes. */
  step(buf: Buffer, n: number): Promise<void> | void {
    if (this.state === 'payload') return this.payload(buf, n);
    if (this.state === 'fileHeader') return this.fileHeader(buf, n);
    return this.entryHeader(buf, n);
  }

  /** The summary once the file ended, or the truncation it ended in. */
  end(): CheckpointSummary {
    const { filePos, corrupt } = this;
    if (filePos === 0) throw corrupt(0, 'empty file');
    if (this.state === 'fileHeader') {
      throw corrupt(
        filePos,
        `truncated file header: ${filePos} of ${CHECKPOINT_HEADER_BYTES} bytes present`,
      );
    }
    if (this.state === 'payload') {
      throw corrupt(
        filePos,
        `truncated payload of entry at byte ${this.entryOffset}: expected ${this.entryLength} bytes, ` +
          `${this.entryLength - this.remaining} present`,
      );
    }
    if (this.headerFill > 0) {
      throw corrupt(
        this.entryOffset,
        `truncated entry header: ${this.headerFill} of ${this.entryHeaderSize} bytes present`,
      );
    }
    const { entries, payloadBytes, version } = this;
    return { entries, payloadBytes, fileBytes: filePos, version };
  }

  private payload(buf: Buffer, n: number): Promise<void> | void {
    const take = Math.min(this.remaining, n - this.at);
    const chunk = buf.subarray(this.at, this.at + take);
    // The piece's own CRC, combined into the entry's: the same value as a running
    // crc32(chunk, crc), and the visitor gets the piece's CRC for free.
    const chunkCrc = crc32(chunk);
    this.crc =
      this.remaining === this.entryLength ? chunkCrc : crc32Combine(this.crc, chunkCrc, take);
    this.at += take;
    this.remaining -= take;
    this.payloadBytes += take;
    this.throwIfAborted();
    const written = this.visitor.onPayload(chunk, chunkCrc);
    if (written !== undefined) return written.then(() => this.payloadDelivered());
    this.payloadDelivered();
  }

  private payloadDelivered(): void {
    if (this.remaining > 0) return;
    this.checkCrc();
    this.state = 'entryHeader';
  }

  /** Copies header bytes from the chunk; true once the header of `need` bytes is whole. */
  private fillHeader(buf: Buffer, n: number, need: number): boolean {
    const take = Math.min(need - this.headerFill, n - this.at);
    buf.copy(this.header, this.headerFill, this.at, this.at + take);
    this.headerFill += take;
    this.at += take;
    return this.headerFill >= need;
  }

  private fileHeader(buf: Buffer, n: number): void {
    const whole = this.fillHeader(buf, n, CHECKPOINT_HEADER_BYTES);
    // Checked as soon as bytes arrive so that a short non-checkpoint reads as "bad magic".
    checkMagic(this.header, this.headerFill, this.corrupt);
    if (!whole) return;
    const found = this.header.readUInt32BE(4);
    if (found !== CHECKPOINT_VERSION && found !== CHECKPOINT_VERSION_V2) {
      throw this.corrupt(
        4,
        `unsupported version ${found} (expected ${CHECKPOINT_VERSION} or ${CHECKPOINT_VERSION_V2})`,
      );
    }
    this.version = found;
    this.entryHeaderSize = entryHeaderBytes(found);
    this.fields = found === CHECKPOINT_VERSION_V2 ? SUBTASK_FIELD_BYTES : 0;
    this.visitor.onVersion?.(found);
    this.headerFill = 0;
    this.state = 'entryHeader';
  }

  private entryHeader(buf: Buffer, n: number): Promise<void> | void {
    if (this.headerFill === 0) this.entryOffset = this.base + this.at;
    if (!this.fillHeader(buf, n, this.entryHeaderSize)) return;
    this.headerFill = 0;
    const { header, fields, entryOffset, corrupt } = this;
    // A v1 entry counts as written by subtask 0 (DESIGN.md §3).
    const subtask = fields === 0 ? 0 : header.readInt32BE(0);
    const gate = header.readInt32BE(fields);
    const channel = header.readInt32BE(fields + 4);
    const entryLength = header.readInt32BE(fields + 8);
    this.entryLength = entryLength;
    this.expectedCrc = header.readUInt32BE(fields + 12);
    if (subtask < 0 || subtask > MAX_SUBTASK) {
      throw corrupt(entryOffset, `subtask ${subtask} out of range 0..${MAX_SUBTASK}`);
    }
    if (gate < 0 || gate > MAX_GATE) {
      throw corrupt(entryOffset + fields, `gate ${gate} out of range 0..${MAX_GATE}`);
    }
    if (channel < 0 || channel > MAX_CHANNEL) {
      throw corrupt(entryOffset + fields + 4, `channel ${channel} out of range 0..${MAX_CHANNEL}`);
    }
    if (entryLength < 0 || entryLength > MAX_ENTRY_LENGTH) {
      throw corrupt(
        entryOffset + fields + 8,
        `entry length ${entryLength} out of range 0..${MAX_ENTRY_LENGTH}`,
      );
    }
    this.entries++;
    const entered = this.visitor.onEntry(gate, channel, entryLength, entryOffset, subtask);
    if (entered !== undefined) return entered.then(() => this.entryEntered());
    this.entryEntered();
  }

  private entryEntered(): void {
    this.remaining = this.entryLength;
    this.crc = 0;
    // An empty payload has CRC 0; anything else is a corrupt header.
    if (this.entryLength === 0) this.checkCrc();
    else this.state = 'payload';
  }

  private checkCrc(): void {
    if (this.crc !== this.expectedCrc) {
      throw this.corrupt(
        this.entryOffset + this.fields + 12,
        `crc32 mismatch: header says ${hex32(this.expectedCrc)}, payload has ${hex32(this.crc)}`,
      );
    }
  }
}
