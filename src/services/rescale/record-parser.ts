/**
 * Records of one virtual channel (old subtask, gate, channel): the stream `[int32 L][L bytes]…`
 * its entry payloads form, cut anywhere, even inside a length field. One parser per virtual
 * channel, as Flink keeps one deserializer each, with memory bounded by the records it keeps.
 */
import { CorruptCheckpointError } from '../errors.ts';
import { MAX_ENTRY_LENGTH } from '../entry-length.ts';
import { KEY_HASH_SEED, hashKeyBytes } from './key-groups.ts';

/** Size of a record's length prefix. */
export const RECORD_LENGTH_BYTES = 4;

/** A record longer than this is refused by default (16 MiB): see {@link RecordRules}. */
export const DEFAULT_MAX_RECORD_BYTES = 16 * 1024 * 1024;

/** The virtual channel a record was read from: the old subtask and its (gate, channel). */
export interface VirtualChannel {
  readonly subtask: number;
  readonly gate: number;
  readonly channel: number;
}

/**
 * How a parser decides which records survive. Exactly one of `keep` and `keepKeyHash`:
 * `keepKeyHash` sees only Java's `Arrays.hashCode` of the first `keyBytes` bytes and decides
 * early (a dropped record is then skipped without being held); `keep` sees the whole record.
 */
export interface RecordRules {
  /** The file, for error messages. */
  readonly file: string;
  /** Records longer than this are a `CorruptCheckpointError` rather than an allocation. */
  readonly maxRecordBytes: number;
  /** Leading bytes hashed for `keepKeyHash`; records shorter than this are corrupt. */
  readonly keyBytes: number;
  readonly keepKeyHash?: (keyHash: number) => boolean;
  readonly keep?: (record: Buffer, from: VirtualChannel) => boolean;
}

/**
 * Thrown by a `keep` predicate for a record that cannot be what it claims (a Flink stream
 * element with an unknown tag, a value shorter than its key): the parser turns it into a
 * `CorruptCheckpointError` at the record's start.
 */
export class RecordShapeError extends Error {}

/** What a parser counts (summed over all virtual channels by the filtering handler). */
export interface RecordCounts {
  read: number;
  kept: number;
  dropped: number;
}

/**
 * Parses one virtual channel's record stream and emits the surviving records, re-serialized
 * `[int32 L][bytes]`, in the order they complete.
 *
 * A run of surviving records that lies inside one chunk is emitted as one slice of that chunk
 * (their serialized form is the input's), so filtering costs no copy on that path; only a
 * record that spans chunks is copied, and only while it may still survive.
 *
 * @example
 * ```ts
 * const parser = new RecordParser({ subtask: 1, gate: 0, channel: 2 }, rules, counts);
 * const out: Buffer[] = [];
 * parser.push(chunk, chunkFileOffset, out); // out: slices to append to (gate 0, channel 2)
 * parser.finish(); // throws CorruptCheckpointError if the channel ended inside a record
 * ```
 */
export class RecordParser {
  /** Bytes of the length field seen so far (0 between records, 4 inside a body). */
  private lengthFill = 0;
  private length = 0;
  /** Body bytes of the open record still to come. */
  private remaining = 0;
  /** File offset of the open record's first byte (its length field). */
  private recordStart = -1;
  private keySeen = 0;
  private keyHash = KEY_HASH_SEED;
  /** undefined: not decided yet (key incomplete, or `keep` waits for the whole record). */
  private decision: boolean | undefined;
  /** The open record's serialized bytes so far, copied, while it may survive. */
  private pieces: Buffer[] = [];

  /** The valid record lengths: at least the key (when hashing), at most the limit. */
  private readonly minLength: number;
  private readonly maxLength: number;

  constructor(
    readonly from: VirtualChannel,
    private readonly rules: RecordRules,
    private readonly counts: RecordCounts,
  ) {
    this.minLength = rules.keepKeyHash !== undefined ? rules.keyBytes : 0;
    this.maxLength = Math.min(rules.maxRecordBytes, MAX_ENTRY_LENGTH);
  }

  /** True while the stream is inside a record (Flink's `hasPartialData`). */
  get hasPartialData(): boolean {
    return this.lengthFill > 0;
  }

  /** File offset where the open record starts, or -1 between records. */
  get partialRecordStart(): number {
    return this.lengthFill > 0 ? this.recordStart : -1;
  }

