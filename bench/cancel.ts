/**
 * `cancelCleanupP99Ms`: cancel recoveries at random moments and time how long the product takes
 * from `cancel()` until the task dir is gone. G1 says the task dir and every spill file are gone
 * before `done` settles, so the time to `done` is the (conservative) figure, and the bench checks
 * on the disk that the task dir really is gone then.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startRecovery } from '../src/recover.ts';
import { stageOf } from '../src/machines/task.machine.ts';
import type { SpillLimits } from '../src/services/spill/limits.ts';
import { discardingConsumer } from './stages.ts';
import { percentile, seededRandom, spread, type Spread } from './stats.ts';

export interface CancelOptions {
  checkpoint: string;
  spillRoot: string;
  /** This process's owner dir in `spillRoot` (where task dirs appear). */
  ownerDir: string;
  /** Cancellations to time (only those that hit a live task count). */
  count: number;
  limits: SpillLimits;
  seed: number;
  /** Stops between cancellations (the bench itself was interrupted). */
  signal: AbortSignal;
}

export interface CancelFigures {
  p99Ms: number;
  ms: Spread;
  samples: number;
  /** Spill files of one uncancelled recovery of the same checkpoint. */
  filesPerRecovery: number;
  /** Spill files on disk at the moment of each cancel. */
  filesAtCancel: Spread;
  /** Where the cancels landed: stage tag (`fetch`, `gap`, `drain`, `running`) → count. */
  stages: Record<string, number>;
  /** Median duration of an uncancelled recovery, the range cancel moments are drawn from. */
  recoveryMs: number;
}

function taskDirsOf(ownerDir: string, taskId: string): string[] {
  return readdirSync(ownerDir).filter((name) => name.startsWith(`task-${taskId}-`));
}

function filesIn(ownerDir: string, taskId: string): number {
  let n = 0;
  for (const dir of taskDirsOf(ownerDir, taskId)) {
    try {
      n += readdirSync(join(ownerDir, dir)).length;
    } catch {
      // Deleted between the two reads: nothing to count.
    }
  }
  return n;
}

const sleep = (ms: number) =>
  new Promise<void>((resolve) => (ms < 1 ? setImmediate(resolve) : setTimeout(resolve, ms)));

/**
 * Times `count` cancellations at uniformly random moments of a recovery, one at a time.
 *
 * @example
 * ```ts
 * const figures = await measureCancel({ checkpoint, spillRoot, ownerDir, count: 50, limits, seed: 1, signal });
 * console.log(figures.p99Ms);
 * ```
 */
export async function measureCancel(options: CancelOptions): Promise<CancelFigures> {
  const { checkpoint, spillRoot, ownerDir, limits } = options;
  // Calibrate: how long an uncancelled recovery takes, and how many files it spills.
  const durations: number[] = [];
  let filesPerRecovery = 0;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const r = startRecovery({
      checkpoint,
      spillRoot,
      limits,
      taskId: `bench-calibrate-${i}`,
      channels: () => discardingConsumer,
    });
    const report = await r.done;
    durations.push(performance.now() - t0);
    filesPerRecovery = report.spillFiles;
  }
  const recoveryMs = spread(durations).median;

  const rng = seededRandom(options.seed);
  const times: number[] = [];
  const filesAtCancel: number[] = [];
  const stages: Record<string, number> = {};
  let attempt = 0;
  while (times.length < options.count && attempt < options.count * 4) {
    if (options.signal.aborted) throw options.signal.reason;
    const taskId = `bench-cancel-${attempt++}`;
    const recovery = startRecovery({
      checkpoint,
      spillRoot,
      limits,
      taskId,
      channels: () => discardingConsumer,
    });
    const settled = recovery.done.then(
      () => 'finished',
      () => 'cancelled',
    );
    await sleep(rng() * recoveryMs);
    const snapshot = recovery.actor.getSnapshot();
    if (snapshot.status !== 'active') {
      // It ended before the cancel moment: not a cancellation, draw again.
      await settled;
      continue;
    }
    const files = filesIn(ownerDir, taskId);
    // An active task is always in a tagged state; 'untagged' would name a machine change.
    const stage = stageOf(snapshot) ?? 'untagged';
    const t0 = performance.now();
    recovery.cancel('bench');
    const outcome = await settled;
    const ms = performance.now() - t0;
    const left = taskDirsOf(ownerDir, taskId);
    if (left.length > 0) {
      throw new Error(`G1 violated: ${left.join(', ')} still exists after done settled`);
    }
    if (outcome === 'finished') continue; // the cancel lost the race with the last step
    times.push(ms);
    filesAtCancel.push(files);
    stages[stage] = (stages[stage] ?? 0) + 1;
  }
  if (times.length === 0) throw new Error('no cancellation hit a live recovery');
  return {
    p99Ms: percentile(times, 99),
    ms: spread(times),
    samples: times.length,
    filesPerRecovery,
    filesAtCancel: spread(filesAtCancel),
    stages,
    recoveryMs,
  };
}
