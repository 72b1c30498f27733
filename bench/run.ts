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
 * - flinkVsSpwc: fetch stage reading an SPWC file ÷ reading a Flink checkpoint of the same bytes
 * - tuple3DecodeMPerSec, flinkRecordsVsRecover: Flink records decoded, `flink records` vs `recover`
 *
 * Each ratio is the median of `runs` runs whose two sides alternate in order (A B, B A, …), so
 * neither side always gets the warmer cache or the quieter disk, and each is measured twice:
 * on the temp dir (disk-bound: what a user sees) and on a tmpfs (the code's own cost), where
 * mounting one is allowed. Besides: `recover` through the CLI against `dd`, the CLI's start-up
 * against bare node, and with `growth` how cost grows (growth.ts).
 *
 * One file on purpose: the phases (`BenchPhases`, one method each) run in one order under one
 * free-space check and one try/finally that deletes everything; each phase's measuring lives in
 * its own module.
 */
import { copyFile, mkdir, mkdtemp, open, rm, statfs } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { makeCheckpoint, type MadeCheckpoint } from '../src/services/formats/spwc/generator.ts';
import type { SpillLimits } from '../src/services/spill/limits.ts';
import { SpillRoot } from '../src/services/spill-root/spill-root.ts';
import { measureCancel, type CancelFigures } from './cancel.ts';
import { measureChannels, type ChannelFigures } from './channels.ts';
import { measureEndToEnd, type EndToEndFigures } from './e2e.ts';
import { mountTmpfs } from './floors.ts';
import { measureGrowth, type GrowthFigures, type GrowthOptions } from './growth.ts';
import { measureRatios, type RatioFigures } from './ratios.ts';
import { rawCopy, rawRead } from './raw-io.ts';
import { measureRemote, type RemoteFigures } from './remote.ts';
import { measureFiltering, type FilteringFigures } from './rescale.ts';
import { measureFlinkVsSpwc, type FlinkFigures } from './flink.ts';
import { measureRecords, type RecordsFigures } from './records.ts';
import { measurePeakRss, type RssFigures } from './rss.ts';
import { fullRecover, plainRecover, timeDrain, timeFetch } from './stages.ts';
import { measureStartup, type StartupFigures } from './startup.ts';
import { round, type Spread } from './stats.ts';

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
  /** Payload of the end-to-end checkpoint (32 channels) recovered through the CLI, MiB. */
  e2eMb: number;
  /** Alternating pairs of the end-to-end and start-up figures. */
  e2eRuns: number;
  startupRuns: number;
  /** One-byte channels recovered on a tmpfs against the file-creation floor: [gates, per gate]. */
  channels: [number, number];
  /** Alternating pairs of that figure (each takes seconds at 262,144 channels). */
  channelPairs: number;
  /** Also measure how cost grows (state size, concurrent tasks, channel counts). */
  growth?: GrowthOptions;
  seed: number;
  /** Parent of the bench's own temp dir (the OS temp dir by default). */
  tmpRoot: string;
  /** Interrupts the bench between steps; the temp dir is still removed. */
  signal: AbortSignal;
  /** Progress for humans: fraction done and what runs now. */
  progress?: (fraction: number, text: string) => void;
}

type Preset = Omit<BenchOptions, 'tmpRoot' | 'signal' | 'progress' | 'growth'>;

/** The full run: what `npm run bench` measures. Takes a few minutes here. */
export const FULL: Preset = {
  runs: 7,
  mb: 256,
  rssMb: 2048,
  cancels: 50,
  cancelMb: 16,
  cancelSpillFileBytes: 160 * 1024,
  e2eMb: 1024,
  e2eRuns: 7,
  startupRuns: 11,
  channels: [65536, 4],
  channelPairs: 3,
  seed: 20240601,
};

/** A seconds-long smoke run (tests): same code paths, tiny sizes, one run. */
export const QUICK: Preset = {
  runs: 1,
  mb: 4,
  rssMb: 8,
  cancels: 3,
  cancelMb: 2,
  cancelSpillFileBytes: 32 * 1024,
  e2eMb: 2,
  e2eRuns: 1,
  startupRuns: 1,
  channels: [16, 4],
  channelPairs: 1,
  seed: 20240601,
};

