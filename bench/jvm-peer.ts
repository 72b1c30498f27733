/**
 * The JVM peer (`recoverAllVsJvm`, `lsVsJvm`): Spillway against what a Flink user would
 * otherwise run — a JVM program reading the checkpoint with Flink's own classes
 * (interop/flink's `PeerExtractor`: `Checkpoints.loadCheckpointMetadata`, the handles'
 * streams, `ChannelStateSerializerImpl`, one file per channel). On a REAL Flink 1.20 checkpoint
 * made here by the harness's MiniCluster job (`PeerJob`: ≥ `minMiB` of in-flight data, retained,
 * unaligned), each side a whole process timed from spawn to exit, in alternating pairs:
 *
 * - `spillway recover CHK --all --out DIR` against `PeerExtractor --out DIR`;
 * - `spillway flink ls CHK` against `PeerExtractor --metadata-only` (loading `_metadata`);
 * - and, in the same rounds, the floor of any recovery that spills (bench/spill-floor-child.ts:
 *   the same reads, CRCs and writes in synchronous loops, nothing else), against both.
 *
 * Each arm's output tree is removed after it, untimed, before the next arm. The two trees are
 * compared byte for byte once (in the untimed warm-up pair) and the phase fails if they differ.
 * Beside the ratios: the JVM's own times measured inside it (from `main`, so without its
 * start-up) and the peak RSS of every side (`/usr/bin/time -f %M`).
 */