  /**
   * The open record's bytes so far, from its length field on (a tail cut at the end of the
   * stream), or undefined between records and once a dropped record's bytes were let go (a
   * key-hash rule decides before the record is whole).
   */
  partialBytes(): Buffer | undefined {
    if (this.lengthFill === 0) return undefined;
    if (this.lengthFill < RECORD_LENGTH_BYTES) {
      const field = Buffer.alloc(this.lengthFill);
      field.writeUIntBE(this.length >>> 0, 0, this.lengthFill);
      return field;
    }
    if (this.decision === false) return undefined;
    return Buffer.concat(this.pieces);
  }

  /**
   * Completes the open record with `record` (its whole body, length field excluded) joined
   * from elsewhere — the upstream's replayed output state, as Flink's restore feeds the same
   * deserializer — then judges, counts and (if it survives) emits it as any other record.
   */
  completeWith(record: Buffer, out: Buffer[]): void {
    const keyRule = this.rules.keepKeyHash;
    const keep =
      keyRule !== undefined
        ? keyRule(hashKeyBytes(KEY_HASH_SEED, record, 0, this.rules.keyBytes))
        : this.judge(record, this.recordStart);
    this.pieces = [];
    this.lengthFill = 0;
    this.length = 0;
    this.remaining = 0;
    this.counts.read++;
    if (!keep) {
      this.counts.dropped++;
      return;
    }
    this.counts.kept++;
    const framed = Buffer.allocUnsafe(RECORD_LENGTH_BYTES + record.length);
    framed.writeInt32BE(record.length, 0);
    record.copy(framed, RECORD_LENGTH_BYTES);
    out.push(framed);
  }

  /**
   * Feeds the next piece of the stream. `offset` is the file offset of `chunk[0]`. Surviving
   * records are pushed to `out`, whole: runs of them as slices of `chunk` (valid only as long
   * as `chunk` is), a record that spanned chunks as a copy.
   */
  push(chunk: Buffer, offset: number, out: Buffer[]): void {
    const n = chunk.length;
    const whole = this.rules.keepKeyHash;
    let i = 0;
    /** Start of the run of whole surviving records ending at `i`, or -1. */
    let run = -1;
    while (i < n) {
      if (this.lengthFill === 0 && n - i >= RECORD_LENGTH_BYTES) {
        // Fast path: a length field in one piece.
        const length = chunk.readInt32BE(i);
        this.checkLength(length, offset + i);
        const end = i + RECORD_LENGTH_BYTES + length;
        if (end <= n) {
          // The whole record is here: decide and extend or close the run, no copy.
          const keep =
            whole !== undefined
              ? whole(hashKeyBytes(KEY_HASH_SEED, chunk, i + 4, i + 4 + this.rules.keyBytes))
              : this.judge(chunk.subarray(i + 4, end), offset + i);
          this.counts.read++;
          if (keep) {
            this.counts.kept++;
            if (run < 0) run = i;
          } else {
            this.counts.dropped++;
            if (run >= 0) out.push(chunk.subarray(run, i));
            run = -1;
          }
          i = end;
          continue;
        }
        if (run >= 0) out.push(chunk.subarray(run, i));
        run = -1;
        this.open(length, offset + i);
        this.pieces.push(Buffer.from(chunk.subarray(i, i + RECORD_LENGTH_BYTES)));
        i += RECORD_LENGTH_BYTES;
        this.startBody(out);
        continue;
      }
      if (run >= 0) out.push(chunk.subarray(run, i));
      run = -1;
      if (this.lengthFill < RECORD_LENGTH_BYTES) {
        // Slow path: a length field cut across chunks, one byte at a time.
        if (this.lengthFill === 0) this.recordStart = offset + i;
        this.length = (this.length << 8) | chunk[i]! | 0;
        this.lengthFill++;
        i++;
        if (this.lengthFill === RECORD_LENGTH_BYTES) {
          this.checkLength(this.length, this.recordStart);
          const prefix = Buffer.allocUnsafe(RECORD_LENGTH_BYTES);
          prefix.writeInt32BE(this.length, 0);
          this.pieces.push(prefix);
          this.remaining = this.length;
          this.startBody(out);
        }
        continue;
      }
      i = this.body(chunk, i, out);
    }
    if (run >= 0) out.push(run === 0 ? chunk : chunk.subarray(run, n));
  }

