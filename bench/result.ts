/**
 * What `spillway bench --json` prints, and the goal of each figure (issue 33's names, in its
 * order; the raw-I/O ratios and the older figures after them). A figure whose phase could not
 * run is `null`, and `skipped` says why, under the figure's name.
 */
import type { CancelFigures } from './cancel.ts';
import type { ChannelFigures } from './channels.ts';
import type { EndToEndFigures } from './e2e.ts';
import type { FlinkFigures } from './flink.ts';
import type { GrowthFigures } from './growth.ts';
import type { RatioFigures } from './ratios.ts';
import type { RecordsFigures } from './records.ts';
import type { RemoteFigures } from './remote.ts';
import type { FilteringFigures } from './rescale.ts';
import type { RssFigures } from './rss.ts';
import type { BenchOptions, OrSkipped } from './options.ts';
import type { StartupFigures } from './startup.ts';
import type { TmpfsEndToEnd } from './tmpfs-phases.ts';
import { round, type Spread } from './stats.ts';
import type { MadeCheckpoint } from '../src/services/formats/spwc/generator.ts';

const MIB = 1024 * 1024;

/**
 * The JVM peer phase's figures: `spillway recover --all` and `flink ls` of a real Flink
 * checkpoint against a JVM program doing the same with Flink's own classes, each
 * {median, min, max} of alternating pairs (`recover` ÷ JVM: lower is better).
 */
export interface PeerFigures {
  recoverAllVsJvm: Spread;
  lsVsJvm: Spread;
  /**
   * The floor of a recovery that spills (bench/spill-floor-child.ts) ÷ the JVM extractor: what
   * `recoverAllVsJvm` could be at best while every byte is spilled and checked (G1, G9).
   */
  recoverAllFloorVsJvm: Spread;
  /** `recover --all` ÷ that floor: the product's own cost past the spill's I/O. */
  recoverAllVsFloor: Spread;
  /** The real checkpoint the harness made (bench/jvm-peer.ts). */
  checkpoint: { bytes: number; entries: number; files: number; makeSeconds: number };
  /** Wall times of each side's process, ms. */
  recoverAllMs: Spread;
  jvmExtractMs: Spread;
  recoverAllFloorMs: Spread;
  lsMs: Spread;
  jvmMetadataMs: Spread;
  /** The JVM's own times from `main` (no JVM start-up): extracting all, loading `_metadata`. */
  jvmReadMs: Spread;
  jvmMetadataLoadMs: Spread;
  /** Peak RSS of each side, the largest over its runs, MiB (null without /usr/bin/time). */
  peakRssMiB: {
    recoverAll: number | null;
    jvmExtract: number | null;
    ls: number | null;
    jvmMetadata: number | null;
  };
}

/** The figures `--json` prints. Ratios are {median, min, max} of alternating pairs. */
export interface BenchResult {
  /** `spillway recover --all` of a real ≥ 256 MiB Flink checkpoint ÷ the JVM extractor. */
  recoverAllVsJvm: Spread | null;
  /** `spillway flink ls` ÷ the JVM loading `_metadata`. */
  lsVsJvm: Spread | null;
  /** The `spillway recover` process (defaults) ÷ `dd bs=1M` of the same I/O, on a tmpfs. */
  e2eRecoverVsDdTmpfs: Spread | null;
  /** The same on the temp dir's disk, nothing synced (as a user runs it). */
  e2eRecoverVsDd: Spread;
  /** A copy that CRC-32s every byte (same native CRC as the product) ÷ the fetch stage. */
  spillVsCrcWrite: Spread;
  /** Reads of the spill files that CRC-32 every byte ÷ the drain. */
  drainVsCrcRead: Spread;
  spillVsCrcWriteTmpfs: Spread | null;
  drainVsCrcReadTmpfs: Spread | null;
  /** The raw-I/O ratios beside them: a copy / reads that do not checksum. */
  spillVsRawWrite: Spread;
  drainVsRawRead: Spread;
  spillVsRawWriteTmpfs: Spread | null;
  drainVsRawReadTmpfs: Spread | null;
  /**
   * Beside `recoverAllVsJvm`: the floor of a recovery that spills (the same reads, CRCs and
   * writes in synchronous loops, bench/spill-floor-child.ts) ÷ the JVM extractor — the best
   * `recoverAllVsJvm` any recovery that spills and checks every byte could reach here — and
   * `recover --all` ÷ that floor. No goals of their own.
   */
  recoverAllFloorVsJvm: Spread | null;
  recoverAllVsFloor: Spread | null;
  /** Fetch of an SPWC file ÷ fetch of a Flink checkpoint holding the same bytes. */
  flinkVsSpwc: Spread;
  /** `flink records` (no --type, to /dev/null) ÷ `recover --out` of the same Flink checkpoint. */
  flinkRecordsVsRecover: Spread;
  /** Fetch spilling verbatim ÷ fetch through the filtering handler, same v2 bytes (rescale). */
  filteringVsSpilling: Spread;
  /**
   * The `spillway recover` process of 262,144 one-byte channels on a tmpfs ÷ a process
   * creating as many one-byte files with a synchronous open/write/close loop (the floor).
   */
  channelsVsFloorTmpfs: Spread | null;
  channelsPeakRssMiB: number | null;
  /** Cancel → task dir gone, p99 over random cancel moments (ms). */
  cancelCleanupP99Ms: number;
  /** `node -e "import('spillway')"` ÷ `node -e ''`, wall time. */
  importVsNode: Spread;
  /** `spillway --help` ÷ `node -e ''`, wall time. */
  startupVsNode: Spread;
  /** Plain async fetch + drain (same services, no XState) ÷ full recovery. */
  recoverVsPlain: Spread;
  recoverVsPlainTmpfs: Spread | null;
  /** Peak RSS of a child process recovering a 2 GiB checkpoint (MiB). */
  peakRssMiBAt2GiB: number;
  /** Million `Tuple3<Long, Integer, String>` records decoded per second, one core. */
  tuple3DecodeMPerSec: Spread;
  /** Why each `null` figure is null, by its name. */
  skipped: Record<string, string>;
}