import { mkdir, rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import {
  assertSameTrees,
  buildHarness,
  makeRealCheckpoint,
  timedRun,
  whyNoJvm,
  type RealCheckpoint,
  type TimedRun,
} from './jvm-harness.ts';
import type { OrSkipped } from './options.ts';
import type { PeerFigures } from './result.ts';
import { benchModule } from './rss.ts';
import { packageBin } from './startup.ts';
import { round, spread, type Spread } from './stats.ts';

const MIB = 1024 * 1024;

/** How big and how often. */
export interface JvmPeerOptions {
  /** Parent dir; the phase works in `dir/jvm-peer` and removes it. */
  dir: string;
  /** The checkpoint's channel state at least, MiB (256 for the real figure). */
  minMiB: number;
  /** Alternating pairs per ratio (5+ for a real figure). */
  pairs: number;
  signal?: AbortSignal;
}

/** The ratios and everything behind them. */
export interface JvmPeerFigures extends PeerFigures {
  /** The trees of `recover --all` and the JVM held the same files with the same bytes. */
  sameBytes: true;
  pairs: number;
  /** Seconds the phase took, the checkpoint's making included. */
  seconds: number;
  /** 1-minute load average at its start and end. */
  load: [number, number];
}

/** The JVM's own line (interop/flink PeerExtractor). */
interface PeerLine {
  metadataMs: number;
  readMs: number;
  files: number;
  entries: number;
  bytes: number;
}

function peerLine(run: TimedRun): PeerLine {
  const line = run.stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as PeerLine;
}

function maxOf(values: (number | null)[]): number | null {
  const known = values.filter((v): v is number => v !== null);
  return known.length === 0 ? null : round(Math.max(...known), 1);
}

const r1 = (s: Spread): Spread => ({
  median: round(s.median, 1),
  min: round(s.min, 1),
  max: round(s.max, 1),
});

/**
 * Runs the phase, or says why it cannot run here (no java/mvn, no harness).
 *
 * @example
 * ```ts
 * const peer = await measureJvmPeer({ dir, minMiB: 256, pairs: 7 });
 * if (!('skipped' in peer)) console.log(peer.recoverAllVsJvm.median); // goal ≤ 0.5
 * ```
 */
export async function measureJvmPeer(o: JvmPeerOptions): Promise<OrSkipped<JvmPeerFigures>> {
  const why = whyNoJvm();
  if (why !== undefined) return { skipped: why };
  const started = performance.now();
  const loadAtStart = loadavg()[0]!;
  const work = join(o.dir, 'jvm-peer');
  await mkdir(work, { recursive: true });
  try {
    let classpath: string;
    try {
      classpath = await buildHarness();
    } catch (e) {
      return { skipped: `the harness did not build: ${String(e).split('\n')[0]}` };
    }
    o.signal?.throwIfAborted();
    // Small checkpoints (quick runs) need neither the parallelism nor the buffers.
    const shape = o.minMiB >= 64 ? [] : ['--parallelism', '2', '--buffers', '64'];
    const chk = await makeRealCheckpoint(classpath, work, o.minMiB * MIB, shape);
    o.signal?.throwIfAborted();
    const figures = await pairs(chk, classpath, work, o);
    return {
      ...figures,
      seconds: round((performance.now() - started) / 1000, 1),
      load: [round(loadAtStart, 1), round(loadavg()[0]!, 1)],
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function pairs(
  chk: RealCheckpoint,
  classpath: string,
  work: string,
  o: JvmPeerOptions,
): Promise<Omit<JvmPeerFigures, 'seconds' | 'load'>> {
  const spillRoot = join(work, 'spill');
  await mkdir(spillRoot, { mode: 0o700 });
  const rss = join(work, 'rss.txt');
  const node = process.execPath;
  const bin = packageBin();
  const jvm = (args: string[]) =>
    timedRun(
      'java',
      ['-cp', classpath, 'dev.spillway.flink.PeerExtractor', ...args],
      rss,
      o.signal,
    );
  const recoverAll = async (out: string) => {
    const r = await timedRun(
      node,
      [bin, 'recover', chk.path, '--all', '--out', out, '--spill-root', spillRoot],
      rss,
      o.signal,
    );
    return r;
  };
  const jvmExtract = (out: string) => jvm(['--checkpoint', chk.path, '--out', out]);
  const floorModule = benchModule('spill-floor-child');
  const floor = (out: string) =>
    timedRun(node, [...floorModule.loaderArgs, floorModule.path, chk.path, out], rss, o.signal);
  const ls = () => timedRun(node, [bin, 'flink', 'ls', chk.path], rss, o.signal);
  const jvmMetadata = () => jvm(['--checkpoint', chk.path, '--metadata-only']);

  // Untimed warm-up pair (page cache, JIT of neither side counts): and the bytes compared.
  const warmJvm = join(work, 'warm-jvm');
  const warmSpillway = join(work, 'warm-spillway');
  const first = peerLine(await jvmExtract(warmJvm));
  await recoverAll(warmSpillway);
  const files = await assertSameTrees(warmJvm, warmSpillway);
  await rm(warmJvm, { recursive: true, force: true });
  await rm(warmSpillway, { recursive: true, force: true });
  await ls();
  await jvmMetadata();
  // The floor must move at least the channel state's bytes, or it is no floor of this work.
  const floorBytes = (JSON.parse((await floor(warmSpillway)).stdout) as { bytes: number }).bytes;
  await rm(warmSpillway, { recursive: true, force: true });
  if (floorBytes < chk.bytes) {
    throw new Error(`the spill floor moved ${floorBytes} bytes, the channel state is ${chk.bytes}`);
  }

  const side = { recoverAll: [] as TimedRun[], jvm: [] as TimedRun[], floor: [] as TimedRun[] };
  const lsSide = { ls: [] as TimedRun[], jvm: [] as TimedRun[] };
  for (let k = 0; k < o.pairs; k++) {
    o.signal?.throwIfAborted();
    const out = join(work, `out-${k}`);
    // An arm that writes a tree: timed, then its tree removed (untimed) before the next arm.
    const treeArm = (runs: TimedRun[], run: (out: string) => Promise<TimedRun>) => async () => {
      runs.push(await run(out));
      await rm(out, { recursive: true, force: true });
    };
    const jvmArm = treeArm(side.jvm, jvmExtract);
    const spillwayArm = treeArm(side.recoverAll, recoverAll);
    const floorArm = treeArm(side.floor, floor);
    const lsArm = async () => lsSide.ls.push(await ls());
    const metaArm = async () => lsSide.jvm.push(await jvmMetadata());
    if (k % 2 === 0) {
      await jvmArm();
      await spillwayArm();
      await floorArm();
      await metaArm();
      await lsArm();
    } else {
      await floorArm();
      await spillwayArm();
      await jvmArm();
      await lsArm();
      await metaArm();
    }
  }
  const ms = (runs: TimedRun[]) => runs.map((r) => r.ms);
  const ratio = (a: TimedRun[], b: TimedRun[]) => spread(a.map((r, k) => r.ms / b[k]!.ms));
  return {
    recoverAllVsJvm: ratio(side.recoverAll, side.jvm),
    lsVsJvm: ratio(lsSide.ls, lsSide.jvm),
    recoverAllFloorVsJvm: ratio(side.floor, side.jvm),
    recoverAllVsFloor: ratio(side.recoverAll, side.floor),
    checkpoint: {
      bytes: chk.bytes,
      entries: first.entries,
      files,
      makeSeconds: round(chk.makeSeconds, 1),
    },
    recoverAllMs: r1(spread(ms(side.recoverAll))),
    jvmExtractMs: r1(spread(ms(side.jvm))),
    recoverAllFloorMs: r1(spread(ms(side.floor))),
    lsMs: r1(spread(ms(lsSide.ls))),
    jvmMetadataMs: r1(spread(ms(lsSide.jvm))),
    jvmReadMs: r1(spread(side.jvm.map((r) => peerLine(r).readMs))),
    jvmMetadataLoadMs: r1(spread(lsSide.jvm.map((r) => peerLine(r).metadataMs))),
    peakRssMiB: {
      recoverAll: maxOf(side.recoverAll.map((r) => r.peakMiB)),
      jvmExtract: maxOf(side.jvm.map((r) => r.peakMiB)),
      ls: maxOf(lsSide.ls.map((r) => r.peakMiB)),
      jvmMetadata: maxOf(lsSide.jvm.map((r) => r.peakMiB)),
    },
    sameBytes: true,
    pairs: o.pairs,
  };
}