  /**
   * The stream ended. Throws a `CorruptCheckpointError` at the open record's start if it ended
   * inside one (Flink's `hasPartialData` check after reading all state).
   */
  finish(): void {
    if (this.lengthFill === 0) return;
    const have =
      this.lengthFill < RECORD_LENGTH_BYTES
        ? `${this.lengthFill} of its 4 length bytes`
        : `${this.length - this.remaining} of its ${this.length} bytes`;
    throw new CorruptCheckpointError(
      this.rules.file,
      this.recordStart,
      `virtual channel (subtask ${this.from.subtask}, gate ${this.from.gate}, channel ` +
        `${this.from.channel}) ends inside a record: ${have} present`,
    );
  }

  /** The custom predicate's verdict; a {@link RecordShapeError} is corrupt input at `at`. */
  private judge(record: Buffer, at: number): boolean {
    try {
      return this.rules.keep!(record, this.from);
    } catch (error) {
      if (error instanceof RecordShapeError) {
        throw new CorruptCheckpointError(this.rules.file, at, error.message);
      }
      throw error;
    }
  }

  /** The hot check: in range, or the slow path that says why not. */
  private checkLength(length: number, at: number): void {
    if (length >= this.minLength && length <= this.maxLength) return;
    throw this.badLength(length, at);
  }

  private badLength(length: number, at: number): CorruptCheckpointError {
    const reason =
      length < 0
        ? `negative record length ${length}`
        : length > MAX_ENTRY_LENGTH
          ? `record length ${length} out of range 0..${MAX_ENTRY_LENGTH}`
          : length > this.rules.maxRecordBytes
            ? `record of ${length} bytes exceeds the limit of ${this.rules.maxRecordBytes} bytes (maxRecordBytes)`
            : `record of ${length} bytes is shorter than its ${this.rules.keyBytes}-byte key`;
    return new CorruptCheckpointError(this.rules.file, at, reason);
  }

  /** Opens a spanning record whose length field was read in one piece. */
  private open(length: number, at: number): void {
    this.recordStart = at;
    this.length = length;
    this.lengthFill = RECORD_LENGTH_BYTES;
    this.remaining = length;
  }

  /** Called once the length is known: an empty key (or record) may decide at once. */
  private startBody(out: Buffer[]): void {
    this.keySeen = 0;
    this.keyHash = KEY_HASH_SEED;
    this.decision = undefined;
    if (this.rules.keepKeyHash !== undefined && this.rules.keyBytes === 0) {
      this.decision = this.rules.keepKeyHash(KEY_HASH_SEED);
    }
    if (this.remaining === 0) this.complete(out);
  }

  /** Consumes body bytes of the open spanning record from `chunk[i…]`; returns the new `i`. */
  private body(chunk: Buffer, i: number, out: Buffer[]): number {
    const take = Math.min(this.remaining, chunk.length - i);
    const keyRule = this.rules.keepKeyHash;
    if (keyRule !== undefined && this.decision === undefined) {
      const k = Math.min(this.rules.keyBytes - this.keySeen, take);
      this.keyHash = hashKeyBytes(this.keyHash, chunk, i, i + k);
      this.keySeen += k;
      if (this.keySeen === this.rules.keyBytes) {
        this.decision = keyRule(this.keyHash);
        // A dropped record is skipped from here on: nothing of it is held.
        if (!this.decision) this.pieces = [];
      }
    }
    if (this.decision !== false) this.pieces.push(Buffer.from(chunk.subarray(i, i + take)));
    this.remaining -= take;
    if (this.remaining === 0) this.complete(out);
    return i + take;
  }

  /** The open record's last byte arrived: count it and emit it if it survives. */
  private complete(out: Buffer[]): void {
    const pieces = this.pieces;
    this.pieces = [];
    this.lengthFill = 0;
    this.length = 0;
    this.counts.read++;
    let keep = this.decision;
    if (keep === undefined) {
      const record = Buffer.concat(pieces.slice(1));
      keep = this.judge(record, this.recordStart);
    }
    if (keep) {
      this.counts.kept++;
      // One buffer per record: the filtering handler keeps a record inside one segment.
      out.push(pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces));
    } else {
      this.counts.dropped++;
    }
  }
}