/** A figure's name (every key but `skipped`). */
export type FigureName = Exclude<keyof BenchResult, 'skipped'>;

/** Everything behind the figures, for the human report. */
export interface BenchDetails {
  options: Omit<BenchOptions, 'signal' | 'progress'>;
  checkpoint: { payloadMiB: number; fileMiB: number; entries: number; channels: number };
  disk: RatioFigures;
  tmpfs: OrSkipped<RatioFigures>;
  cancel: CancelFigures;
  rss: RssFigures;
  e2e: EndToEndFigures;
  e2eTmpfs: OrSkipped<TmpfsEndToEnd>;
  channels: OrSkipped<ChannelFigures>;
  startup: StartupFigures;
  filtering: FilteringFigures;
  /** Reading a Flink checkpoint vs the same bytes as SPWC (bench/flink.ts). */
  flink: FlinkFigures;
  /** Flink records: decoding and `flink records` vs `recover` (bench/records.ts). */
  records: RecordsFigures;
  /** s3:// read vs a plain ranged GET through the same local S3 server (bench/remote.ts). */
  remote: RemoteFigures;
  /** Spillway against the JVM reading the same real Flink checkpoint. */
  peer: OrSkipped<PeerFigures>;
  growth?: GrowthFigures;
  durationMs: number;
  /** 1-minute load average at the start and the end: how noisy the machine was. */
  load: [number, number];
}

type Goal = { op: '≥' | '≤'; value: number };

/** Target of each figure (issue 33's goals; the older figures keep theirs). */
export const TARGETS: Partial<Record<FigureName, Goal>> = {
  recoverAllVsJvm: { op: '≤', value: 0.5 },
  lsVsJvm: { op: '≤', value: 0.3 },
  e2eRecoverVsDdTmpfs: { op: '≤', value: 1.3 },
  e2eRecoverVsDd: { op: '≤', value: 1.2 },
  spillVsCrcWrite: { op: '≥', value: 0.9 },
  drainVsCrcRead: { op: '≥', value: 0.9 },
  spillVsCrcWriteTmpfs: { op: '≥', value: 0.9 },
  drainVsCrcReadTmpfs: { op: '≥', value: 0.9 },
  spillVsRawWrite: { op: '≥', value: 0.9 },
  drainVsRawRead: { op: '≥', value: 0.8 },
  spillVsRawWriteTmpfs: { op: '≥', value: 0.9 },
  drainVsRawReadTmpfs: { op: '≥', value: 0.8 },
  flinkVsSpwc: { op: '≥', value: 0.95 },
  flinkRecordsVsRecover: { op: '≤', value: 1.5 },
  filteringVsSpilling: { op: '≥', value: 0.9 },
  channelsVsFloorTmpfs: { op: '≤', value: 2.5 },
  channelsPeakRssMiB: { op: '≤', value: 150 },
  cancelCleanupP99Ms: { op: '≤', value: 20 },
  importVsNode: { op: '≤', value: 1.2 },
  startupVsNode: { op: '≤', value: 1.5 },
  recoverVsPlain: { op: '≥', value: 0.95 },
  recoverVsPlainTmpfs: { op: '≥', value: 0.95 },
  peakRssMiBAt2GiB: { op: '≤', value: 150 },
  tuple3DecodeMPerSec: { op: '≥', value: 1 },
};

/** Everything one run measured, phase by phase: what the result and the details are made of. */
export type Figures = Pick<
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
  | 'peer'
