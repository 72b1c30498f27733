/**
 * A small, paced recovery loop for `spillway inspect --demo`: real recoveries of real
 * checkpoints, slowed down so a person (or a browser test) can watch fetch → gap → drain hand
 * resources on, with a checkpoint during drain, a cancellation mid-drain and a failure in the
 * gap, where the task's registry closes what the stages still owned. It reports spill files and
 * bytes on disk to the inspector's plot.
 */
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { startRecovery } from '../src/recover.ts';
import { makeCheckpoint } from '../src/services/formats/spwc/generator.ts';
import { fsSeam, listFiles } from '../src/services/fs.ts';
import { SpillRoot, resolveSpillRoot } from '../src/services/spill-root/spill-root.ts';
import type { InspectorServer } from './server.ts';

/** What each demo task does, in turn. */
export const DEMO_SCENARIOS = ['checkpoint', 'cancel-drain', 'gap-error', 'clean'] as const;
export type DemoScenario = (typeof DEMO_SCENARIOS)[number];

export interface DemoLoopOptions {
  /** With `watch`, the page also shows each task's owners, files and bytes delivered live. */
  inspector: Pick<InspectorServer, 'inspect' | 'publishMetrics'> &
    Partial<Pick<InspectorServer, 'watch'>>;
  /** Stops the loop: running tasks are cancelled and cleaned up. */
  signal: AbortSignal;
  /** Tasks running at once (default 2). */
  concurrency?: number;
  /** Tasks in total (default: until the signal). */
  tasks?: number;
  /** Checkpoint size in MiB (default 2). */
  mb?: number;
  /** Pause at the start of each stage, in ms (default 350), so each stage is visible. */
  stageDelayMs?: number;
  spillRoot?: string;
}

export interface DemoLoopResult {
  tasks: number;
  finished: number;
  failed: number;
  cancelled: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs demo tasks until `tasks` have run or `signal` aborts; resolves once every task has
 * ended and its files are gone.
 *
 * @example
 * ```ts
 * const inspector = await startInspectorServer();
 * const stop = new AbortController();
 * const result = await runDemoLoop({ inspector, signal: stop.signal, tasks: 4 });
 * ```
 */
export async function runDemoLoop(options: DemoLoopOptions): Promise<DemoLoopResult> {
  const concurrency = options.concurrency ?? 2;
  const limit = options.tasks ?? Number.POSITIVE_INFINITY;
  const mb = options.mb ?? 2;
  const stageDelayMs = options.stageDelayMs ?? 350;
  const rootPath = resolveSpillRoot(options.spillRoot);
  const spillRoot = await SpillRoot.open(rootPath);
  const work = join(
    tmpdir(),
    `spillway-inspect-demo-${process.pid}-${randomBytes(4).toString('hex')}`,
  );
  await fsSeam.mkdir(work, { mode: 0o700 });
  const result: DemoLoopResult = { tasks: 0, finished: 0, failed: 0, cancelled: 0 };
  let live = 0;

  const metrics = setInterval(() => {
    void spillUsage(spillRoot.ownerDir).then(
      (usage) => options.inspector.publishMetrics({ ...usage, liveTasks: live }),
      () => undefined,
    );
  }, 150);

  try {
    const checkpoints: string[] = [];
    for (let seed = 1; seed <= 3; seed++) {
      const made = await makeCheckpoint({ out: join(work, `demo-${seed}.spwc`), mb, seed });
      checkpoints.push(made.path);
    }
    let next = 0;
    const worker = async () => {
      while (!options.signal.aborted && next < limit) {
        const n = next++;
        live++;
        try {
          const outcome = await runOne(n, checkpoints[n % checkpoints.length]!);
          result[outcome]++;
        } finally {
          live--;
          result.tasks++;
        }
      }
    };

    const runOne = async (n: number, checkpoint: string): Promise<keyof DemoLoopResult> => {
      const scenario = DEMO_SCENARIOS[n % DEMO_SCENARIOS.length]!;
      const recovery = startRecovery({
        checkpoint,
        spillRoot: rootPath,
        taskId: `demo-${n + 1}`,
        signal: options.signal,
        inspect: options.inspector.inspect,
        // Small files, so the plot has something to count.
        limits: { maxSpillFileBytes: 256 * 1024 },
        channels: () => ({
          // Paced delivery: draining takes long enough to watch and to checkpoint into.
          onBuffer: () => sleep(8),
          onFinished: () => undefined,
        }),
        hooks: {
          beforeStage: () => sleep(stageDelayMs),
          afterDrainerBuilt: () => {
            if (scenario === 'gap-error') {
              throw new Error('demo fault: the input gate refused the drainer');
            }
          },
        },
      });
      options.inspector.watch?.(recovery);
      const draining = new Promise<void>((resolve) => {
        const sub = recovery.actor.subscribe((s) => {
          if (s.matches({ alive: { restoring: 'draining' } })) {
            sub.unsubscribe();
            resolve();
          }
        });
      });
      void draining.then(async () => {
        await sleep(200);
        if (scenario === 'checkpoint') {
          const out = join(work, `remainder-${n + 1}.spwc`);
          await recovery
            .checkpoint(1, { out })
            .catch(() => undefined)
            .finally(() => fsSeam.rm(out).catch(() => undefined));
        } else if (scenario === 'cancel-drain') {
          recovery.cancel('demo: cancelled while draining');
        }
      });
      try {
        await recovery.done;
        return 'finished';
      } catch {
        const value = recovery.actor.getSnapshot().value;
        return value === 'cancelled' ? 'cancelled' : 'failed';
      } finally {
        // A moment between tasks, so each ending stays on screen.
        if (!options.signal.aborted) await sleep(stageDelayMs);
      }
    };

    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    clearInterval(metrics);
    const usage = await spillUsage(spillRoot.ownerDir).catch(() => ({ files: 0, bytes: 0 }));
    options.inspector.publishMetrics({ ...usage, liveTasks: 0 });
    await fsSeam.rm(work);
  }
  return result;
}

/** Spill segment files and their bytes under this process's owner dir. */
export async function spillUsage(ownerDir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const f of await listFiles(ownerDir)) {
    if (!/^spill-segment-\d+\.bin$/.test(basename(f.path))) continue;
    files++;
    bytes += f.size;
  }
  return { files, bytes };
}
