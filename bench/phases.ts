/**
 * The phases of one `spillway bench` run, in the order they run (bench/run.ts runs them under
 * one free-space check and one try/finally that deletes everything). Each phase's measuring
 * lives in its own module; this file only orders them, hands each its data and deletes that
 * data before the next phase needs the room.
 */
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { makeCheckpoint, type MadeCheckpoint } from '../src/services/formats/spwc/generator.ts';
import type { SpillLimits } from '../src/services/spill/limits.ts';
import type { SpillRoot } from '../src/services/spill-root/spill-root.ts';
import { measureCancel, type CancelFigures } from './cancel.ts';
import { measureEndToEnd } from './e2e.ts';
import { measureFlinkVsSpwcApart } from './flink.ts';
import { measureJvmPeer } from './jvm-peer.ts';
import { measureGrowth, type GrowthFigures } from './growth.ts';
import { measureRatios } from './ratios.ts';
import { rawCopy, rawRead } from './raw-io.ts';
import { measureRecords } from './records.ts';
import { measureRemote } from './remote.ts';
import { measureFiltering } from './rescale.ts';
import type { BenchOptions, OrSkipped } from './options.ts';
import type { Figures, PeerFigures } from './result.ts';
import { measurePeakRss, type RssFigures } from './rss.ts';
import { fullRecover, plainRecover, timeDrain, timeFetch } from './stages.ts';
import { measureStartup } from './startup.ts';
import { onTmpfs, onTmpfsChannels, onTmpfsEndToEnd } from './tmpfs-phases.ts';

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
  await rawRead(result.state.files, true);
  await timeDrain(result.state, limits);
  await result.state.release();
  await rawCopy(small.path, join(dir, 'warm.bin'));
  await rm(join(dir, 'warm.bin'));
  await rawCopy(small.path, join(dir, 'warm.bin'), true);
  await rm(join(dir, 'warm.bin'));
  await plainRecover(small.path, root, 'bench-warm', limits);
  await fullRecover(small.path, spillRootPath, 'bench-warm', limits);
}

/**
 * The phases of one run, one method each, in the order they run: the ratios on one checkpoint
 * (disk, tmpfs, then what reads the same data: cancel, filtering, Flink, remote), the
 * end-to-end pairs, the peak RSS, growth. Each phase deletes its data before the next one
 * needs the room.
 */
export class BenchPhases {
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
    const peer = await this.peerPhase();
    this.checkAbort();
    const rss = await this.rssPhase();
    const growth = await this.growthPhase();
    this.progress(1, 'done');
    return { ...ratios, ...endToEnd, peer, rss, growth };
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
    const flink = await measureFlinkVsSpwcApart({ dir, mb: options.mb / 4, runs, seed, signal });
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

  /**
   * Spillway against the JVM reading the same real Flink checkpoint with Flink's own classes
   * (`recoverAllVsJvm`, `lsVsJvm`): its own module registers here.
   */
  private async peerPhase(): Promise<OrSkipped<PeerFigures>> {
    const { dir, options } = this;
    this.progress(0.62, 'Spillway vs the JVM on a real Flink checkpoint');
    return measureJvmPeer({ dir, minMiB: options.mb, pairs: options.runs, signal: options.signal });
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
