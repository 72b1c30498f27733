/**
 * An independent, deliberately plain implementation of rescaled filtering (DESIGN.md §3), for
 * tests to compare the product against: BigInt arithmetic for the hashes (not Math.imul), and
 * whole-stream buffering per virtual channel instead of a streaming parser. Nothing here
 * imports from src/ except the entry type shape.
 */

export interface V2Entry {
  subtask: number;
  gate: number;
  channel: number;
  payload: Buffer;
}

const MASK = (1n << 32n) - 1n;

/** Reduces to a signed 32-bit value, as Java's int does. */
function toInt32(x: bigint): bigint {
  const u = x & MASK;
  return u >= 1n << 31n ? u - (1n << 32n) : u;
}

function rotl32(x: bigint, r: bigint): bigint {
  const u = x & MASK;
  return ((u << r) | (u >> (32n - r))) & MASK;
}

/** Java's `Arrays.hashCode(byte[])` of `bytes`. */
export function refArraysHashCode(bytes: Uint8Array): number {
  let h = 1n;
  for (const b of bytes) h = toInt32(31n * h + BigInt(b > 127 ? b - 256 : b));
  return Number(h);
}

/** Flink's `MathUtils.murmurHash(int)`, written from the algorithm with BigInt. */
export function refMurmurHash(code: number): number {
  let h = BigInt(code) & MASK;
  h = (h * 0xcc9e2d51n) & MASK;
  h = rotl32(h, 15n);
  h = (h * 0x1b873593n) & MASK;
  h = rotl32(h, 13n);
  h = (h * 5n + 0xe6546b64n) & MASK;
  h ^= 4n;
  h ^= h >> 16n;
  h = (h * 0x85ebca6bn) & MASK;
  h ^= h >> 13n;
  h = (h * 0xc2b2ae35n) & MASK;
  h ^= h >> 16n;
  const s = toInt32(h);
  if (s >= 0n) return Number(s);
  return s === -(1n << 31n) ? 0 : Number(-s);
}

/** Flink's default max parallelism, by a loop rather than bit tricks. */
export function refDefaultMaxParallelism(p: number): number {
  let pow = 1;
  while (pow < p + Math.floor(p / 2)) pow *= 2;
  return Math.min(Math.max(pow, 128), 32768);
}

/** The new subtask a record (its body) belongs to. */
export function refOperatorOf(record: Buffer, p: number, m: number, k: number): number {
  const group = refMurmurHash(refArraysHashCode(record.subarray(0, k))) % m;
  return Math.floor((group * p) / m);
}

/** A record `[int32 L][body]` as bytes. */
export function serializeRecord(body: Buffer): Buffer {
  const out = Buffer.alloc(4 + body.length);
  out.writeInt32BE(body.length, 0);
  body.copy(out, 4);
  return out;
}

/**
 * What recovering `entries` as subtask `i` of `p` (max parallelism `m`, key `k` bytes) must give
 * per `gate-<g>-channel-<c>`: after each entry, every record of that virtual channel completed
 * by it, in order, kept iff it maps to `i`. `keep` replaces the key rule when given.
 */
export function referenceFilter(
  entries: readonly V2Entry[],
  options: { i: number; p: number; m: number; k: number } | { keep: (r: Buffer) => boolean },
): Map<string, Buffer> {
  const pending = new Map<string, Buffer>();
  const out = new Map<string, Buffer[]>();
  for (const e of entries) {
    const vc = `${e.subtask}/${e.gate}/${e.channel}`;
    const key = `gate-${e.gate}-channel-${e.channel}`;
    if (!out.has(key)) out.set(key, []);
    let bytes = Buffer.concat([pending.get(vc) ?? Buffer.alloc(0), e.payload]);
    while (bytes.length >= 4 && bytes.length >= 4 + bytes.readInt32BE(0)) {
      const length = bytes.readInt32BE(0);
      const body = bytes.subarray(4, 4 + length);
      const kept =
        'keep' in options
          ? options.keep(body)
          : refOperatorOf(body, options.p, options.m, options.k) === options.i;
      if (kept) out.get(key)!.push(Buffer.from(bytes.subarray(0, 4 + length)));
      bytes = bytes.subarray(4 + length);
    }
    pending.set(vc, Buffer.from(bytes));
  }
  return new Map([...out].map(([k, parts]) => [k, Buffer.concat(parts)]));
}

/** The record bodies in a stream of `[int32 L][body]` records. */
export function parseRecords(stream: Buffer): Buffer[] {
  const records: Buffer[] = [];
  let at = 0;
  while (at < stream.length) {
    const length = stream.readInt32BE(at);
    records.push(stream.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return records;
}

/** Cuts `stream` at the sorted, distinct `cuts` (offsets inside it). */
export function cutAt(stream: Buffer, cuts: readonly number[]): Buffer[] {
  const points = [...new Set(cuts.filter((c) => c > 0 && c < stream.length))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let last = 0;
  for (const c of points) {
    pieces.push(stream.subarray(last, c));
    last = c;
  }
  pieces.push(stream.subarray(last));
  return pieces;
}
