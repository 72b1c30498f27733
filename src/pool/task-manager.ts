/**
 * A long-lived pool of task slots. Each slot runs recovery → (injected fault?) → restart loops
 * against one shared spill root, the situation in which Flink leaked spill files (FLINK-40520):
 * a pooled TaskManager whose tasks fail, get cancelled and restart over and over. The pool
 * injects every abort path through the real seams (the fs seam and the task's `TaskHooks`, never
 * mocks) and measures what matters: spill files left behind by ended tasks (leaks) and failures
 * reported with something other than the injected first cause (masked causes).
 *
 * This file runs the loops and wires the parts: the planner (plan.ts) picks each loop's fault,
 * the injector (inject.ts) applies it, the judge (judge.ts) checks how the loop ended and the
 * census (census.ts) walks the spill root for leaks.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setMaxListeners } from 'node:events';
import type { InspectionEvent } from 'xstate';
import { startRecovery, type RecoveryReport, type SpillLimits } from '../recover.ts';
import { stageOf } from '../machines/task.machine.ts';
import { MisuseError } from '../services/errors.ts';
import { fsSeam } from '../services/fs.ts';
import { faultSeam, type FsHook } from './fault-seam.ts';
import { SpillRoot } from '../services/spill-root/spill-root.ts';
import {
  DEFAULT_BUFFER_BYTES,
  DEFAULT_MAX_SEGMENT_BYTES,
  DEFAULT_MAX_SPILL_FILE_BYTES,
} from '../services/spill/limits.ts';
import { Census, type SpillSample } from './census.ts';
import { ALL_FAULTS, FAULT_KINDS, type FaultKind } from './faults.ts';
import { FaultInjector } from './inject.ts';
import { Judge } from './judge.ts';
import { loopTaskId, newLoopState, type LoopState } from './loop.ts';
import {
  emptyKindStats,
  emptyMetrics,
  errorText,
  noteInto,
  type Note,
  type PoolMetrics,
} from './metrics.ts';
import { FaultSchedule } from './plan.ts';
import { measureOps, readShape, type Shape } from './shape.ts';
import type { RescaleOption } from '../services/rescale/rescale-options.ts';

/** How a pool is set up. */
export interface TaskManagerOptions {
  /** The spill root every slot shares. */
  spillRoot: string;
  /** The SPWC checkpoint every loop recovers (each slot gets its own copy, see `workDir`). */
  checkpoint: string;
  /**
   * A directory the pool may write into: one checkpoint copy per slot (so a read fault hits
   * only one task) and the remainder files of checkpoints taken during drain. Everything the
   * pool creates there is removed by {@link TaskManager.close}.
   */
  workDir: string;
  /** Task slots, default 4. */
  tasks?: number;
  /** The fault kinds to rotate through besides clean loops; default every kind. */
  faults?: readonly FaultKind[];
  /** Seeds the fault schedule and every fault's parameters; default 1. */
  seed?: number;
  limits?: SpillLimits;
  /** Passed to every recovery (the live inspector). */
  inspect?: (event: InspectionEvent) => void;
  /** How often a run samples the spill root (live files, leak check); default 100 ms. */
  sampleEveryMs?: number;
  /**
   * Runs after the pool's own fs hook on every fs operation. The pool owns the fs seam's hook
   * (`setFsHook`) while it runs; this is how a caller still observes or pauses operations.
   */
  fsHook?: FsHook;
  /**
   * The spill root is the pool's alone (the demo's and soak's temp roots): after a run anything
   * in `<root>/spillway/` besides this process's owner dir counts as leaked too.
   */
  privateRoot?: boolean;
  /**
   * Loops recover as this rescaled subtask (the checkpoint must be SPWC v2 with records): the
   * filtering handler under every fault kind, judged against the survivors' bytes.
   */
  rescale?: RescaleOption;
  /** Which slots rescale when `rescale` is given: all (default), or the odd ones (a mix). */
  rescaleSlots?: 'all' | 'odd';
}

/**
 * A pool of `tasks` slots, each recovering the same checkpoint again and again with a fault
 * injected into most loops, all in one spill root.
 *
 * The pool owns the process-global fs seam while it runs: it installs the seam's hook and arms
 * faults scoped by path to one task, so run one pool at a time and no other recoveries beside
 * it in the same process.
 *
 * @example
 * ```ts
 * const pool = await TaskManager.create({ spillRoot, checkpoint: 'job.spwc', workDir, tasks: 4 });
 * try {
 *   const m = await pool.run(40, { signal });
 *   console.log(m.leakedFiles, m.maskedCauses); // 0 0
 * } finally {
 *   await pool.close();
 * }
 * ```
 */
