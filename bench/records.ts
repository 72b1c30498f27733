/**
 * The records figures of `spillway bench` (issue 30):
 *
 * - `tuple3DecodePerSec`: Flink `Tuple3<Long, Integer, String>` records decoded per second on
 *   one core — the framer and the compiled `--type` decoder over one channel's bytes, as
 *   `flink records` runs them (goal ≥ 1 M/s).
 * - `flinkRecordsVsRecover`: `spillway flink records` (no `--type`, JSON Lines to /dev/null) ÷
 *   `spillway recover --out` of the same Flink checkpoint, both through the CLI, wall time
 *   (goal ≤ 1.5). The checkpoint holds ~1 KiB records framed as Flink frames them, across 32 KiB
 *   entries of 8 channels.
 */
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointWriter } from '../src/services/formats/spwc/writer.ts';
import { compileDecoder } from '../src/services/formats/flink/records/decode.ts';
import { ChannelFramer, decodeElement } from '../src/services/formats/flink/records/elements.ts';
import { parseTypeSpec } from '../src/services/formats/flink/records/type-spec.ts';
import { packageBin } from './startup.ts';
import { BENCH_OPERATOR, writeSpwcAsFlink } from './flink.ts';
import { round, spread, type Spread } from './stats.ts';

const MIB = 1024 * 1024;

/** What {@link measureRecords} found. */
export interface RecordsFigures {
  /** Tuple3 records decoded per second (framing + values), per run. */
  decodePerSec: Spread;
  decodedRecords: number;
  /** `flink records` time ÷ `recover` time, per alternating pair. */
  recordsVsRecover: Spread;
  recordsMs: Spread;
  recoverMs: Spread;
  /** Payload of the checkpoint both read, MiB, and its records. */
  checkpointMiB: number;
  checkpointRecords: number;
}

/** StringValue of an ASCII string: length + 1, then a byte a char. */
function stringValue(s: string): Buffer {
  return Buffer.concat([Buffer.of(s.length + 1), Buffer.from(s, 'latin1')]);
}

/** `n` framed Tuple3<Long, Integer, String> records with timestamps, as Flink writes them. */
export function tuple3Records(n: number): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const text = stringValue(`record-${i % 100_000}`);
    const el = Buffer.alloc(1 + 8 + 8 + 4 + text.length);
    el[0] = 0;
    el.writeBigInt64BE(BigInt(1_700_000_000_000 + i), 1);
    el.writeBigInt64BE(BigInt(i * 7919) % 1000n, 9);
    el.writeInt32BE(i | 0, 17);
    text.copy(el, 21);
    const len = Buffer.alloc(4);
    len.writeInt32BE(el.length);
    parts.push(len, el);
  }
  return Buffer.concat(parts);
}

/** Decodes every record of `bytes` in 64 KiB chunks; returns how many. */
function decodeAll(bytes: Buffer): number {
  const decodeValue = compileDecoder(parseTypeSpec('Tuple<Long, Integer, String>'));
  const reading = { decodeValue, maxParallelism: 128 };
  const framer = new ChannelFramer(16 * MIB);
  let n = 0;
  for (let at = 0; at < bytes.length; at += 64 * 1024) {
    const chunk = bytes.subarray(at, Math.min(bytes.length, at + 64 * 1024));
    framer.push(chunk, at, (buf, start, end) => {
      decodeElement(buf, start, end, reading);
      n++;
    });
  }
  return n;
}

