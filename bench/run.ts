/**
 * `spillway bench`: measures Spillway against raw I/O on the same dir with the same bytes, in
 * one run, as ratios (this machine is noisy: absolute times mean little, side-by-side ratios
 * do). Makes its own data in a fresh temp dir and deletes all of it, whatever happens.
 *
 * - spillVsRawWrite: raw 1 MiB copy of the checkpoint ÷ fetch stage (checkpoint → spill files)
 * - drainVsRawRead: raw 1 MiB reads of those spill files ÷ drain into discarding consumers
 * - recoverVsPlain: plain async fetch + drain (same services, no XState) ÷ full recovery
 * - cancelCleanupP99Ms: cancel → task dir gone, p99 over random cancel moments
 * - peakRssMiBAt2GiB: peak RSS of a child process recovering a 2 GiB checkpoint
 * - filteringVsSpilling: fetch stage spilling without filtering ÷ with the filtering handler
 *   (rescale 0/2), on the same SPWC v2 file (bench/rescale.ts)
 *
 * Each ratio is the median of `runs` runs whose two sides alternate in order (A B, B A, …), so
 * neither side always gets the warmer cache or the quieter disk.
 */
import { mkdir, mkdtemp, open, rm, statfs } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { makeCheckpoint, type MadeCheckpoint } from '../src/services/checkpoint/generator.ts';
import type { SpillLimits } from '../src/services/spill/limits.ts';
import { SpillRoot } from '../src/services/spill-root/spill-root.ts';
import { measureCancel, type CancelFigures } from './cancel.ts';
import { rawCopy, rawRead } from './raw-io.ts';
import { measurePeakRss, type RssFigures } from './rss.ts';
import { measureRemote, type RemoteFigures } from './remote.ts';
import { fullRecover, plainRecover, timeDrain, timeFetch } from './stages.ts';
import { measureFiltering, type FilteringFigures } from './rescale.ts';
import { round, spread, type Spread } from './stats.ts';

const MIB = 1024 * 1024;

/** What one bench run measures, and how big. */
export interface BenchOptions {
  /** Alternating runs per ratio (≥ 5 for a real figure). */
  runs: number;
  /** Payload of the checkpoint the ratios are measured on, MiB. */
  mb: number;
  /** Payload of the checkpoint the RSS child recovers, MiB (2048 for `peakRssMiBAt2GiB`). */
  rssMb: number;
  /** Cancellations timed for `cancelCleanupP99Ms`. */
  cancels: number;
  /** Payload of each cancelled recovery's checkpoint, MiB. */
  cancelMb: number;
  /** Spill file bound of the cancelled recoveries (small, so each spills ~64 files). */
  cancelSpillFileBytes: number;
  seed: number;
  /** Parent of the bench's own temp dir (the OS temp dir by default). */
  tmpRoot: string;
  /** Interrupts the bench between steps; the temp dir is still removed. */
  signal: AbortSignal;
  /** Progress for humans: fraction done and what runs now. */
  progress?: (fraction: number, text: string) => void;
}

/** The full run: what `npm run bench` measures. Takes about 1–2 minutes here. */
export const FULL: Omit<BenchOptions, 'tmpRoot' | 'signal' | 'progress'> = {
  runs: 7,
  mb: 256,
  rssMb: 2048,
  cancels: 50,
  cancelMb: 16,
  cancelSpillFileBytes: 160 * 1024,
  seed: 20240601,
};

/** A seconds-long smoke run (tests): same code paths, tiny sizes, one run. */
export const QUICK: Omit<BenchOptions, 'tmpRoot' | 'signal' | 'progress'> = {
  runs: 1,
  mb: 4,
  rssMb: 8,
  cancels: 3,
  cancelMb: 2,
  cancelSpillFileBytes: 32 * 1024,
  seed: 20240601,
};

/** The six figures, under exactly these names (`--json` prints this object). */
export interface BenchResult {
  spillVsRawWrite: Spread;
  drainVsRawRead: Spread;
  recoverVsPlain: Spread;
  cancelCleanupP99Ms: number;
  peakRssMiBAt2GiB: number;
  filteringVsSpilling: Spread;
}

