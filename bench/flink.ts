/**
 * The Flink figure of `spillway bench` (`flinkVsSpwc`): the fetch stage reading a Flink
 * checkpoint (`_metadata` v3 + one channel-state file, entries interleaved across channels, as
 * Flink's channel-state writer leaves them) against the same stage reading an SPWC file that
 * holds the very same payload bytes in the same order, as a ratio of times. Goal ≥ 0.95: the
 * Flink source (header check, per-entry seeks, handle bookkeeping) costs at most ~5 % on top
 * of SPWC's sequential read.
 *
 * The Flink checkpoint is written here from the SPWC file, entry for entry: a minimal `_metadata`
 * (Flink's `MetadataV3Serializer` layout: one operator, one subtask, one relative-file handle
 * per channel) — only what this measurement needs, not a general writer of Flink's format.
 */
import { open, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeCheckpoint } from '../src/services/formats/spwc/generator.ts';
import { readCheckpoint } from '../src/services/formats/spwc/reader.ts';
import { channelKey } from '../src/services/channel.ts';
import { fetchToSpill } from '../src/services/spill/fetch-stage.ts';
import type { FlinkSelection } from '../src/services/formats/flink/entry-source.ts';
import { round, spread, type Spread } from './stats.ts';
import { runBenchChild } from './rss.ts';

/** The operator id the written checkpoint uses (32 hex digits). */
export const BENCH_OPERATOR = '0000000000000000000000000000f11c';

/** A Flink checkpoint written from an SPWC file. */
export interface SpwcAsFlink {
  /** The `chk-1` directory (holds `_metadata` and the channel-state file). */
  checkpoint: string;
  /** Selects the only operator's only subtask. */
  selection: FlinkSelection;
  entries: number;
  payloadBytes: number;
}

