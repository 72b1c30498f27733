/**
 * Checkpoint file v1 (`SPWC`, DESIGN.md §3): a streaming reader that validates every field, a
 * streaming writer with coalesced writes, and a deterministic generator for tests, demo and
 * bench. Every byte goes through `fsSeam`, so fault-injection tests reach all of it.
 *
 * Layout (big-endian): `"SPWC"`, `uint32 version = 1`, then entries until EOF, each
 * `int32 gate, int32 channel, int32 length, uint32 crc32(payload), payload`.
 */
import { crc32 } from './crc32.ts';
import { AbortedError, CorruptCheckpointError, MisuseError, addSuppressed } from './errors.ts';
import { fsSeam, type SeamFile } from './fs.ts';

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

const MIB = 1024 * 1024;
const DEFAULT_READ_CHUNK_BYTES = MIB;
const WRITE_BUFFER_BYTES = MIB;

/**
 * The output name of one channel: `gate-<g>-channel-<c>` (recovered data goes to
 * `gate-<g>-channel-<c>.bin`).
 *
 * @example
 * ```ts
 * channelKey(0, 3); // 'gate-0-channel-3'
 * ```
 */
export function channelKey(gate: number, channel: number): string {
  return `gate-${gate}-channel-${channel}`;
}

function hex32(value: number): string {
  return `0x${(value >>> 0).toString(16).padStart(8, '0')}`;
}

// ---------------------------------------------------------------------------------------------
// CRC-32 arithmetic
// ---------------------------------------------------------------------------------------------

// zlib's crc32_combine (1.2.12+), in 32-bit JS integers: CRCs are polynomials mod P, so the CRC
// of A‖B follows from crc(A), crc(B) and |B| without touching a byte. That lets one checksum
// pass serve both the checkpoint's entry check and the spill segments' CRCs.
const CRC_POLY = 0xedb88320;

/** a·b mod P, both in zlib's reflected representation. */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = (b & 1) !== 0 ? (b >>> 1) ^ CRC_POLY : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) mod P for k = 0..31. */
const X2N_TABLE: Uint32Array = (() => {
  const table = new Uint32Array(32);
  let p = 0x40000000; // x^1
  table[0] = p;
  for (let k = 1; k < 32; k++) table[k] = p = multModP(p, p);
  return table;
})();

/** x^(8·bytes) mod P: the operator that shifts a CRC past `bytes` zero bytes. */
function shiftOperator(bytes: number): number {
  let p = 0x80000000; // x^0
  let k = 3; // 8 bits per byte
  for (let n = bytes; n > 0; n = Math.floor(n / 2), k++) {
    if (n % 2 === 1) p = multModP(X2N_TABLE[k & 31]!, p);
  }
  return p;
}

/**
 * The CRC-32 of A‖B from `crcA = crc32(A)`, `crcB = crc32(B)` and `lengthB = |B|`, exactly as
 * zlib's `crc32_combine` computes it: `crc32Combine(crc32(a), crc32(b), b.length) ===
 * crc32(Buffer.concat([a, b]))`. Costs a few hundred integer operations, whatever the lengths.
 *
 * @example
 * ```ts
 * const whole = crc32Combine(crc32(head), crc32(tail), tail.length);
 * ```
 */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  if (lengthB === 0) return crcA >>> 0;
  return (multModP(shiftOperator(lengthB), crcA >>> 0) ^ crcB) >>> 0;
}

/**
 * The CRC-32 of B from `crcAB = crc32(A‖B)`, `crcA = crc32(A)` and `|B|`: the inverse of
 * {@link crc32Combine} in its second argument, for splitting a checksummed run in two.
 *
 * @example
 * ```ts
 * const tailCrc = crc32Suffix(crc32(whole), crc32(head), whole.length - head.length);
 * ```
 */
export function crc32Suffix(crcAB: number, crcA: number, lengthB: number): number {
  if (lengthB === 0) return 0;
  return (multModP(shiftOperator(lengthB), crcA >>> 0) ^ crcAB) >>> 0;
}

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

