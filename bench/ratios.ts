/**
 * The three ratios of `spillway bench`, side by side in one run on one directory: the fetch
 * stage against a raw copy, the drain against raw reads, the full recovery against a plain
 * async one. Runs alternate sides (A B, B A, …), so neither side always inherits the other's
 * dirty pages. Nothing is synced before a timed step: a user's run never syncs first.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { MadeCheckpoint } from '../src/services/checkpoint/generator.ts';
import { crc32 } from '../src/services/crc32.ts';
import type { SpillLimits } from '../src/services/spill/limits.ts';
import type { SpillRoot } from '../src/services/spill-root/spill-root.ts';
import { rawCopy, rawRead } from './raw-io.ts';
import { fullRecover, plainRecover, timeDrain, timeFetch } from './stages.ts';
import { round, spread, type Spread } from './stats.ts';

const MIB = 1024 * 1024;

/**
 * The product's CRC-32 (`@node-rs/crc32`, what fetch and drain run) over `bytes` of data in
 * 1 MiB pieces: the checksum floor of both.
 */
export function timeCrc(bytes: number): number {
  const buf = Buffer.alloc(MIB, 0x5a);
  const t0 = performance.now();
  let c = 0;
  for (let done = 0; done < bytes; done += MIB) c = crc32(buf, c);
  const ms = performance.now() - t0;
  if (c === 0.5) throw new Error('unreachable'); // keeps the loop from being optimised away
  return ms;
}

/** The three ratios and what is behind them. */
export interface RatioFigures {
  spillVsRawWrite: Spread;
  drainVsRawRead: Spread;
  recoverVsPlain: Spread;
  throughput: Record<
    'rawCopy' | 'fetch' | 'rawRead' | 'drain' | 'crc32' | 'plain' | 'full',
    Spread
  >;
  orchestrationMs: Spread;
  spillFiles: number;
  runs: { spillVsRawWrite: number[]; drainVsRawRead: number[]; recoverVsPlain: number[] };
}

/**
 * Measures the three ratios over `runs` alternating runs on `made`, in `dir`.
 *
 * @example
 * ```ts
 * const r = await measureRatios(made, dir, root, spillRootPath, {}, 7, signal, progress);
 * ```
 */
export async function measureRatios(
  made: MadeCheckpoint,
  dir: string,
  root: SpillRoot,
  spillRootPath: string,
  limits: SpillLimits,
  runs: number,
  signal: AbortSignal,
  progress: (fraction: number, text: string) => void,
): Promise<RatioFigures> {
  const spill: number[] = [];
  const drain: number[] = [];
  const recover: number[] = [];
  const t = {
    rawCopy: [] as number[],
    fetch: [] as number[],
    rawRead: [] as number[],
    drain: [] as number[],
    crc32: [] as number[],
    plain: [] as number[],
    full: [] as number[],
  };
  const overhead: number[] = [];
  let spillFiles = 0;
  const mibs = made.payloadBytes / MIB;
  const rate = (ms: number) => round((mibs / ms) * 1000, 0);

  /** Runs both sides, `a` first on even runs and `b` first on odd ones. */
  async function pair<A, B>(
    run: number,
    a: () => Promise<A>,
    b: () => Promise<B>,
  ): Promise<[A, B]> {
    const first = run % 2 === 0 ? a : b;
    const r1 = await first();
    if (run % 2 === 0) return [r1 as A, await b()];
    return [await a(), r1 as B];
  }

  for (let run = 0; run < runs; run++) {
    if (signal.aborted) throw signal.reason;
    const base = 0.1 + (0.45 * run) / runs;
    progress(base, `run ${run + 1}/${runs}: spill vs raw write`);
    const copyPath = join(dir, `raw-copy-${run}.bin`);
    const [copyMs, fetched] = await pair(
      run,
      async () => {
        const t0 = performance.now();
        await rawCopy(made.path, copyPath);
        const ms = performance.now() - t0;
        await rm(copyPath);
        return ms;
      },
      () => timeFetch(made.path, join(dir, `fetch-${run}`), limits),
    );
    const state = fetched.result.state;
    spillFiles = state.files.length;
    try {
      progress(base + 0.15 / runs, `run ${run + 1}/${runs}: drain vs raw read`);
      const [readMs, drained] = await pair(
        run,
        async () => {
          const t0 = performance.now();
          await rawRead(state.files);
          return performance.now() - t0;
        },
        () => timeDrain(state, limits),
      );
      if (drained.report.bytes !== made.payloadBytes) {
        throw new Error(`drain delivered ${drained.report.bytes} of ${made.payloadBytes} bytes`);
      }
      spill.push(copyMs / fetched.ms);
      drain.push(readMs / drained.ms);
      t.rawCopy.push(rate(copyMs));
      t.fetch.push(rate(fetched.ms));
      t.rawRead.push(rate(readMs));
      t.drain.push(rate(drained.ms));
      t.crc32.push(rate(timeCrc(made.payloadBytes)));
    } finally {
      await state.release(); // the hand-off grant: deletes the spill files
    }

    progress(base + 0.3 / runs, `run ${run + 1}/${runs}: plain vs full recovery`);
    const [plain, full] = await pair(
      run,
      () => plainRecover(made.path, root, `bench-plain-${run}`, limits),
      () => fullRecover(made.path, spillRootPath, `bench-full-${run}`, limits),
    );
    if (plain.bytes !== made.payloadBytes || full.bytes !== made.payloadBytes) {
      throw new Error(`recovery delivered ${plain.bytes}/${full.bytes} of ${made.payloadBytes}`);
    }
    recover.push(plain.ms / full.ms);
    overhead.push(full.ms - plain.ms);
    t.plain.push(rate(plain.ms));
    t.full.push(rate(full.ms));
  }

  const r = (xs: number[]) => {
    const s = spread(xs);
    return { median: round(s.median, 3), min: round(s.min, 3), max: round(s.max, 3) };
  };
  return {
    spillVsRawWrite: r(spill),
    drainVsRawRead: r(drain),
    recoverVsPlain: r(recover),
    throughput: {
      rawCopy: spread(t.rawCopy),
      fetch: spread(t.fetch),
      rawRead: spread(t.rawRead),
      drain: spread(t.drain),
      crc32: spread(t.crc32),
      plain: spread(t.plain),
      full: spread(t.full),
    },
    orchestrationMs: r(overhead),
    spillFiles,
    runs: {
      spillVsRawWrite: spill.map((x) => round(x, 3)),
      drainVsRawRead: drain.map((x) => round(x, 3)),
      recoverVsPlain: recover.map((x) => round(x, 3)),
    },
  };
}