/**
 * The figures `--json` prints: the first five under the names they always had, then the new
 * ones. Each ratio is {median, min, max}; a tmpfs ratio is null where no tmpfs could be
 * mounted (the details say why).
 */
export interface BenchResult {
  spillVsRawWrite: Spread;
  drainVsRawRead: Spread;
  recoverVsPlain: Spread;
  cancelCleanupP99Ms: number;
  peakRssMiBAt2GiB: number;
  spillVsRawWriteTmpfs: Spread | null;
  drainVsRawReadTmpfs: Spread | null;
  recoverVsPlainTmpfs: Spread | null;
  /**
   * `spillway recover` (1 GiB, 32 channels, through the CLI) ÷ the `dd bs=1M` floor, on the
   * temp dir, nothing synced before either side.
   */
  e2eRecoverVsDd: Spread;
  /** `spillway --help` ÷ `node -e ''`, wall time. */
  startupVsNode: Spread;
  /** Fetch spilling verbatim ÷ fetch through the filtering handler, same v2 bytes (rescale). */
  filteringVsSpilling: Spread;
  /** Fetch of an SPWC file ÷ fetch of a Flink checkpoint holding the same bytes. */
  flinkVsSpwc: Spread;
  /** e2eRecoverVsDd with checkpoint, spill root and outputs on a tmpfs (the code's own cost). */
  e2eRecoverVsDdTmpfs: Spread | null;
  /** `node -e "import('spillway')"` ÷ `node -e ''`, wall time. */
  importVsNode: Spread;
  /**
   * `spillway recover` of 262,144 one-byte channels on a tmpfs ÷ creating as many one-byte
   * files with a synchronous open/write/close loop (the floor), and the recovery's peak RSS.
   */
  channelsVsFloorTmpfs: Spread | null;
  channelsPeakRssMiB: number | null;
  /** Million `Tuple3<Long, Integer, String>` records decoded per second, one core (bench/records.ts). */
  tuple3DecodeMPerSec: Spread;
  /** `flink records` (no --type, to /dev/null) ÷ `recover --out` of the same Flink checkpoint. */
  flinkRecordsVsRecover: Spread;
}

/** Everything behind the figures, for the human report. */
export interface BenchDetails {
  options: Omit<BenchOptions, 'signal' | 'progress'>;
  checkpoint: { payloadMiB: number; fileMiB: number; entries: number; channels: number };
  disk: RatioFigures;
  tmpfs: RatioFigures | { skipped: string };
  cancel: CancelFigures;
  rss: RssFigures;
  e2e: EndToEndFigures;
  e2eTmpfs: EndToEndFigures | { skipped: string };
  channels: ChannelFigures | { skipped: string };
  startup: StartupFigures;
  filtering: FilteringFigures;
  /** Reading a Flink checkpoint vs the same bytes as SPWC (bench/flink.ts). */
  flink: FlinkFigures;
  /** Flink records: decoding and `flink records` vs `recover` (bench/records.ts). */
  records: RecordsFigures;
  /** s3:// read vs a plain ranged GET through the same local S3 server (bench/remote.ts). */
  remote: RemoteFigures;
  growth?: GrowthFigures;
  durationMs: number;
  /** 1-minute load average at the start and the end: how noisy the machine was. */
  load: [number, number];
}

type Goal = { op: '≥' | '≤'; value: number };