/**
 * Receives a checkpoint's entries in file order from {@link readCheckpoint}. Both callbacks
 * may be async; the reader awaits each before it reads on, which is what makes it safe to
 * reuse one buffer and gives natural backpressure.
 *
 * @example
 * ```ts
 * const visitor: CheckpointVisitor = {
 *   onEntry(gate, channel) { current = channelKey(gate, channel); },
 *   async onPayload(chunk) { await sinks.get(current).write(chunk); },
 * };
 * ```
 */
export interface CheckpointVisitor {
  /** A new entry starts; `offset` = byte offset of its header. */
  onEntry(gate: number, channel: number, length: number, offset: number): void | Promise<void>;
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
  /** Aborting stops the read before the next chunk with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * Called synchronously with the first error, before the file is closed: a caller can report
   * the cause before any cleanup I/O gives a cancel the chance to overtake it (G5).
   */
  onFailure?: (error: unknown) => void;
}

type ReadState = 'fileHeader' | 'entryHeader' | 'payload';

/**
 * Streams a checkpoint file through `visitor`, validating every field. Memory stays at one
 * buffer of `readChunkBytes` whatever the file size. The file is always closed, also on error.
 *
 * Errors: any malformed input is a `CorruptCheckpointError(path, offset, reason)` whose offset
 * is the bad field (or where the data ran out); a CRC mismatch is detected after that entry's
 * payload was delivered. Seam errors (EIO, ...) and visitor errors propagate unchanged; an
 * abort rejects with `signal.reason`.
 *
 * @example
 * ```ts
 * const sizes = new Map<string, number>();
 * let key = '';
 * const summary = await readCheckpoint('job.spwc', {
 *   onEntry: (gate, channel) => void (key = channelKey(gate, channel)),
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

  const corrupt = (offset: number, reason: string): CorruptCheckpointError =>
    new CorruptCheckpointError(path, offset, reason);

  const file = await fsSeam.open(path, 'r');
  let primary: unknown;
  try {
    // One buffer for the whole file: the visitor only borrows slices of it.
    const buf = Buffer.allocUnsafe(chunkBytes);
    // Headers may straddle reads (any chunk size is allowed), so they are assembled here.
    const header = Buffer.alloc(ENTRY_HEADER_BYTES);
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
          entryOffset + 12,
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
          await visitor.onPayload(chunk, chunkCrc);
          if (remaining === 0) {
            checkCrc();
            state = 'entryHeader';
          }
          continue;
        }

        const need = state === 'fileHeader' ? CHECKPOINT_HEADER_BYTES : ENTRY_HEADER_BYTES;
        if (headerFill === 0 && state === 'entryHeader') entryOffset = base + i;
        const take = Math.min(need - headerFill, n - i);
        buf.copy(header, headerFill, i, i + take);
        headerFill += take;
        i += take;
        if (state === 'fileHeader') {
          // Checked as soon as bytes arrive so that a short non-checkpoint reads as "bad magic".
          checkMagic(header, headerFill, corrupt);
          if (headerFill < need) continue;
          const version = header.readUInt32BE(4);
          if (version !== CHECKPOINT_VERSION) {
            throw corrupt(4, `unsupported version ${version} (expected ${CHECKPOINT_VERSION})`);
          }
          headerFill = 0;
          state = 'entryHeader';
          continue;
        }
        if (headerFill < need) continue;
        headerFill = 0;

        const gate = header.readInt32BE(0);
        const channel = header.readInt32BE(4);
        entryLength = header.readInt32BE(8);
        expectedCrc = header.readUInt32BE(12);
        if (gate < 0 || gate > MAX_GATE) {
          throw corrupt(entryOffset, `gate ${gate} out of range 0..${MAX_GATE}`);
        }
        if (channel < 0 || channel > MAX_CHANNEL) {
          throw corrupt(entryOffset + 4, `channel ${channel} out of range 0..${MAX_CHANNEL}`);
        }
        if (entryLength < 0 || entryLength > MAX_ENTRY_LENGTH) {
          throw corrupt(
            entryOffset + 8,
            `entry length ${entryLength} out of range 0..${MAX_ENTRY_LENGTH}`,
          );
        }
        entries++;
        await visitor.onEntry(gate, channel, entryLength, entryOffset);
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
        `truncated entry header: ${headerFill} of ${ENTRY_HEADER_BYTES} bytes present`,
      );
    }
    return { entries, payloadBytes, fileBytes: filePos };
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

function checkMagic(
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

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

/**
 * Writes a checkpoint file entry by entry. Small entries are coalesced into 1 MiB buffers so a
 * file of many small entries costs few write calls; large payloads go out directly without an
 * extra copy. Two buffers alternate so the next megabyte is filled while the previous one is
 * being written (at most one write in flight, so file order is kept). A failed background write
 * surfaces at the next `append` or at `close`, and every later call repeats it.
 *
 * Calls must not overlap (await each one); overlapping use is a `MisuseError` because the
 * buffers are shared.
 *
 * @example
 * ```ts
 * const writer = await CheckpointWriter.create('job.spwc');
 * try {
 *   await writer.append(0, 1, Buffer.from('AB'));
 *   await writer.close();
 * } catch (e) {
 *   await writer.discard();
 *   throw e;
 * }
 * ```
 */
