/**
 * A deterministic SPWC v2 generator for tests, the demo and the bench: records
 * `[int32 L][L bytes]` written by several old subtasks, each virtual channel's stream cut into
 * entries at random points (inside length fields too) and the entries of all virtual channels
 * interleaved. Same options and seed, same bytes.
 */
import { AbortedError } from '../../errors.ts';
import { CHECKPOINT_VERSION_V2, MAX_CHANNEL, MAX_GATE, MAX_SUBTASK } from './format.ts';
import { ChannelTotals, Xorshift128, writeOrDiscard, type MadeCheckpoint } from './generator.ts';
import { CheckpointWriter } from './writer.ts';

/**
 * Options of {@link makeRecordCheckpoint}.
 *
 * @example
 * ```ts
 * const opts: MakeRecordCheckpointOptions = { out: 'v2.spwc', records: 1000, subtasks: 3 };
 * ```
 */
export interface MakeRecordCheckpointOptions {
  /** Path of the file to create; must not exist. */
  out: string;
  /** Total number of records, spread evenly over the virtual channels; default 1000. */
  records?: number;
  /** Old subtasks that wrote the state; default 3. */
  subtasks?: number;
  /** Gates, default 1. */
  gates?: number;
  /** Channels per gate, default 2. */
  channels?: number;
  /** PRNG seed, default 1. */
  seed?: number;
  /** Shortest record body, default 8 (the default key size: every record has a full key). */
  minRecordBytes?: number;
  /** Longest record body, default 2048. */
  maxRecordBytes?: number;
  /** Longest entry payload, default 4096. */
  maxEntryBytes?: number;
  /** About one entry in this many is zero-length; default 8, 0 = none. */
  zeroLengthEvery?: number;
  /** Stops the writing (the partial file is deleted); the promise rejects with `AbortedError`. */
  signal?: AbortSignal;
}

/** What {@link makeRecordCheckpoint} wrote: the v1 summary plus the record count. */
export interface MadeRecordCheckpoint extends MadeCheckpoint {
  records: number;
  subtasks: number;
}

function checkInt(name: string, value: number, min: number, max: number): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer in ${min}..${max}, got ${value}`);
  }
}

/** One virtual channel's generator state: its serialized record stream, made lazily. */
interface Stream {
  subtask: number;
  gate: number;
  channel: number;
  recordsLeft: number;
  /** The serialized record being cut into entries, and how much of it was emitted. */
  pending: Buffer;
  pos: number;
}

/** Fills `buf[start, end)` from the PRNG, the same bytes on every platform. */
function fillBytes(rng: Xorshift128, buf: Buffer, start: number, end: number): void {
  let i = start;
  while (i < end) {
    let w = rng.next();
    for (let k = 0; k < 4 && i < end; k++, i++) {
      buf[i] = w & 0xff;
      w >>>= 8;
    }
  }
}

/**
 * Writes a deterministic SPWC v2 checkpoint of `records` records over `subtasks × gates ×
 * channels` virtual channels. On failure the partial file is deleted.
 *
 * @example
 * ```ts
 * const made = await makeRecordCheckpoint({ out: join(dir, 'v2.spwc'), records: 500, seed: 7 });
 * ```
 */
export async function makeRecordCheckpoint(
  options: MakeRecordCheckpointOptions,
): Promise<MadeRecordCheckpoint> {
  const records = options.records ?? 1000;
  const subtasks = options.subtasks ?? 3;
  const gates = options.gates ?? 1;
  const channels = options.channels ?? 2;
  const seed = options.seed ?? 1;
  const minRecord = options.minRecordBytes ?? 8;
  const maxRecord = options.maxRecordBytes ?? 2048;
  const maxEntry = options.maxEntryBytes ?? 4096;
  const zeroLengthEvery = options.zeroLengthEvery ?? 8;
  checkInt('records', records, 0, 2 ** 32);
  checkInt('subtasks', subtasks, 1, MAX_SUBTASK + 1);
  checkInt('gates', gates, 1, MAX_GATE + 1);
  checkInt('channels', channels, 1, MAX_CHANNEL + 1);
  checkInt('seed', seed, -(2 ** 31), 2 ** 32 - 1);
  checkInt('minRecordBytes', minRecord, 0, 2 ** 24);
  checkInt('maxRecordBytes', maxRecord, minRecord, 2 ** 24);
  checkInt('maxEntryBytes', maxEntry, 1, 2 ** 24);
  if (zeroLengthEvery !== 0) checkInt('zeroLengthEvery', zeroLengthEvery, 2, 2 ** 32);
  const virtualChannels = subtasks * gates * channels;
  if (virtualChannels > 1_000_000) throw new RangeError('too many virtual channels');

  const rng = new Xorshift128(seed);
  const active: Stream[] = [];
  for (let s = 0; s < subtasks; s++) {
    for (let g = 0; g < gates; g++) {
      for (let c = 0; c < channels; c++) {
        const k = active.length;
        const share =
          Math.floor(records / virtualChannels) + (k < records % virtualChannels ? 1 : 0);
        active.push({
          subtask: s,
          gate: g,
          channel: c,
          recordsLeft: share,
          pending: Buffer.alloc(0),
          pos: 0,
        });
      }
    }
  }
  const totals = new ChannelTotals();
  const entry = Buffer.allocUnsafe(maxEntry);
  const writer = await CheckpointWriter.create(options.out, { version: CHECKPOINT_VERSION_V2 });
  let entries = 0;
  let payloadBytes = 0;
  await writeOrDiscard(writer, async () => {
    for (let k = active.length - 1; k >= 0; k--) {
      if (active[k]!.recordsLeft === 0) active.splice(k, 1);
    }
    while (active.length > 0) {
      const index = rng.below(active.length);
      const stream = active[index]!;
      let want =
        zeroLengthEvery !== 0 && rng.below(zeroLengthEvery) === 0 ? 0 : 1 + rng.below(maxEntry);
      let fill = 0;
      while (want > 0) {
        if (stream.pos === stream.pending.length) {
          if (stream.recordsLeft === 0) break;
          stream.recordsLeft--;
          const length = minRecord + rng.below(maxRecord - minRecord + 1);
          const record = Buffer.allocUnsafe(4 + length);
          record.writeInt32BE(length, 0);
          fillBytes(rng, record, 4, record.length);
          stream.pending = record;
          stream.pos = 0;
        }
        const take = Math.min(want, stream.pending.length - stream.pos);
        stream.pending.copy(entry, fill, stream.pos, stream.pos + take);
        stream.pos += take;
        fill += take;
        want -= take;
      }
      if (options.signal?.aborted === true) {
        throw new AbortedError('checkpoint make cancelled', { cause: options.signal.reason });
      }
      await writer.append(stream.gate, stream.channel, entry.subarray(0, fill), stream.subtask);
      entries++;
      payloadBytes += fill;
      totals.add(stream.gate, stream.channel, fill);
      if (stream.recordsLeft === 0 && stream.pos === stream.pending.length) {
        active.splice(index, 1);
      }
    }
  });
  return {
    path: options.out,
    entries,
    payloadBytes,
    fileBytes: writer.bytesWritten,
    channels: totals.list(),
    records,
    subtasks,
  };
}