export class TaskManager {
  readonly tasks: number;
  readonly seed: number;
  readonly faults: readonly FaultKind[];
  private readonly prefix = randomBytes(2).toString('hex');
  private readonly limits: Required<SpillLimits>;
  private readonly live = new Map<string, LoopState>();
  private readonly m: PoolMetrics = emptyMetrics();
  private readonly note: Note = noteInto(this.m.problems);
  private readonly schedule: FaultSchedule;
  private readonly census: Census;
  private readonly judge: Judge;
  private readonly injector: FaultInjector;
  private nextLoop = 0;
  private running = false;
  private closed = false;

  private constructor(
    private readonly options: TaskManagerOptions,
    private readonly spill: SpillRoot,
    private readonly shape: Shape,
    private readonly slotCheckpoints: readonly string[],
    /** What the rescaled slots must deliver (undefined: no slot rescales). */
    private readonly rescaledShape: Shape | undefined,
  ) {
    this.tasks = slotCheckpoints.length;
    this.seed = options.seed ?? 1;
    this.faults = ['none', ...(options.faults ?? ALL_FAULTS).filter((k) => k !== 'none')];
    this.limits = {
      maxSpillFileBytes: options.limits?.maxSpillFileBytes ?? DEFAULT_MAX_SPILL_FILE_BYTES,
      maxSegmentBytes: options.limits?.maxSegmentBytes ?? DEFAULT_MAX_SEGMENT_BYTES,
      bufferBytes: options.limits?.bufferBytes ?? DEFAULT_BUFFER_BYTES,
      readChunkBytes: options.limits?.readChunkBytes ?? 1024 * 1024,
    };
    this.schedule = new FaultSchedule(this.faults, this.seed);
    const view = {
      live: this.live,
      nextLoop: () => this.nextLoop,
      running: () => this.running,
    };
    this.census = new Census(spill, this.prefix, view, this.m, this.note);
    this.judge = new Judge(shape.channels, this.census, this.m, this.note);
    this.injector = new FaultInjector({
      live: this.live,
      workDir: options.workDir,
      figures: this.m,
      note: this.note,
      next: options.fsHook,
    });
  }

  /**
   * Opens the spill root, reads the checkpoint once (each channel's bytes and CRC, to check
   * every delivery against), and gives each slot its own copy of it in `workDir`.
   */
  static async create(options: TaskManagerOptions): Promise<TaskManager> {
    const tasks = options.tasks ?? 4;
    if (!Number.isSafeInteger(tasks) || tasks < 1) {
      throw new RangeError(`tasks must be a positive integer, got ${tasks}`);
    }
    for (const k of options.faults ?? []) {
      if (!FAULT_KINDS.includes(k)) throw new RangeError(`unknown fault kind '${k}'`);
    }
    const spill = await SpillRoot.open(options.spillRoot);
    const rescale = options.rescale;
    const mixed = rescale !== undefined && options.rescaleSlots === 'odd';
    const shape = await readShape(options.checkpoint, mixed ? undefined : rescale);
    const rescaledShape =
      rescale === undefined
        ? undefined
        : mixed
          ? await readShape(options.checkpoint, rescale)
          : shape;
    const copies: string[] = [];
    try {
      for (let s = 0; s < tasks; s++) {
        const copy = join(options.workDir, `slot-${s}.spwc`);
        await fsSeam.copyFile(options.checkpoint, copy);
        copies.push(copy);
      }
    } catch (e) {
      for (const c of copies) await fsSeam.rm(c).catch(() => undefined);
      throw e;
    }
    const manager = new TaskManager(options, spill, shape, copies, rescaledShape);
    try {
      await manager.calibrate();
    } catch (e) {
      await manager.close().catch(() => undefined);
      throw e;
    }
    return manager;
  }

  /** The live and cumulative figures (a copy). */
  get metrics(): PoolMetrics {
    this.m.liveTasks = this.live.size;
    return structuredClone(this.m);
  }