export class CheckpointWriter {
  private buffer = Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
  private spare = Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
  private fill = 0;
  private written = 0;
  private inFlight: Promise<unknown> | undefined;
  private failure: { error: unknown } | undefined;
  private busy = false;
  private closed = false;
  private closing: Promise<void> | undefined;

  private constructor(
    /** The path the checkpoint is written to. */
    readonly path: string,
    private readonly file: SeamFile,
  ) {
    // The header is buffered, not written: a writer that fails before its first flush makes
    // no write call at all.
    CHECKPOINT_MAGIC.copy(this.buffer, 0);
    this.buffer.writeUInt32BE(CHECKPOINT_VERSION, 4);
    this.fill = CHECKPOINT_HEADER_BYTES;
    this.written = CHECKPOINT_HEADER_BYTES;
  }

  /**
   * Creates `path` exclusively (`'wx'`: an existing file is an `EEXIST` error, never
   * overwritten) and returns a writer for it.
   *
   * @example
   * ```ts
   * const writer = await CheckpointWriter.create(join(dir, 'job.spwc'));
   * ```
   */
  static async create(path: string): Promise<CheckpointWriter> {
    return new CheckpointWriter(path, await fsSeam.open(path, 'wx'));
  }

  /**
   * Logical size of the file so far: header plus every appended entry, buffered bytes
   * included. After a successful `close()` it is the file's size.
   *
   * @example
   * ```ts
   * await writer.append(0, 0, Buffer.from('xyz'));
   * writer.bytesWritten; // 8 + 16 + 3
   * ```
   */
  get bytesWritten(): number {
    return this.written;
  }