/** Everything behind the six figures, for the human report. */
export interface BenchDetails {
  options: Omit<BenchOptions, 'signal' | 'progress'>;
  checkpoint: { payloadMiB: number; fileMiB: number; entries: number; channels: number };
  /** Medians over the runs, MiB/s of checkpoint payload (spill files for reads). */
  throughput: {
    rawCopy: Spread;
    fetch: Spread;
    rawRead: Spread;
    drain: Spread;
    crc32: Spread;
    plain: Spread;
    full: Spread;
  };
  spillFiles: number;
  cancel: CancelFigures;
  rss: RssFigures;
  filtering: FilteringFigures;
  /** s3:// read vs a plain ranged GET through the same local S3 server (bench/remote.ts). */
  remote: RemoteFigures;
  /** Full recovery − plain fetch + drain, ms per run: what the orchestration costs. */
  orchestrationMs: Spread;
  durationMs: number;
  /** 1-minute load average at the start and the end: how noisy the machine was. */
  load: [number, number];
  /** Every run's ratios, in run order. */
  runs: { spillVsRawWrite: number[]; drainVsRawRead: number[]; recoverVsPlain: number[] };
}

/** Target of each figure (the definition of done). */
export const TARGETS: Record<keyof BenchResult, { op: '≥' | '≤'; value: number }> = {
  spillVsRawWrite: { op: '≥', value: 0.9 },
  drainVsRawRead: { op: '≥', value: 0.8 },
  recoverVsPlain: { op: '≥', value: 0.9 },
  cancelCleanupP99Ms: { op: '≤', value: 20 },
  peakRssMiBAt2GiB: { op: '≤', value: 150 },
  filteringVsSpilling: { op: '≥', value: 0.7 },
};

/** Free bytes the run needs at its peak (the RSS phase: checkpoint + its spill files). */
export function bytesNeeded(o: Pick<BenchOptions, 'mb' | 'rssMb' | 'cancelMb'>): number {
  const ratioPhase = 3 * o.mb + 2 * o.cancelMb;
  const rssPhase = 2 * o.rssMb;
  return Math.ceil((Math.max(ratioPhase, rssPhase) * 1.05 + 64) * MIB);
}

/** Thrown when the temp dir's file system has too little free space for the run. */
export class NotEnoughSpaceError extends Error {}

/**
 * Flushes a freshly made checkpoint to disk, so the measurements start without the
 * generator's dirty pages: once too many are dirty the kernel throttles every writer, and
 * whichever side of a ratio ran into that would lose by it.
 */