/** A Flink checkpoint of `mb` MiB of ~1 KiB records over 8 channels, in 32 KiB entries. */
export async function recordsCheckpoint(
  dir: string,
  mb: number,
): Promise<{ checkpoint: string; records: number }> {
  const spwc = join(dir, 'records.spwc');
  const writer = await CheckpointWriter.create(spwc);
  let records = 0;
  try {
    const perChannel = (mb * MIB) / 8;
    for (let channel = 0; channel < 8; channel++) {
      const parts: Buffer[] = [];
      let size = 0;
      for (let i = 0; size < perChannel; i++, records++) {
        const el = Buffer.alloc(1 + 8 + 1000 + (i % 48));
        el[0] = 0;
        el.writeBigInt64BE(BigInt(i), 1);
        for (let k = 9; k < el.length; k++) el[k] = (k * 31 + i) & 0xff;
        const len = Buffer.alloc(4);
        len.writeInt32BE(el.length);
        parts.push(len, el);
        size += 4 + el.length;
      }
      const stream = Buffer.concat(parts);
      for (let at = 0; at < stream.length; at += 32 * 1024) {
        await writer.append(
          0,
          channel,
          stream.subarray(at, Math.min(stream.length, at + 32 * 1024)),
        );
      }
    }
    await writer.close();
  } catch (e) {
    await writer.discard();
    throw e;
  }
  const made = await writeSpwcAsFlink(spwc, join(dir, 'records-flink'));
  await rm(spwc, { force: true });
  return { checkpoint: made.checkpoint, records };
}

/** Runs the CLI with stdout to /dev/null; wall time in ms. */
function timedCli(args: string[], signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [packageBin(), ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, SPILLWAY_SPILL_ROOT: '' },
    });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const onAbort = (): void => void child.kill('SIGINT');
    signal.addEventListener('abort', onAbort, { once: true });
    child.on('error', reject);
    child.on('close', (code) => {
      signal.removeEventListener('abort', onAbort);
      if (code !== 0)
        reject(new Error(`spillway ${args.slice(0, 2).join(' ')} exited ${code}: ${err.trim()}`));
      else resolve(performance.now() - t0);
    });
  });
}

/**
 * Both records figures.
 *
 * @example
 * ```ts
 * const f = await measureRecords({ dir, mb: 64, runs: 5, signal });
 * f.decodePerSec.median; // records/s
 * ```
 */
export async function measureRecords(o: {
  dir: string;
  mb: number;
  runs: number;
  signal: AbortSignal;
}): Promise<RecordsFigures> {
  const bytes = tuple3Records(500_000);
  decodeAll(bytes); // warm-up: JIT-compiles the decoder before it is timed
  const rates: number[] = [];
  let decoded = 0;
  for (let run = 0; run < o.runs; run++) {
    const t0 = performance.now();
    decoded = decodeAll(bytes);
    rates.push(decoded / ((performance.now() - t0) / 1000));
  }
  const { checkpoint, records } = await recordsCheckpoint(o.dir, o.mb);
  const out = join(o.dir, 'records-recover-out');
  const spillRoot = join(o.dir, 'spill');
  const select = ['--operator', BENCH_OPERATOR, '--subtask', '0'];
  const recordsSide = (): Promise<number> =>
    timedCli(['flink', 'records', checkpoint, ...select], o.signal);
  const recoverSide = async (): Promise<number> => {
    const ms = await timedCli(
      ['recover', checkpoint, ...select, '--out', out, '--spill-root', spillRoot],
      o.signal,
    );
    await rm(out, { recursive: true, force: true });
    return ms;
  };
  try {
    await recordsSide();
    await recoverSide();
    const ratios: number[] = [];
    const rMs: number[] = [];
    const cMs: number[] = [];
    for (let run = 0; run < o.runs; run++) {
      if (o.signal.aborted) throw o.signal.reason;
      let r: number;
      let c: number;
      if (run % 2 === 0) {
        r = await recordsSide();
        c = await recoverSide();
      } else {
        c = await recoverSide();
        r = await recordsSide();
      }
      ratios.push(r / c);
      rMs.push(r);
      cMs.push(c);
    }
    const r3 = (s: Spread): Spread => ({
      median: round(s.median, 3),
      min: round(s.min, 3),
      max: round(s.max, 3),
    });
    const r0 = (s: Spread): Spread => ({
      median: round(s.median, 0),
      min: round(s.min, 0),
      max: round(s.max, 0),
    });
    return {
      decodePerSec: r0(spread(rates)),
      decodedRecords: decoded,
      recordsVsRecover: r3(spread(ratios)),
      recordsMs: r0(spread(rMs)),
      recoverMs: r0(spread(cMs)),
      checkpointMiB: o.mb,
      checkpointRecords: records,
    };
  } finally {
    await rm(join(o.dir, 'records-flink'), { recursive: true, force: true });
    await rm(out, { recursive: true, force: true });
  }
}