  /**
   * Appends one entry. Throws `RangeError` for a gate or channel outside `0..65535` or a
   * payload over `MAX_ENTRY_LENGTH`, `MisuseError` after close or on overlapping calls. The
   * payload is copied or written before this resolves, so the caller may reuse it.
   *
   * @example
   * ```ts
   * await writer.append(7, 3, Buffer.alloc(0)); // zero-length entries are valid
   * ```
   */
  async append(gate: number, channel: number, payload: Buffer): Promise<void> {
    if (!Number.isInteger(gate) || gate < 0 || gate > MAX_GATE) {
      throw new RangeError(`gate must be an integer in 0..${MAX_GATE}, got ${gate}`);
    }
    if (!Number.isInteger(channel) || channel < 0 || channel > MAX_CHANNEL) {
      throw new RangeError(`channel must be an integer in 0..${MAX_CHANNEL}, got ${channel}`);
    }
    if (payload.length > MAX_ENTRY_LENGTH) {
      throw new RangeError(
        `payload of ${payload.length} bytes exceeds MAX_ENTRY_LENGTH ${MAX_ENTRY_LENGTH}`,
      );
    }
    this.enter('append');
    try {
      if (this.failure !== undefined) throw this.failure.error;
      if (this.fill + ENTRY_HEADER_BYTES > this.buffer.length) await this.flush();
      const h = this.fill;
      this.buffer.writeInt32BE(gate, h);
      this.buffer.writeInt32BE(channel, h + 4);
      this.buffer.writeInt32BE(payload.length, h + 8);
      this.buffer.writeUInt32BE(crc32(payload), h + 12);
      this.fill += ENTRY_HEADER_BYTES;
      if (payload.length <= this.buffer.length - this.fill) {
        payload.copy(this.buffer, this.fill);
        this.fill += payload.length;
      } else if (payload.length >= this.buffer.length / 2) {
        // Big payload: one vectored write of what is buffered plus the payload, no copy. It is
        // awaited because the payload is the caller's.
        await this.settle();
        await this.track(this.file.write(this.buffer.subarray(0, this.fill), payload));
        this.fill = 0;
      } else {
        await this.flush();
        payload.copy(this.buffer, 0);
        this.fill = payload.length;
      }
      this.written += ENTRY_HEADER_BYTES + payload.length;
    } finally {
      this.busy = false;
    }
  }

  /**
   * Flushes buffered bytes and closes the file. Idempotent: later calls return the first
   * call's outcome. The file is closed even if a write fails (the write error wins).
   *
   * @example
   * ```ts
   * await writer.close();
   * await writer.close(); // no-op
   * ```
   */
  close(): Promise<void> {
    if (this.closing === undefined) {
      try {
        this.enter('close');
      } catch (e) {
        // A promise-returning API never throws synchronously.
        return Promise.reject(e);
      }
      this.closed = true;
      this.closing = this.finish(true).finally(() => {
        this.busy = false;
      });
    }
    return this.closing;
  }

  /**
   * Closes without flushing and deletes the file: the cleanup path after any failure. Safe
   * after `close()` or a failed `append`; the first error wins, later ones are suppressed.
   *
   * @example
   * ```ts
   * await writer.discard(); // the file no longer exists
   * ```
   */
  async discard(): Promise<void> {
    let first: unknown;
    if (this.closing === undefined) {
      this.closed = true;
      this.fill = 0;
      this.closing = this.finish(false);
    }
    try {
      await this.closing;
    } catch (e) {
      // A failed close still released the descriptor; the file must go regardless.
      first = e;
    }
    try {
      await fsSeam.rm(this.path);
    } catch (e) {
      if (first === undefined) first = e;
      else if (first instanceof Error) addSuppressed(first, e);
    }
    if (first !== undefined) throw first;
  }

  private enter(what: string): void {
    if (this.closed) throw new MisuseError(`${this.path}: ${what} after the writer was closed`);
    if (this.busy) {
      throw new MisuseError(`${this.path}: ${what} while another call is still running`);
    }
    this.busy = true;
  }

  /** Records a write's failure so every later call sees it (bytes after a gap are useless). */
  private track(write: Promise<unknown>): Promise<unknown> {
    return write.catch((error: unknown) => {
      this.failure ??= { error };
      throw error;
    });
  }

  /** Waits for the write in flight; rethrows the writer's failure, if any. */
  private async settle(): Promise<void> {
    const pending = this.inFlight;
    this.inFlight = undefined;
    if (pending !== undefined) await pending.catch(() => undefined);
    if (this.failure !== undefined) throw this.failure.error;
  }

  /** Starts writing the full buffer in the background and switches to the spare one. */
  private async flush(): Promise<void> {
    await this.settle();
    if (this.fill === 0) return;
    const write = this.track(this.file.write(this.buffer.subarray(0, this.fill)));
    // Handled by settle(); without this a failure would be an unhandled rejection meanwhile.
    write.catch(() => undefined);
    this.inFlight = write;
    [this.buffer, this.spare] = [this.spare, this.buffer];
    this.fill = 0;
  }

