/**
 * A deterministic checkpoint generator for tests, the demo and the bench: the same options and
 * seed give the same bytes on every platform.
 */
import { AbortedError, cleanUpOnFailure } from '../../errors.ts';
import { MAX_CHANNEL, MAX_ENTRY_LENGTH, MAX_GATE } from './format.ts';
import { CheckpointWriter } from './writer.ts';

const MIB = 1024 * 1024;

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
  /** Stops the writing (the partial file is deleted); the promise rejects with `AbortedError`. */
  signal?: AbortSignal;
}

/**
 * What {@link makeCheckpoint} wrote.
 *
 * @example
 * ```ts
 * const made = await makeCheckpoint({ out });
 * for (const c of made.channels) expect(size(`${channelKey(c)}.bin`)).toBe(c.bytes);
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
export class Xorshift128 {
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
  const totals = new ChannelTotals();

  const writer = await CheckpointWriter.create(options.out);
  let entries = 0;
  await writeOrDiscard(writer, async () => {
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
      if (options.signal?.aborted === true) {
        throw new AbortedError('checkpoint make cancelled', { cause: options.signal.reason });
      }
      await writer.append(gate, channel, bytes.subarray(0, length));
      totals.add(gate, channel, length);
      remaining -= length;
      entries++;
    }
  });
  return {
    path: options.out,
    entries,
    payloadBytes: total,
    fileBytes: writer.bytesWritten,
    channels: totals.list(),
  };
}

/**
 * Runs `write` and closes the writer; on any failure discards the file instead, so a failed
 * generator leaves no half-written checkpoint (the first cause wins, a failed discard goes to
 * its `.suppressed`).
 */
export async function writeOrDiscard(
  writer: CheckpointWriter,
  write: () => Promise<void>,
): Promise<void> {
  await cleanUpOnFailure(
    async () => {
      await write();
      await writer.close();
    },
    () => writer.discard(),
  );
}

/** The payload bytes a generator wrote per channel (zero-length entries count the channel). */
export class ChannelTotals {
  private readonly totals = new Map<number, number>();

  add(gate: number, channel: number, bytes: number): void {
    const key = gate * (MAX_CHANNEL + 1) + channel;
    this.totals.set(key, (this.totals.get(key) ?? 0) + bytes);
  }

  /** Every channel seen, sorted by gate then channel, as {@link MadeCheckpoint.channels}. */
  list(): MadeCheckpoint['channels'] {
    return [...this.totals.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([key, bytes]) => ({
        gate: Math.floor(key / (MAX_CHANNEL + 1)),
        channel: key % (MAX_CHANNEL + 1),
        bytes,
      }));
  }
}