/** Target of each figure (the definition of done). */
export const TARGETS: Record<keyof BenchResult, Goal> = {
  spillVsRawWrite: { op: '≥', value: 0.9 },
  drainVsRawRead: { op: '≥', value: 0.8 },
  recoverVsPlain: { op: '≥', value: 0.95 },
  cancelCleanupP99Ms: { op: '≤', value: 20 },
  peakRssMiBAt2GiB: { op: '≤', value: 150 },
  spillVsRawWriteTmpfs: { op: '≥', value: 0.9 },
  drainVsRawReadTmpfs: { op: '≥', value: 0.8 },
  recoverVsPlainTmpfs: { op: '≥', value: 0.95 },
  e2eRecoverVsDd: { op: '≤', value: 1.3 },
  startupVsNode: { op: '≤', value: 1.5 },
  filteringVsSpilling: { op: '≥', value: 0.7 },
  flinkVsSpwc: { op: '≥', value: 0.8 },
  e2eRecoverVsDdTmpfs: { op: '≤', value: 1.5 },
  importVsNode: { op: '≤', value: 1.3 },
  channelsVsFloorTmpfs: { op: '≤', value: 3 },
  channelsPeakRssMiB: { op: '≤', value: 160 },
  tuple3DecodeMPerSec: { op: '≥', value: 1 },
  flinkRecordsVsRecover: { op: '≤', value: 1.5 },
};