  private async finish(flush: boolean): Promise<void> {
    let first: unknown;
    try {
      if (flush) {
        await this.flush();
        await this.settle();
      } else {
        // The descriptor must not close under a write still in flight.
        await this.inFlight?.catch(() => undefined);
        this.inFlight = undefined;
      }
    } catch (e) {
      first = e;
    }
    try {
      await this.file.close();
    } catch (e) {
      if (first === undefined) first = e;
      else if (first instanceof Error) addSuppressed(first, e);
    }
    if (first !== undefined) throw first;
  }
}

// ---------------------------------------------------------------------------------------------
// Generator
// ---------------------------------------------------------------------------------------------

/**
 * Options of {@link makeCheckpoint}.
 *
 * @example
 * ```ts
 * const opts: MakeCheckpointOptions = { out: 'bench.spwc', mb: 2048, seed: 42 };
 * ```
 */
export interface MakeCheckpointOptions {
  /** Path of the file to create; must not exist (`'wx'`). */
  out: string;
  /** Number of gates, default 2. */
  gates?: number;
  /** Channels per gate, default 4. */
  channels?: number;
  /** Total payload in MiB (fractional allowed), default 8; exactly `round(mb * 2^20)` bytes. */
  mb?: number;
  /** PRNG seed, default 1: same options and seed give identical bytes. */
  seed?: number;
  /** Largest entry payload, default 256 KiB. */
  maxEntryBytes?: number;
  /** About one entry in this many is zero-length; default 7, 0 = none (1 is rejected). */
  zeroLengthEvery?: number;
}

/**
 * What {@link makeCheckpoint} wrote.
 *
 * @example
 * ```ts
 * const made = await makeCheckpoint({ out });
 * for (const c of made.channels) expect(size(`${channelKey(c.gate, c.channel)}.bin`)).toBe(c.bytes);
 * ```
 */
export interface MadeCheckpoint {
  path: string;
  entries: number;
  payloadBytes: number;
  fileBytes: number;
  /**
   * Every channel that has at least one entry (zero-length ones count), sorted by gate then
   * channel, with its total payload bytes.
   */
  channels: { gate: number; channel: number; bytes: number }[];
}

/**
 * xorshift128 (Marsaglia) seeded by splitmix32: tiny, fast in 32-bit JS integer arithmetic, and
 * identical on every platform, which is all a test-data generator needs.
 */
class Xorshift128 {
  private x: number;
  private y: number;
  private z: number;
  private w: number;

  constructor(seed: number) {
    let s = seed >>> 0;
    const splitmix32 = (): number => {
      s = (s + 0x9e3779b9) | 0;
      let t = s ^ (s >>> 16);
      t = Math.imul(t, 0x21f0aaad);
      t ^= t >>> 15;
      t = Math.imul(t, 0x735a2d97);
      return (t ^ (t >>> 15)) >>> 0;
    };
    this.x = splitmix32();
    this.y = splitmix32();
    this.z = splitmix32();
    this.w = splitmix32();
    // An all-zero state would emit zeros forever.
    if ((this.x | this.y | this.z | this.w) === 0) this.w = 1;
  }

  next(): number {
    const t = this.x ^ (this.x << 11);
    this.x = this.y;
    this.y = this.z;
    this.z = this.w;
    this.w = this.w ^ (this.w >>> 19) ^ (t ^ (t >>> 8));
    return this.w >>> 0;
  }

  /** Uniform-enough integer in `0..n-1` (modulo bias is irrelevant for test data). */
  below(n: number): number {
    return this.next() % n;
  }

  /** Fills `words[0..count)`; the hot loop keeps the state in locals. */
  fill(words: Uint32Array, count: number): void {
    let { x, y, z, w } = this;
    for (let i = 0; i < count; i++) {
      const t = x ^ (x << 11);
      x = y;
      y = z;
      z = w;
      w = w ^ (w >>> 19) ^ (t ^ (t >>> 8));
      words[i] = w;
    }
    this.x = x;
    this.y = y;
    this.z = z;
    this.w = w;
  }
}