async function syncToDisk(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** crc32 over `bytes` of data in 1 MiB pieces: the checksum floor of fetch and drain. */
function timeCrc(bytes: number): number {
  const buf = Buffer.alloc(MIB, 0x5a);
  const t0 = performance.now();
  let c = 0;
  for (let done = 0; done < bytes; done += MIB) c = crc32(buf, c);
  const ms = performance.now() - t0;
  if (c === 0.5) throw new Error('unreachable'); // keeps the loop from being optimised away
  return ms;
}

/**
 * Runs the whole bench and removes its temp dir afterwards, on success, failure or interrupt.
 *
 * @example
 * ```ts
 * const { result } = await runBench({ ...FULL, tmpRoot: tmpdir(), signal });
 * console.log(result.spillVsRawWrite.median);
 * ```
 */
export async function runBench(
  options: BenchOptions,
): Promise<{ result: BenchResult; details: BenchDetails }> {
  const started = performance.now();
  const loadAtStart = loadavg()[0]!;
  const { signal } = options;
  const progress = options.progress ?? (() => undefined);
  const checkAbort = () => {
    if (signal.aborted) throw signal.reason;
  };

  const fs = await statfs(options.tmpRoot);
  const free = fs.bavail * fs.bsize;
  const need = bytesNeeded(options);
  if (free < need) {
    throw new NotEnoughSpaceError(
      `${options.tmpRoot}: ${(free / MIB).toFixed(0)} MiB free, the bench needs ` +
        `${(need / MIB).toFixed(0)} MiB (set TMPDIR to a roomier file system)`,
    );
  }

  const dir = await mkdtemp(join(options.tmpRoot, 'spillway-bench-'));
  const spillRootPath = join(dir, 'spill');
  let root: SpillRoot | undefined;
  try {
    await mkdir(spillRootPath, { mode: 0o700 });
    root = await SpillRoot.open(spillRootPath);
    const limits: SpillLimits = {};

    progress(0, `making a ${options.mb} MiB checkpoint`);
    const made = await makeCheckpoint({
      out: join(dir, 'ratio.spwc'),
      mb: options.mb,
      seed: options.seed,
    });
    const small = await makeCheckpoint({
      out: join(dir, 'cancel.spwc'),
      mb: options.cancelMb,
      seed: options.seed + 1,
    });
    await syncToDisk(made.path);
    await syncToDisk(small.path);
    checkAbort();

    // Warm-up: JIT-compile both sides' hot paths before anything is timed.
    progress(0.05, 'warming up');
    {
      const { result } = await timeFetch(small.path, join(dir, 'warm'), limits);
      await rawRead(result.state.files);
      await timeDrain(result.state, limits);
      await result.state.release();
      await rawCopy(small.path, join(dir, 'warm.bin'));
      await rm(join(dir, 'warm.bin'));
      await plainRecover(small.path, root, 'bench-warm', limits);
      await fullRecover(small.path, spillRootPath, 'bench-warm', limits);
    }

    const ratios = await measureRatios(made, dir, root, spillRootPath, limits, options, progress);
    checkAbort();
    progress(0.5, 'filtering vs spilling (rescale)');
    const filtering = await measureFiltering({
      dir,
      mb: options.mb / 4,
      runs: options.runs,
      seed: options.seed,
      signal,
    });
    progress(0.5, 'reading it from a local S3 server');
    const remote = await measureRemote({ checkpoint: made.path, dir, runs: options.runs, signal });
    checkAbort();

    progress(0.55, `cancelling ${options.cancels} recoveries`);
    const cancel = await measureCancel({
      checkpoint: small.path,
      spillRoot: spillRootPath,
      ownerDir: root.ownerDir,
      count: options.cancels,
      limits: { ...limits, maxSpillFileBytes: options.cancelSpillFileBytes },
      seed: options.seed,
      signal,
    });
    // The RSS phase needs the room: the ratio data is done with.
    await rm(made.path);
    await rm(small.path);
    checkAbort();

    progress(0.65, `making a ${options.rssMb} MiB checkpoint`);
    const big = await makeCheckpoint({
      out: join(dir, 'rss.spwc'),
      mb: options.rssMb,
      seed: options.seed + 2,
    });
    await syncToDisk(big.path);
    checkAbort();
    progress(0.85, `recovering ${options.rssMb} MiB in a child process`);
    const rss = await measurePeakRss(big.path, spillRootPath, signal);
    await rm(big.path);

    const result: BenchResult = {
      spillVsRawWrite: ratios.spillVsRawWrite,
      drainVsRawRead: ratios.drainVsRawRead,
      recoverVsPlain: ratios.recoverVsPlain,
      cancelCleanupP99Ms: round(cancel.p99Ms, 2),
      peakRssMiBAt2GiB: round(rss.peakMiB, 1),
      filteringVsSpilling: filtering.ratio,
    };
    progress(1, 'done');
    const { signal: _s, progress: _p, ...shownOptions } = options;
    return {
      result,
      details: {
        options: shownOptions,
        checkpoint: {
          payloadMiB: made.payloadBytes / MIB,
          fileMiB: round(made.fileBytes / MIB, 1),
          entries: made.entries,
          channels: made.channels.length,
        },
        throughput: ratios.throughput,
        spillFiles: ratios.spillFiles,
        orchestrationMs: ratios.orchestrationMs,
        cancel,
        rss,
        filtering,
        remote,
        durationMs: Math.round(performance.now() - started),
        load: [round(loadAtStart, 1), round(loadavg()[0]!, 1)],
        runs: ratios.runs,
      },
    };
  } finally {
    await root?.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}

async function measureRatios(
  made: MadeCheckpoint,
  dir: string,
  root: SpillRoot,
  spillRootPath: string,
  limits: SpillLimits,
  options: BenchOptions,
  progress: (fraction: number, text: string) => void,
) {
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
    if (run % 2 === 0) {
      const ra = await a();
      return [ra, await b()];
    }
    const rb = await b();
    return [await a(), rb];
  }

  for (let run = 0; run < options.runs; run++) {
    if (options.signal.aborted) throw options.signal.reason;
    const base = 0.1 + (0.45 * run) / options.runs;
    progress(base, `run ${run + 1}/${options.runs}: spill vs raw write`);
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
      progress(base + 0.15 / options.runs, `run ${run + 1}/${options.runs}: drain vs raw read`);
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

    progress(base + 0.3 / options.runs, `run ${run + 1}/${options.runs}: plain vs full recovery`);
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