  /**
   * Runs `loops` more loops over the slots, then checks that the pool's owner dir holds nothing
   * but its marker. Resolves with the cumulative metrics; never rejects for what a loop did
   * (that is counted). Aborting `signal` cancels every running task and starts no new loop.
   */
  async run(loops: number, options: { signal?: AbortSignal } = {}): Promise<PoolMetrics> {
    if (this.closed) throw new MisuseError('run() after close()');
    if (this.running) throw new MisuseError('run() while the pool is already running');
    this.running = true;
    const stop = new AbortController();
    setMaxListeners(this.tasks + 16, stop.signal);
    const onAbort = () => stop.abort(options.signal?.reason);
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    faultSeam().setFsHook(this.injector.fsHook);
    const every = this.options.sampleEveryMs ?? 100;
    const timer = setInterval(() => void this.sample().catch(() => undefined), every);
    const end = this.nextLoop + loops;
    const slot = async (s: number) => {
      while (!stop.signal.aborted && this.nextLoop < end) {
        await this.runLoop(s, this.nextLoop++, stop.signal);
      }
    };
    try {
      await Promise.all(Array.from({ length: this.tasks }, (_, s) => slot(s)));
    } finally {
      clearInterval(timer);
      options.signal?.removeEventListener('abort', onAbort);
      await this.census.idle();
      // Nothing is live now: whatever the spill root still holds of ours is a leak.
      await this.sample().catch((e) => this.note(`final sample failed: ${errorText(e)}`));
      if (this.options.privateRoot === true) await this.census.checkSpillwayDir();
      faultSeam().setFsHook(undefined);
      this.running = false;
    }
    return this.metrics;
  }

  /**
   * Walks the pool's owner dir: counts the files and bytes of live tasks and the grants they
   * hold, and records as leaked every file whose task had already ended when the walk began.
   * Concurrent calls share one walk.
   */
  sample(): Promise<SpillSample> {
    return this.census.sample();
  }

  /** Removes the slots' checkpoint copies. The spill root stays open (it is shared). */
  async close(): Promise<void> {
    if (this.running) throw new MisuseError('close() while the pool is running');
    if (this.closed) return;
    this.closed = true;
    for (const c of this.slotCheckpoints) await fsSeam.rm(c);
  }

  // -------------------------------------------------------------------------------------------

  /** Aims every fault inside what one clean recovery of this checkpoint really does. */
  private async calibrate(): Promise<void> {
    for (const rescaled of [false, true]) {
      const shape = rescaled ? this.rescaledShape : this.shape;
      if (shape === undefined || (rescaled && shape === this.shape)) continue;
      shape.ops = await measureOps({
        checkpoint: this.slotCheckpoints[0]!,
        spill: this.spill,
        limits: this.limits,
        taskId: `${this.prefix}-calibration${rescaled ? '-rescaled' : ''}`,
        rescale: shape === this.rescaledShape ? this.options.rescale : undefined,
      });
    }
  }

  /** Whether `slot`'s loops are rescaled recoveries. */
  private rescales(slot: number): boolean {
    if (this.rescaledShape === undefined) return false;
    return this.options.rescaleSlots !== 'odd' || slot % 2 === 1;
  }

  private async runLoop(slot: number, loop: number, stop: AbortSignal): Promise<void> {
    const rescaled = this.rescales(slot);
    const shape = rescaled ? this.rescaledShape! : this.shape;
    const plan = this.schedule.plan(loop, shape.ops);
    const { kind } = plan;
    const id = loopTaskId(this.prefix, slot, loop);
    const state = newLoopState(id, plan, this.slotCheckpoints[slot]!);
    if (shape !== this.shape) state.expected = shape.channels;
    this.m.loopsStarted++;
    if (kind !== 'none') this.m.faults[kind] = (this.m.faults[kind] ?? 0) + 1;
    const stats = (this.m.byKind[kind] ??= emptyKindStats());
    stats.loops++;
    this.live.set(id, state);
    const disarm = this.injector.armFsFault(state);

    let report: RecoveryReport | undefined;
    let error: unknown;
    try {
      const recovery = startRecovery({
        checkpoint: state.input,
        spillRoot: this.spill.root,
        channels: (info) => this.injector.consumer(state, info),
        signal: stop,
        limits: this.limits,
        taskId: id,
        hooks: this.injector.hooks(state),
        ...(rescaled ? { rescale: this.options.rescale! } : {}),
        ...(this.options.inspect ? { inspect: this.options.inspect } : {}),
      });
      state.recovery = recovery;
      state.stage = stageOf(recovery.actor.getSnapshot());
      recovery.actor.subscribe({
        next: (snapshot) => {
          const stage = stageOf(snapshot);
          if (stage !== undefined) state.stage = stage;
        },
        error: () => undefined,
      });
      report = await recovery.done;
    } catch (e) {
      error = e;
    } finally {
      disarm();
    }
    this.live.delete(id);

    try {
      await this.judge.ended(state, stats, { report, error, interrupted: stop.aborted });
    } catch (e) {
      this.note(`${id}: checking the loop failed: ${errorText(e)}`);
    }
    this.m.loops++;
  }
}