/** Free bytes the run needs at its peak on the temp dir. */
export function bytesNeeded(
  o: Pick<BenchOptions, 'mb' | 'rssMb' | 'cancelMb' | 'e2eMb' | 'growth'>,
): number {
  // The checkpoint, its spill files and outputs, and the local S3 server's copy of it.
  const ratioPhase = 4 * o.mb + 2 * o.cancelMb;
  const rssPhase = 2 * o.rssMb;
  const e2ePhase = 3 * o.e2eMb;
  const growthPhase = 2 * Math.max(0, ...(o.growth?.stateMb ?? []));
  return Math.ceil((Math.max(ratioPhase, rssPhase, e2ePhase, growthPhase) * 1.05 + 64) * MIB);
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

/** Runs every side once on a small checkpoint: JIT-compiles the hot paths before timing. */
async function warmUp(
  small: MadeCheckpoint,
  dir: string,
  root: SpillRoot,
  spillRootPath: string,
  limits: SpillLimits,
): Promise<void> {
  const { result } = await timeFetch(small.path, join(dir, 'warm'), limits);
  await rawRead(result.state.files);
  await timeDrain(result.state, limits);
  await result.state.release();
  await rawCopy(small.path, join(dir, 'warm.bin'));
  await rm(join(dir, 'warm.bin'));
  await plainRecover(small.path, root, 'bench-warm', limits);
  await fullRecover(small.path, spillRootPath, 'bench-warm', limits);
}

/**
 * The three ratios again with the whole working set on a tmpfs: the checkpoint copied there,
 * its own spill root. Skipped, with the reason, where no tmpfs can be mounted.
 */
async function onTmpfs(
  made: MadeCheckpoint,
  dir: string,
  options: BenchOptions,
  progress: (fraction: number, text: string) => void,
): Promise<RatioFigures | { skipped: string }> {
  const tmpfs = await mountTmpfs(join(dir, 'tmpfs'), Math.ceil(3.2 * options.mb) + 64);
  if ('reason' in tmpfs) return { skipped: tmpfs.reason };
  let root: SpillRoot | undefined;
  try {
    const spillRootPath = join(tmpfs.path, 'spill');
    await mkdir(spillRootPath, { mode: 0o700 });
    root = await SpillRoot.open(spillRootPath);
    const copy: MadeCheckpoint = { ...made, path: join(tmpfs.path, 'ratio.spwc') };
    await copyFile(made.path, copy.path);
    const at = (f: number, text: string) => progress(0.3 + f * 0.5, `tmpfs: ${text}`);
    return await measureRatios(
      copy,
      tmpfs.path,
      root,
      spillRootPath,
      {},
      options.runs,
      options.signal,
      at,
    );
  } finally {
    await root?.close().catch(() => undefined);
    await tmpfs.unmount();
  }
}

/** The end-to-end pairs again with checkpoint, spill root and outputs on a tmpfs. */
async function onTmpfsEndToEnd(
  checkpoint: string,
  dir: string,
  options: BenchOptions,
): Promise<EndToEndFigures | { skipped: string }> {
  // The checkpoint, then per side a spill copy and an output copy.
  const tmpfs = await mountTmpfs(join(dir, 'tmpfs-e2e'), Math.ceil(3.3 * options.e2eMb) + 64);
  if ('reason' in tmpfs) return { skipped: tmpfs.reason };
  try {
    const copy = join(tmpfs.path, 'e2e.spwc');
    await copyFile(checkpoint, copy);
    return await measureEndToEnd(copy, tmpfs.path, options.e2eRuns, options.signal);
  } finally {
    await tmpfs.unmount();
  }
}

/** Many one-byte channels against the file-creation floor, on a tmpfs. */
async function onTmpfsChannels(
  dir: string,
  options: BenchOptions,
): Promise<ChannelFigures | { skipped: string }> {
  // A one-byte file takes a whole 4 KiB page on a tmpfs: 262,144 of them need 1 GiB.
  const files = options.channels[0] * options.channels[1];
  const tmpfs = await mountTmpfs(
    join(dir, 'tmpfs-channels'),
    Math.ceil((files * 5120) / MIB) + 256,
  );
  if ('reason' in tmpfs) return { skipped: tmpfs.reason };
  try {
    const [gates, perGate] = options.channels;
    return await measureChannels(tmpfs.path, gates, perGate, options.signal, options.channelPairs);
  } finally {
    await tmpfs.unmount();
  }
}

/** Everything one run measured, phase by phase: what the result and the details are made of. */
type Figures = Pick<
  BenchDetails,
  | 'disk'
  | 'tmpfs'
  | 'cancel'
  | 'filtering'
  | 'flink'
  | 'records'
  | 'remote'
  | 'e2e'
  | 'e2eTmpfs'
  | 'channels'
  | 'startup'
  | 'rss'
> & { made: MadeCheckpoint; growth: GrowthFigures | undefined };

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
  await checkFreeSpace(options);
  const dir = await mkdtemp(join(options.tmpRoot, 'spillway-bench-'));
  const spillRootPath = join(dir, 'spill');
  let root: SpillRoot | undefined;
  try {
    await mkdir(spillRootPath, { mode: 0o700 });
    root = await SpillRoot.open(spillRootPath);
    const figures = await new BenchPhases(options, dir, root, spillRootPath).run();
    const details = detailsOf(options, figures, started, loadAtStart);
    return { result: resultOf(figures), details };
  } finally {
    await root?.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}

/** Refuses to start on a file system too small for the run's peak ({@link bytesNeeded}). */
async function checkFreeSpace(options: BenchOptions): Promise<void> {
  const fs = await statfs(options.tmpRoot);
  const free = fs.bavail * fs.bsize;
  const need = bytesNeeded(options);
  if (free < need) {
    throw new NotEnoughSpaceError(
      `${options.tmpRoot}: ${(free / MIB).toFixed(0)} MiB free, the bench needs ` +
        `${(need / MIB).toFixed(0)} MiB (set TMPDIR to a roomier file system)`,
    );
  }
}

/**
 * The phases of one run, one method each, in the order they run: the ratios on one checkpoint
 * (disk, tmpfs, then what reads the same data: cancel, filtering, Flink, remote), the
 * end-to-end pairs, the peak RSS, growth. Each phase deletes its data before the next one
 * needs the room.
 */
class BenchPhases {
  private readonly limits: SpillLimits = {};
  private readonly progress: (fraction: number, text: string) => void;

  constructor(
    private readonly options: BenchOptions,
    private readonly dir: string,
    private readonly root: SpillRoot,
    private readonly spillRootPath: string,
  ) {
    this.progress = options.progress ?? (() => undefined);
  }

  async run(): Promise<Figures> {
    const ratios = await this.ratioPhase();
    const endToEnd = await this.endToEndPhase();
    const rss = await this.rssPhase();
    const growth = await this.growthPhase();
    this.progress(1, 'done');
    return { ...ratios, ...endToEnd, rss, growth };
  }

  private checkAbort(): void {
    if (this.options.signal.aborted) throw this.options.signal.reason;
  }

  /** Progress from `from` over `span` of the bar, for a phase that reports its own fractions. */
  private at(from: number, span: number): (f: number, text: string) => void {
    return (f, text) => this.progress(from + f * span, text);
  }

  /** The ratio checkpoint and the small one (warm-up, cancels), both flushed to disk. */
  private async makeRatioCheckpoints(): Promise<{ made: MadeCheckpoint; small: MadeCheckpoint }> {
    const { dir, options } = this;
    this.progress(0, `making a ${options.mb} MiB checkpoint`);
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
    this.checkAbort();
    return { made, small };
  }

  private async ratioPhase(): Promise<
    Pick<
      Figures,
      'made' | 'disk' | 'tmpfs' | 'cancel' | 'filtering' | 'flink' | 'records' | 'remote'
    >
  > {
    const { dir, root, spillRootPath, limits, options } = this;
    const { made, small } = await this.makeRatioCheckpoints();
    this.progress(0.05, 'warming up');
    await warmUp(small, dir, root, spillRootPath, limits);
    const disk = await measureRatios(
      made,
      dir,
      root,
      spillRootPath,
      limits,
      options.runs,
      options.signal,
      this.at(0, 0.6),
    );
    this.checkAbort();
    const tmpfs = await onTmpfs(made, dir, options, this.at(0, 0.6));
    this.checkAbort();
    const cancel = await this.cancelPhase(small);
    const sameBytes = await this.sameBytesPhase(made);
    this.checkAbort();
    // The later phases need the room: the ratio data is done with.
    await rm(made.path);
    await rm(small.path);
    this.checkAbort();
    return { made, disk, tmpfs, cancel, ...sameBytes };
  }

  private async cancelPhase(small: MadeCheckpoint): Promise<CancelFigures> {
    const { options } = this;
    this.progress(0.45, `cancelling ${options.cancels} recoveries`);
    return measureCancel({
      checkpoint: small.path,
      spillRoot: this.spillRootPath,
      ownerDir: this.root.ownerDir,
      count: options.cancels,
      limits: { ...this.limits, maxSpillFileBytes: options.cancelSpillFileBytes },
      seed: options.seed,
      signal: options.signal,
    });
  }

  /** The same data read other ways: through the filtering handler, as Flink's, from S3. */
  private async sameBytesPhase(
    made: MadeCheckpoint,
  ): Promise<Pick<Figures, 'filtering' | 'flink' | 'records' | 'remote'>> {
    const { dir, options } = this;
    const { runs, seed, signal } = options;
    this.progress(0.47, 'filtering vs spilling (rescale)');
    const filtering = await measureFiltering({ dir, mb: options.mb / 4, runs, seed, signal });
    this.progress(0.475, 'a Flink checkpoint vs the same bytes as SPWC');
    const flink = await measureFlinkVsSpwc({ dir, mb: options.mb / 4, runs, seed, signal });
    this.progress(0.477, 'Flink records: decoding, flink records vs recover');
    const records = await measureRecords({ dir, mb: Math.min(64, options.mb), runs, signal });
    this.progress(0.48, 'reading it from a local S3 server');
    const remote = await measureRemote({ checkpoint: made.path, dir, runs, signal });
    return { filtering, flink, records, remote };
  }

  private async endToEndPhase(): Promise<
    Pick<Figures, 'e2e' | 'e2eTmpfs' | 'channels' | 'startup'>
  > {
    const { dir, options } = this;
    this.progress(0.5, `recover ${options.e2eMb} MiB through the CLI vs dd`);
    const e2eCheckpoint = await makeCheckpoint({
      out: join(dir, 'e2e.spwc'),
      mb: options.e2eMb,
      gates: 8,
      channels: 4,
      seed: options.seed + 3,
    });
    await syncToDisk(e2eCheckpoint.path);
    const e2e = await measureEndToEnd(e2eCheckpoint.path, dir, options.e2eRuns, options.signal);
    this.progress(0.55, `recover ${options.e2eMb} MiB through the CLI vs dd, on a tmpfs`);
    const e2eTmpfs = await onTmpfsEndToEnd(e2eCheckpoint.path, dir, options);
    await rm(e2eCheckpoint.path);
    this.progress(
      0.58,
      `${options.channels[0] * options.channels[1]} one-byte channels on a tmpfs`,
    );
    const channels = await onTmpfsChannels(dir, options);
    this.progress(0.6, 'CLI start-up vs bare node');
    const startup = await measureStartup(options.startupRuns, options.signal);
    this.checkAbort();
    return { e2e, e2eTmpfs, channels, startup };
  }

  private async rssPhase(): Promise<RssFigures> {
    const { dir, options } = this;
    this.progress(0.65, `making a ${options.rssMb} MiB checkpoint`);
    const big = await makeCheckpoint({
      out: join(dir, 'rss.spwc'),
      mb: options.rssMb,
      seed: options.seed + 2,
    });
    await syncToDisk(big.path);
    this.checkAbort();
    this.progress(0.7, `recovering ${options.rssMb} MiB in a child process`);
    const rss = await measurePeakRss(big.path, this.spillRootPath, options.signal);
    await rm(big.path);
    return rss;
  }

  private async growthPhase(): Promise<GrowthFigures | undefined> {
    const { growth, signal } = this.options;
    if (growth === undefined) return undefined;
    return measureGrowth(this.dir, this.spillRootPath, growth, signal, this.at(0.75, 0.25));
  }
}

/** A spread rounded to 3 places, as the JSON shows it. */
function r3(s: Spread): Spread {
  return { median: round(s.median, 3), min: round(s.min, 3), max: round(s.max, 3) };
}

/** The figures `--json` prints, from what the phases measured. */
function resultOf(f: Figures): BenchResult {
  const { disk, tmpfs, e2eTmpfs, channels } = f;
  const onT = (pick: (r: RatioFigures) => Spread) => ('skipped' in tmpfs ? null : pick(tmpfs));
  return {
    spillVsRawWrite: disk.spillVsRawWrite,
    drainVsRawRead: disk.drainVsRawRead,
    recoverVsPlain: disk.recoverVsPlain,
    cancelCleanupP99Ms: round(f.cancel.p99Ms, 2),
    peakRssMiBAt2GiB: round(f.rss.peakMiB, 1),
    spillVsRawWriteTmpfs: onT((r) => r.spillVsRawWrite),
    drainVsRawReadTmpfs: onT((r) => r.drainVsRawRead),
    recoverVsPlainTmpfs: onT((r) => r.recoverVsPlain),
    e2eRecoverVsDd: r3(f.e2e.ratio),
    startupVsNode: r3(f.startup.timeRatio),
    filteringVsSpilling: f.filtering.ratio,
    flinkVsSpwc: f.flink.ratio,
    e2eRecoverVsDdTmpfs: 'skipped' in e2eTmpfs ? null : r3(e2eTmpfs.ratio),
    importVsNode: r3(f.startup.importRatio),
    channelsVsFloorTmpfs:
      'skipped' in channels
        ? null
        : { median: channels.vsFloor, min: channels.vsFloorMin, max: channels.vsFloorMax },
    channelsPeakRssMiB: 'skipped' in channels ? null : channels.peakRssMiB,
    tuple3DecodeMPerSec: {
      median: round(f.records.decodePerSec.median / 1e6, 3),
      min: round(f.records.decodePerSec.min / 1e6, 3),
      max: round(f.records.decodePerSec.max / 1e6, 3),
    },
    flinkRecordsVsRecover: f.records.recordsVsRecover,
  };
}

/** Everything behind the figures, for the human report. */
function detailsOf(
  options: BenchOptions,
  f: Figures,
  started: number,
  loadAtStart: number,
): BenchDetails {
  const { signal: _s, progress: _p, ...shownOptions } = options;
  const { made, growth } = f;
  return {
    options: shownOptions,
    checkpoint: {
      payloadMiB: made.payloadBytes / MIB,
      fileMiB: round(made.fileBytes / MIB, 1),
      entries: made.entries,
      channels: made.channels.length,
    },
    disk: f.disk,
    tmpfs: f.tmpfs,
    cancel: f.cancel,
    rss: f.rss,
    e2e: f.e2e,
    e2eTmpfs: f.e2eTmpfs,
    channels: f.channels,
    startup: f.startup,
    filtering: f.filtering,
    flink: f.flink,
    records: f.records,
    remote: f.remote,
    ...(growth !== undefined ? { growth } : {}),
    durationMs: Math.round(performance.now() - started),
    load: [round(loadAtStart, 1), round(loadavg()[0]!, 1)],
  };
}