> & { made: MadeCheckpoint; growth: GrowthFigures | undefined };

/** A spread rounded to 3 places, as the JSON shows it. */
function r3(s: Spread): Spread {
  return { median: round(s.median, 3), min: round(s.min, 3), max: round(s.max, 3) };
}

/**
 * The figures `--json` prints, from what the phases measured.
 *
 * @example
 * ```ts
 * const result = resultOf(await new BenchPhases(options, dir, root, spillRootPath).run());
 * ```
 */
export function resultOf(f: Figures): BenchResult {
  const skipped: Record<string, string> = {};
  /** `pick(x)` of a phase that ran; null, with the reason under each name, of one that did not. */
  function of<T, V>(phase: OrSkipped<T>, names: FigureName[], pick: (x: T) => V): V | null {
    if (typeof phase === 'object' && phase !== null && 'skipped' in phase) {
      for (const name of names) skipped[name] = phase.skipped;
      return null;
    }
    return pick(phase as T);
  }
  const { disk, tmpfs, channels, peer } = f;
  const result: Omit<BenchResult, 'skipped'> = {
    recoverAllVsJvm: of(peer, ['recoverAllVsJvm'], (p) => r3(p.recoverAllVsJvm)),
    lsVsJvm: of(peer, ['lsVsJvm'], (p) => r3(p.lsVsJvm)),
    e2eRecoverVsDdTmpfs: of(f.e2eTmpfs, ['e2eRecoverVsDdTmpfs'], (e) => r3(e.ratio)),
    e2eRecoverVsDd: r3(f.e2e.ratio),
    spillVsCrcWrite: disk.spillVsCrcWrite,
    drainVsCrcRead: disk.drainVsCrcRead,
    spillVsCrcWriteTmpfs: of(tmpfs, ['spillVsCrcWriteTmpfs'], (r) => r.spillVsCrcWrite),
    drainVsCrcReadTmpfs: of(tmpfs, ['drainVsCrcReadTmpfs'], (r) => r.drainVsCrcRead),
    spillVsRawWrite: disk.spillVsRawWrite,
    drainVsRawRead: disk.drainVsRawRead,
    spillVsRawWriteTmpfs: of(tmpfs, ['spillVsRawWriteTmpfs'], (r) => r.spillVsRawWrite),
    drainVsRawReadTmpfs: of(tmpfs, ['drainVsRawReadTmpfs'], (r) => r.drainVsRawRead),
    recoverAllFloorVsJvm: of(peer, ['recoverAllFloorVsJvm'], (p) => r3(p.recoverAllFloorVsJvm)),
    recoverAllVsFloor: of(peer, ['recoverAllVsFloor'], (p) => r3(p.recoverAllVsFloor)),
    flinkVsSpwc: f.flink.ratio,
    flinkRecordsVsRecover: f.records.recordsVsRecover,
    filteringVsSpilling: f.filtering.ratio,
    channelsVsFloorTmpfs: of(channels, ['channelsVsFloorTmpfs'], (c) => ({
      median: c.vsFloor,
      min: c.vsFloorMin,
      max: c.vsFloorMax,
    })),
    channelsPeakRssMiB: of(channels, ['channelsPeakRssMiB'], (c) => c.peakRssMiB),
    cancelCleanupP99Ms: round(f.cancel.p99Ms, 2),
    importVsNode: r3(f.startup.importRatio),
    startupVsNode: r3(f.startup.timeRatio),
    recoverVsPlain: disk.recoverVsPlain,
    recoverVsPlainTmpfs: of(tmpfs, ['recoverVsPlainTmpfs'], (r) => r.recoverVsPlain),
    peakRssMiBAt2GiB: round(f.rss.peakMiB, 1),
    tuple3DecodeMPerSec: {
      median: round(f.records.decodePerSec.median / 1e6, 3),
      min: round(f.records.decodePerSec.min / 1e6, 3),
      max: round(f.records.decodePerSec.max / 1e6, 3),
    },
  };
  return { ...result, skipped };
}

/** Everything behind the figures, for the human report. */
export function detailsOf(
  options: BenchOptions,
  f: Figures,
  started: number,
  load: [number, number],
): BenchDetails {
  const { signal: _s, progress: _p, ...shownOptions } = options;
  const { made, growth, ...measured } = f;
  return {
    options: shownOptions,
    checkpoint: {
      payloadMiB: made.payloadBytes / MIB,
      fileMiB: round(made.fileBytes / MIB, 1),
      entries: made.entries,
      channels: made.channels.length,
    },
    ...measured,
    ...(growth !== undefined ? { growth } : {}),
    durationMs: Math.round(performance.now() - started),
    load: [round(load[0], 1), round(load[1], 1)],
  };
}
