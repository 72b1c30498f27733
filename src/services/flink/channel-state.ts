/**
 * Reads the entries of one Flink channel-state delegate stream (a file, a file-merging segment
 * or an inline blob of `_metadata`) the way Flink's `SequentialChannelStateReaderImpl` does:
 * the stream's 4-byte header once (`ChannelStateSerializerImpl`'s version, 0), then every entry
 * `[int32 length][bytes]` its handles name, offsets ascending, each read where it lies. A
 * shared file (several subtasks' entries interleaved) is never read whole: a read starts at one
 * of the selected entries and ends at the earliest of its chunk size, the next selected entry,
 * and what its handle can still hold.
 */
import { crc32 } from '../crc32.ts';
import { AbortedError, CorruptCheckpointError, addSuppressed } from '../errors.ts';
import {
  openCheckpointSource,
  type CheckpointByteSource,
  type SourceOptions,
} from '../checkpoint/source.ts';
import type { CheckpointVisitor } from '../checkpoint/reader.ts';
import type { FlinkChannelHandle } from './metadata-types.ts';
import type { DelegateLocation } from './paths.ts';

/** Flink's `ChannelStateSerializerImpl` version: the only one there is. */
export const CHANNEL_STATE_VERSION = 0;
/** The stream header and each entry's length field. */
export const CHANNEL_STATE_INT_BYTES = 4;

/** One handle of a delegate, with the old subtask whose state it is. */
export interface DelegateHandle {
  readonly handle: FlinkChannelHandle;
  /** The subtask state it was listed under (the virtual channel's old subtask). */
  readonly subtask: number;
}

/** What {@link readDelegateEntries} read. */
export interface DelegateSummary {
  entries: number;
  payloadBytes: number;
}

/** Options of {@link readDelegateEntries}. */
export interface ReadDelegateOptions {
  /** Largest read and payload chunk; default 1 MiB. */
  readChunkBytes?: number | undefined;
  signal?: AbortSignal | undefined;
  /** For a remote delegate: endpoint and retry policy. */
  remote?: SourceOptions | undefined;
}

const DEFAULT_CHUNK_BYTES = 1024 * 1024;

/** An entry to read: where its length field is (stream offset) and whose it is. */
interface Planned {
  readonly offset: number;
  readonly item: number;
}

/**
 * Streams every entry `handles` name in `where`'s stream into `visitor`, offsets ascending:
 * `onEntry(gate, channel, length, fileOffset, subtask)` then its payload in chunks of at most
 * `readChunkBytes`, each with its CRC-32. `fileOffset` is the byte of the entry's length field
 * in the physical file.
 *
 * Checked before any payload is handed on: the file's size against the stream's declared
 * range, the header version, every offset inside the stream (past the header). Checked per
 * entry before its payload: a length ≥ 0 that fits the stream, the handle's declared state
 * size, and the next selected entry's header. Anything else is a `CorruptCheckpointError`
 * naming the file and the byte.
 *
 * @example
 * ```ts
 * const where = await paths.locate(handle.delegate);
 * await readDelegateEntries(where, [{ handle, subtask: 0 }], visitor);
 * ```
 */
