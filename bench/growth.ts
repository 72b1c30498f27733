/**
 * `spillway bench --growth`: how cost grows. Recover time and peak RSS against the state size
 * (time should be linear, RSS flat), memory per task with 1…64 concurrent recoveries in one
 * process, and the channel counts of G8 against the file-creation floor. Each figure comes
 * from a fresh child process; every file is removed as soon as its figure is taken.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeCheckpoint } from '../src/services/formats/spwc/generator.ts';
import { measureChannels, type ChannelFigures } from './channels.ts';
import { flushWriteback } from './floors.ts';
import { measurePeakRss } from './rss.ts';
import { growthSvg } from './svg.ts';

/** What to measure; `svg` names the plot file to write. */
export interface GrowthOptions {
  /** State sizes, MiB of payload. */
  stateMb: number[];
  /** Concurrent tasks in one process, each recovering `taskMb`. */
  tasks: number[];
  taskMb: number;
  /** Channel counts as [gates, channels per gate], one one-byte entry per channel. */
  channels: [number, number][];
  svg?: string;
}

export const FULL_GROWTH: GrowthOptions = {
  stateMb: [256, 1024, 4096, 8192],
  tasks: [1, 8, 64],
  taskMb: 16,
  channels: [
    [1, 1],
    [250, 4],
    [25_000, 4],
    [65_536, 4],
  ],
};

/** Tiny sizes: the same code paths in seconds. */
export const QUICK_GROWTH: GrowthOptions = {
  stateMb: [1, 2],
  tasks: [1, 2],
  taskMb: 1,
  channels: [
    [1, 1],
    [25, 4],
  ],
};

// The figures' types live apart, so the SVG that draws them does not import this module back.
export type { GrowthFigures, StateFigures, TaskFigures } from './growth-figures.ts';
import type { GrowthFigures, StateFigures, TaskFigures } from './growth-figures.ts';

const r1 = (x: number) => Math.round(x * 10) / 10;

/**
 * Measures everything `options` asks for in `dir`; writes the SVG if `options.svg` is set.
 *
 * @example
 * ```ts
 * const g = await measureGrowth(dir, spillRoot, { ...QUICK_GROWTH, svg: 'growth.svg' }, signal);
 * ```
 */
export async function measureGrowth(
  dir: string,
  spillRoot: string,
  options: GrowthOptions,
  signal: AbortSignal,
  progress: (fraction: number, text: string) => void = () => undefined,
): Promise<GrowthFigures> {
  const steps = options.stateMb.length + options.tasks.length + options.channels.length;
  let step = 0;
  const next = (text: string) => progress(step++ / steps, `growth: ${text}`);

  const state: StateFigures[] = [];
  for (const mb of options.stateMb) {
    next(`${mb} MiB of state`);
    const path = join(dir, `growth-${mb}.spwc`);
    try {
      await makeCheckpoint({ out: path, mb, seed: mb });
      flushWriteback();
      const rss = await measurePeakRss(path, spillRoot, signal);
      state.push({
        mb,
        ms: Math.round(rss.ms),
        peakRssMiB: r1(rss.peakMiB),
        msPerGiB: Math.round((rss.ms / mb) * 1024),
      });
    } finally {
      await rm(path, { force: true });
    }
  }

  const tasks: TaskFigures[] = [];
  const taskPath = join(dir, 'growth-task.spwc');
  try {
    await makeCheckpoint({ out: taskPath, mb: options.taskMb, seed: 7 });
    for (const n of options.tasks) {
      next(`${n} concurrent task(s)`);
      flushWriteback();
      const rss = await measurePeakRss(taskPath, spillRoot, signal, n);
      tasks.push({
        tasks: n,
        ms: Math.round(rss.ms),
        peakRssMiB: r1(rss.peakMiB),
        rssPerTaskMiB: r1((rss.peakMiB - rss.baselineMiB) / n),
      });
    }
  } finally {
    await rm(taskPath, { force: true });
  }

  const channels: ChannelFigures[] = [];
  for (const [gates, perGate] of options.channels) {
    next(`${gates * perGate} channel(s)`);
    flushWriteback();
    channels.push(await measureChannels(dir, gates, perGate, signal));
  }

  const figures = { state, tasks, channels };
  if (options.svg !== undefined) await writeFile(options.svg, growthSvg(figures));
  return figures;
}