class Out {
  private parts: Buffer[] = [];
  i32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    this.parts.push(b);
    return this;
  }
  i64(v: number): this {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(BigInt(v));
    this.parts.push(b);
    return this;
  }
  u8(v: number): this {
    this.parts.push(Buffer.from([v]));
    return this;
  }
  utf(s: string): this {
    const b = Buffer.from(s, 'utf8');
    const n = Buffer.alloc(2);
    n.writeUInt16BE(b.length);
    this.parts.push(n, b);
    return this;
  }
  raw(b: Buffer): this {
    this.parts.push(b);
    return this;
  }
  buffer(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/**
 * Writes `<dir>/job/chk-1/{_metadata,state}` holding `spwc`'s entries in file order: the
 * channel-state file is `int32 0` then each entry `[int32 length][payload]`; each (gate, channel)
 * gets one input-channel handle listing its entries' offsets.
 *
 * @example
 * ```ts
 * const { checkpoint, selection } = await writeSpwcAsFlink('cp.spwc', dir);
 * ```
 */
export async function writeSpwcAsFlink(spwc: string, dir: string): Promise<SpwcAsFlink> {
  const chk = join(dir, 'job', 'chk-1');
  await mkdir(chk, { recursive: true });
  const state = await open(join(chk, 'state'), 'w');
  const channels = new Map<
    string,
    { gate: number; channel: number; offsets: number[]; size: number }
  >();
  let position = 0;
  let entries = 0;
  let payloadBytes = 0;
  const pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = async (): Promise<void> => {
    if (pending.length === 0) return;
    await state.write(Buffer.concat(pending));
    pending.length = 0;
    pendingBytes = 0;
  };
  const push = async (b: Buffer): Promise<void> => {
    pending.push(b);
    pendingBytes += b.length;
    position += b.length;
    if (pendingBytes >= 4 * 1024 * 1024) await flush();
  };
  try {
    await push(Buffer.alloc(4)); // serialization version 0
    await readCheckpoint(spwc, {
      async onEntry(gate, channel, length) {
        const key = channelKey({ gate, channel });
        let c = channels.get(key);
        if (c === undefined) {
          c = { gate, channel, offsets: [], size: 0 };
          channels.set(key, c);
        }
        c.offsets.push(position);
        c.size += 4 + length;
        entries++;
        payloadBytes += length;
        const header = Buffer.alloc(4);
        header.writeInt32BE(length);
        await push(header);
      },
      async onPayload(chunk) {
        await push(Buffer.from(chunk));
      },
    });
    await flush();
  } finally {
    await state.close();
  }
  const size = position;
  const handles = [...channels.values()];
  const out = new Out().i32(0x4960672d).i32(3).i64(1).i32(0).i32(1);
  out.raw(Buffer.from(BENCH_OPERATOR, 'hex')).i32(1).i32(128).u8(0); // P, M, no coordinator
  out.i32(1).i32(0); // one subtask, index 0
  out.i32(0).i32(0).u8(0).u8(0); // no operator or keyed state
  out.i32(handles.length);
  for (const h of handles) {
    out.i32(0).i32(h.gate).i32(h.channel).i32(h.offsets.length);
    for (const o of h.offsets) out.i64(o);
    out.i64(h.size).u8(6).utf('state').i64(size); // a relative file handle
  }
  out.i32(0); // no result subpartitions
  await writeFile(join(chk, '_metadata'), out.buffer());
  return {
    checkpoint: chk,
    selection: { operator: BENCH_OPERATOR, subtask: 0 },
    entries,
    payloadBytes,
  };
}

/** Untimed pairs before the timed ones (see {@link measureFlinkVsSpwc}). */
const WARM_PAIRS = 8;

/** What the Flink pair is given: where, how much, how many pairs, and how to stop it. */
export interface FlinkPairOptions {
  dir: string;
  /** MiB of payload. */
  mb: number;
  runs: number;
  seed: number;
  signal: AbortSignal;
}

/** What {@link measureFlinkVsSpwc} found. */
export interface FlinkFigures {
  /** SPWC fetch time ÷ Flink fetch time (≥ 0.95 is the goal). */
  ratio: Spread;
  flinkMiBs: Spread;
  spwcMiBs: Spread;
  entries: number;
}

async function timedFetch(checkpoint: string, taskDir: string, flink?: FlinkSelection) {
  const t0 = performance.now();
  const result = await fetchToSpill({
    checkpoint,
    taskDir,
    signal: new AbortController().signal,
    onTaskDirAcquired: () => undefined,
    ...(flink !== undefined ? { flink } : {}),
  });
  const ms = performance.now() - t0;
  await result.state.release();
  return { ms, bytes: result.payloadBytes };
}

/**
 * Makes a ~`mb` MiB SPWC checkpoint (2 × 4 channels, entries up to 32 KiB like Flink's network
 * buffers), writes it as a Flink checkpoint, and times both fetches `runs` times, alternating
 * which goes first, after {@link WARM_PAIRS} untimed pairs.
 *
 * @example
 * ```ts
 * const f = await measureFlinkVsSpwc({ dir, mb: 64, runs: 7, seed: 1, signal });
 * ```
 */
export async function measureFlinkVsSpwc(o: FlinkPairOptions): Promise<FlinkFigures> {
  const spwc = join(o.dir, 'flink-vs.spwc');
  const flinkDir = join(o.dir, 'flink-vs');
  await makeCheckpoint({
    out: spwc,
    gates: 2,
    channels: 4,
    mb: o.mb,
    seed: o.seed,
    maxEntryBytes: 32 * 1024,
  });
  try {
    const made = await writeSpwcAsFlink(spwc, flinkDir);
    const mib = made.payloadBytes / (1024 * 1024);
    const ratios: number[] = [];
    const flink: number[] = [];
    const spwcRates: number[] = [];
    // Both paths warmed to V8's optimized tier before any pair counts. The SPWC fetch arrives
    // here warm (every phase before this one runs it); the Flink reader, parser and planner
    // would otherwise do their tier-up inside the first pairs (in a fresh process each side's
    // first ~8 fetches of 64 MiB run 1.2–3× slower than its tenth), and the ratio would be
    // that of V8's warm-up, not of the two sources (docs/performance.md, round 5).
    for (let w = 0; w < WARM_PAIRS; w++) {
      await timedFetch(spwc, join(o.dir, `flink-warm-a${w}`));
      await timedFetch(made.checkpoint, join(o.dir, `flink-warm-b${w}`), made.selection);
    }
    for (let run = 0; run < o.runs; run++) {
      if (o.signal.aborted) throw o.signal.reason;
      const a = () => timedFetch(spwc, join(o.dir, `flink-spwc-${run}`));
      const b = () =>
        timedFetch(made.checkpoint, join(o.dir, `flink-flink-${run}`), made.selection);
      let s;
      let f;
      if (run % 2 === 0) {
        s = await a();
        f = await b();
      } else {
        f = await b();
        s = await a();
      }
      ratios.push(s.ms / f.ms);
      spwcRates.push(round((mib / s.ms) * 1000, 0));
      flink.push(round((mib / f.ms) * 1000, 0));
    }
    const r = spread(ratios);
    return {
      ratio: { median: round(r.median, 3), min: round(r.min, 3), max: round(r.max, 3) },
      flinkMiBs: spread(flink),
      spwcMiBs: spread(spwcRates),
      entries: made.entries,
    };
  } finally {
    await rm(spwc, { force: true });
    await rm(flinkDir, { recursive: true, force: true });
  }
}

/**
 * {@link measureFlinkVsSpwc} in a child process of its own (bench/flink-child.ts), run as the
 * command runs (`--optimize-for-size`): not in the bench's process, whose earlier phases' heap
 * taxes the side that allocates more. An abort interrupts the child, which stops between pairs
 * and removes its files.
 *
 * @example
 * ```ts
 * const f = await measureFlinkVsSpwcApart({ dir, mb: 64, runs: 7, seed: 1, signal });
 * ```
 */
export function measureFlinkVsSpwcApart(o: FlinkPairOptions): Promise<FlinkFigures> {
  const args = [o.dir, String(o.mb), String(o.runs), String(o.seed)];
  return runBenchChild<FlinkFigures>('flink-child', args, o.signal, {
    nodeArgs: ['--optimize-for-size'],
  });
}