const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function checkInt(name: string, value: number, min: number, max: number): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer in ${min}..${max}, got ${value}`);
  }
}

/**
 * Writes a deterministic pseudo-random checkpoint: entries go to random channels of
 * `gates × channels`, sizes are random up to `maxEntryBytes`, about one in `zeroLengthEvery`
 * is empty, and the payload totals exactly `round(mb × 2^20)` bytes. Fast enough for multi-GiB
 * bench files: payload is generated a 32-bit word at a time into one reused buffer. On failure
 * the partial file is deleted.
 *
 * @example
 * ```ts
 * const made = await makeCheckpoint({ out: join(dir, 'in.spwc'), mb: 64, seed: 7 });
 * console.log(made.entries, made.fileBytes);
 * ```
 */
export async function makeCheckpoint(options: MakeCheckpointOptions): Promise<MadeCheckpoint> {
  const gates = options.gates ?? 2;
  const channels = options.channels ?? 4;
  const mb = options.mb ?? 8;
  const seed = options.seed ?? 1;
  const maxEntryBytes = options.maxEntryBytes ?? 256 * 1024;
  const zeroLengthEvery = options.zeroLengthEvery ?? 7;
  checkInt('gates', gates, 1, MAX_GATE + 1);
  checkInt('channels', channels, 1, MAX_CHANNEL + 1);
  checkInt('seed', seed, -(2 ** 31), 2 ** 32 - 1);
  checkInt('maxEntryBytes', maxEntryBytes, 1, MAX_ENTRY_LENGTH);
  // 1 would make every entry empty and never reach the total.
  if (zeroLengthEvery !== 0) checkInt('zeroLengthEvery', zeroLengthEvery, 2, 2 ** 32);
  if (!Number.isFinite(mb) || mb < 0) throw new RangeError(`mb must be ≥ 0, got ${mb}`);
  const total = Math.round(mb * MIB);
  if (!Number.isSafeInteger(total)) throw new RangeError(`mb too large: ${mb}`);

  const rng = new Xorshift128(seed);
  // Word-aligned so the PRNG can fill 4 bytes per step; the tail of the last word is unused.
  const words = new Uint32Array(Math.ceil(maxEntryBytes / 4));
  const bytes = Buffer.from(words.buffer, words.byteOffset, words.byteLength);
  const totals = new Map<number, number>();

  const writer = await CheckpointWriter.create(options.out);
  let entries = 0;
  try {
    let remaining = total;
    while (remaining > 0) {
      const gate = rng.below(gates);
      const channel = rng.below(channels);
      let length = 0;
      if (zeroLengthEvery === 0 || rng.below(zeroLengthEvery) !== 0) {
        length = Math.min(1 + rng.below(maxEntryBytes), remaining);
        rng.fill(words, Math.ceil(length / 4));
        // Keeps the bytes identical on big-endian hosts.
        if (!LITTLE_ENDIAN_HOST) bytes.subarray(0, Math.ceil(length / 4) * 4).swap32();
      }
      await writer.append(gate, channel, bytes.subarray(0, length));
      const key = gate * (MAX_CHANNEL + 1) + channel;
      totals.set(key, (totals.get(key) ?? 0) + length);
      remaining -= length;
      entries++;
    }
    await writer.close();
  } catch (e) {
    try {
      await writer.discard();
    } catch (cleanup) {
      if (e instanceof Error) addSuppressed(e, cleanup);
    }
    throw e;
  }

  const list = [...totals.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([key, sum]) => ({
      gate: Math.floor(key / (MAX_CHANNEL + 1)),
      channel: key % (MAX_CHANNEL + 1),
      bytes: sum,
    }));
  return {
    path: options.out,
    entries,
    payloadBytes: total,
    fileBytes: writer.bytesWritten,
    channels: list,
  };
}
