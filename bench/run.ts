/**
 * `spillway bench`: measures Spillway against the least work that gives the same result on
 * this machine, with the same bytes in one run, as ratios (this machine is noisy: absolute
 * times mean little, side-by-side ratios do). Makes its own data in a fresh temp dir and
 * deletes all of it, whatever happens. The figures and their goals: bench/result.ts; the
 * phases, in order: bench/phases.ts (each phase's measuring in its own module).
 *
 * Each ratio is the median of `runs` runs whose sides alternate in order (A B, B A, …), so
 * neither side always gets the warmer cache or the quieter disk, measured on the temp dir
 * (disk-bound: what a user sees) and again on a tmpfs (the code's own cost) where mounting one
 * is allowed.
 */
import { mkdir, mkdtemp, rm, statfs } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { SpillRoot } from '../src/services/spill-root/spill-root.ts';
import type { BenchOptions } from './options.ts';
import { BenchPhases } from './phases.ts';
import { detailsOf, resultOf, type BenchDetails, type BenchResult } from './result.ts';

export { TARGETS, type BenchDetails, type BenchResult } from './result.ts';
export type { BenchOptions } from './options.ts';

const MIB = 1024 * 1024;

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
    const details = detailsOf(options, figures, started, [loadAtStart, loadavg()[0]!]);
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