export async function readDelegateEntries(
  where: DelegateLocation,
  handles: readonly DelegateHandle[],
  visitor: CheckpointVisitor,
  options: ReadDelegateOptions = {},
): Promise<DelegateSummary> {
  const chunkBytes = Math.max(options.readChunkBytes ?? DEFAULT_CHUNK_BYTES, 16);
  const signal = options.signal;
  const throwIfAborted = (): void => {
    if (signal?.aborted === true) {
      throw signal.reason ?? new AbortedError(`${where.shown}: channel-state read aborted`);
    }
  };
  const corrupt = (at: number, reason: string): CorruptCheckpointError =>
    new CorruptCheckpointError(where.shown, at, reason);
  const { start, length } = where;
  const streamEnd = start + length;

  // Every offset, sorted (Flink's extractOffsetsSorted), checked against the stream first.
  const planned: Planned[] = [];
  for (let item = 0; item < handles.length; item++) {
    for (const offset of handles[item]!.handle.offsets) planned.push({ offset, item });
  }
  planned.sort((a, b) => a.offset - b.offset || a.item - b.item);
  for (const p of planned) {
    if (!Number.isSafeInteger(p.offset) || p.offset < CHANNEL_STATE_INT_BYTES) {
      throw corrupt(
        start + Math.max(0, Math.min(p.offset, length)),
        `entry offset ${p.offset} points into the stream's ${CHANNEL_STATE_INT_BYTES}-byte header ` +
          `(handle at byte ${handles[p.item]!.handle.metadataOffset} of _metadata)`,
      );
    }
    if (p.offset + CHANNEL_STATE_INT_BYTES > length) {
      throw corrupt(
        streamEnd,
        `entry offset ${p.offset} lies past the end of the ${length}-byte stream ` +
          `(handle at byte ${handles[p.item]!.handle.metadataOffset} of _metadata)`,
      );
    }
  }

  throwIfAborted();
  const { file, bytes } = await openCheckpointSource(where.location, { ...options.remote, signal });
  let primary: unknown;
  try {
    if (bytes < streamEnd) {
      throw corrupt(
        bytes,
        `the file has ${bytes} bytes; its handle declares ${length} bytes from byte ${start}`,
      );
    }
    const window = new ReadWindow(file, Math.min(chunkBytes, Math.max(length, 16)), corrupt);
    const version = (await window.view(start, CHANNEL_STATE_INT_BYTES, streamEnd)).readInt32BE(0);
    if (version !== CHANNEL_STATE_VERSION) {
      throw corrupt(
        start,
        `channel-state serialization version ${version} (only ${CHANNEL_STATE_VERSION} exists)`,
      );
    }
    // What each handle may still hold: its declared state size, lengths included.
    const left = handles.map((h) => h.handle.stateSize);
    // A stream that is (almost) all selected entries is read ahead in whole chunks, like an
    // SPWC file; a shared one (other subtasks' entries in between) one selected entry at a
    // time, so its foreign bytes are not read.
    const declared = left.reduce((a, b) => a + b, 0);
    const dense = declared >= 0.9 * (length - CHANNEL_STATE_INT_BYTES);
    let entries = 0;
    let payloadBytes = 0;
    for (let k = 0; k < planned.length; k++) {
      throwIfAborted();
      const { offset, item } = planned[k]!;
      const { handle, subtask } = handles[item]!;
      const at = start + offset;
      const next = k + 1 < planned.length ? start + planned[k + 1]!.offset : streamEnd;
      const readEnd = dense
        ? streamEnd
        : Math.min(next === at ? streamEnd : next, at + Math.max(left[item]!, 4), streamEnd);
      const head = window.view(at, CHANNEL_STATE_INT_BYTES, Math.max(readEnd, at + 4));
      const entryLength = (head instanceof Buffer ? head : await head).readInt32BE(0);
      if (entryLength < 0) throw corrupt(at, `negative entry length ${entryLength}`);
      const end = at + CHANNEL_STATE_INT_BYTES + entryLength;
      if (end > streamEnd) {
        throw corrupt(
          at,
          `entry of ${entryLength} bytes runs past the end of the stream ` +
            `(${streamEnd - at - CHANNEL_STATE_INT_BYTES} bytes remain)`,
        );
      }
      if (CHANNEL_STATE_INT_BYTES + entryLength > left[item]!) {
        throw corrupt(
          at,
          `entry of ${entryLength} bytes exceeds what its handle declares: state size ` +
            `${handle.stateSize} (handle at byte ${handle.metadataOffset} of _metadata)`,
        );
      }
      if (k + 1 < planned.length && end > next) {
        throw corrupt(
          next,
          `the entry at byte ${at} (${entryLength} bytes) overlaps the entry at byte ${next}`,
        );
      }
      left[item]! -= CHANNEL_STATE_INT_BYTES + entryLength;
      entries++;
      const entered = visitor.onEntry(handle.gate, handle.channel, entryLength, at, subtask);
      if (entered !== undefined) await entered;
      let pos = at + CHANNEL_STATE_INT_BYTES;
      while (pos < end) {
        throwIfAborted();
        const got = window.available(pos, end, dense ? streamEnd : end);
        const chunk = got instanceof Buffer ? got : await got;
        pos += chunk.length;
        payloadBytes += chunk.length;
        const written = visitor.onPayload(chunk, crc32(chunk));
        if (written !== undefined) await written;
      }
    }
    return { entries, payloadBytes };
  } catch (error) {
    primary = error;
    throw error;
  } finally {
    try {
      await file.close();
    } catch (closeError) {
      if (primary === undefined) throw closeError;
      if (primary instanceof Error) addSuppressed(primary, closeError);
    }
  }
}

/**
 * One reused buffer over a file: a window of bytes `[at, at + fill)`. Chunks handed out are
 * slices of it, valid until the next call (the visitor contract: borrowed during the call).
 */
class ReadWindow {
  private readonly buf: Buffer;
  private at = 0;
  private fill = 0;

  constructor(
    private readonly file: CheckpointByteSource,
    capacity: number,
    private readonly corrupt: (at: number, reason: string) => CorruptCheckpointError,
  ) {
    this.buf = Buffer.allocUnsafe(capacity);
  }

  /** `n` bytes at `pos` (n ≤ capacity), reading up to `limit` if they are not here yet. */
  view(pos: number, n: number, limit: number): Buffer | Promise<Buffer> {
    // Synchronous when the bytes are here: no promise per entry (most entries, read ahead).
    if (pos >= this.at && pos + n <= this.at + this.fill) return this.slice(pos, pos + n);
    return this.load(pos, n, limit).then(() => this.slice(pos, pos + n));
  }

  private slice(from: number, to: number): Buffer {
    return this.buf.subarray(from - this.at, to - this.at);
  }

  /** The bytes at `pos` that are here, up to `end`; loads from `pos` (up to `limit`) if none are. */
  available(pos: number, end: number, limit: number): Buffer | Promise<Buffer> {
    if (pos >= this.at && pos < this.at + this.fill) return this.upTo(pos, end);
    return this.load(pos, 1, limit).then(() => this.upTo(pos, end));
  }

  private upTo(pos: number, end: number): Buffer {
    return this.slice(pos, Math.min(end, this.at + this.fill));
  }

  private async load(pos: number, need: number, limit: number): Promise<void> {
    const want = Math.max(need, Math.min(this.buf.length, limit - pos));
    let got = 0;
    this.at = pos;
    this.fill = 0;
    while (got < need) {
      const n = await this.file.read(this.buf, got, want - got, pos + got);
      if (n === 0) {
        throw this.corrupt(pos + got, `the file ended at byte ${pos + got} (it shrank while read)`);
      }
      got += n;
      this.fill = got;
    }
  }
}
