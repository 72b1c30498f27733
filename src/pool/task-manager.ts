/**
 * A long-lived pool of task slots. Each slot runs recovery → (injected fault?) → restart loops
 * against one shared spill root, the situation in which Flink leaked spill files (FLINK-40520):
 * a pooled TaskManager whose tasks fail, get cancelled and restart over and over. The pool
 * injects every abort path through the real seams (the fs seam and {@link TaskHooks}, never
 * mocks) and measures what matters: spill files left behind by ended tasks (leaks) and failures
 * reported with something other than the injected first cause (masked causes).
 */
import { randomBytes } from 'node:crypto';
import { basename, join } from 'node:path';
import { setMaxListeners } from 'node:events';
import { crc32 } from '../services/crc32.ts';
import type { InspectionEvent } from 'xstate';
import {
  recoverChannelState,
  type Recovery,
  type RecoveryReport,
  type SpillLimits,
  type TaskHooks,
} from '../recover.ts';
import type { TaskServices } from '../machines/task-services.ts';
import { stageOf, type Outcome, type StageTag } from '../machines/task.machine.ts';
import type { CheckpointResult } from '../machines/events.ts';
import { readCheckpoint } from '../services/checkpoint/reader.ts';
import { channelKey, type ChannelInfo } from '../services/channel.ts';
import {
  fsSeam,
  injectFault,
  listFiles,
  setFsHook,
  type FsHook,
  type FsOp,
} from '../services/fs.ts';
import { SpillRoot } from '../services/spill-root/spill-root.ts';
import { SPILL_FILE_NAME_RE } from '../services/spill/segment-format.ts';
import {
  DEFAULT_MAX_SEGMENT_BYTES,
  DEFAULT_MAX_SPILL_FILE_BYTES,
} from '../services/spill/limits.ts';
import { DEFAULT_BUFFER_BYTES } from '../services/spill/limits.ts';
import { CancelledError, MisuseError, RejectedError, SpillwayError } from '../services/errors.ts';
import { ALL_FAULTS, FAULT_KINDS, InjectedFaultError, type FaultKind } from './faults.ts';
import {
  emptyKindStats,
  emptyMetrics,
  MAX_PROBLEMS,
  type KindStats,
  type PoolMetrics,
} from './metrics.ts';
import { abortPath, FaultSchedule, type OpCounts, type Plan } from './plan.ts';

// ---------------------------------------------------------------------------------------------
// Options

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
}

/** A snapshot of the spill root. */
export interface SpillSample {
  liveTasks: number;
  files: number;
  bytes: number;
  grants: number;
  /** Leaked paths newly found by this sample. */
  leaked: string[];
}

// ---------------------------------------------------------------------------------------------
// What the loops are aimed at

/** What the pool knows of its checkpoint and of one clean recovery of it. */
interface Shape {
  payloadBytes: number;
  channels: { key: string; gate: number; channel: number; bytes: number; crc: number }[];
  /** Operations one clean recovery performs (measured), so every fault lands inside them. */
  ops: OpCounts;
}

// ---------------------------------------------------------------------------------------------
// The pool

/** `<ownerDir>/task-<pool>.<slot>.<loop>-<rand6>`: the pool's own task ids are unambiguous. */
const TASK_DIR_RE = /^task-([0-9a-f]{4})\.(\d+)\.(\d+)-[0-9a-f]{6}$/;
const PATH_TASK_RE = /\/task-([0-9a-f]{4}\.\d+\.\d+)-[0-9a-f]{6}(?:\/|$)/;

interface ChannelTrack {
  crc: number;
  bytes: number;
  finished: number;
  barriers: Map<number, { crc: number; bytes: number }>;
}

/** Per running loop: what its hooks and the fs hook need to reach. */
interface LoopState {
  id: string;
  plan: Plan;
  recovery: Recovery | undefined;
  services: TaskServices | undefined;
  /** The fault was applied (a cancel sent, a mailbox quiesced, a mail really dropped…). */
  fired: boolean;
  injected: InjectedFaultError | undefined;
  /** `cancel-after-failure`: the failure happened; the next file operation sends the cancel. */
  failing: boolean;
  writes: number;
  spillFiles: Set<string>;
  buffers: number;
  stage: StageTag | undefined;
  tracks: Map<string, ChannelTrack>;
  checkpoint: Promise<CheckpointResult> | undefined;
  checkpointOut: string | undefined;
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
  private readonly leaked = new Set<string>();
  private readonly m: PoolMetrics = emptyMetrics();
  private readonly schedule: FaultSchedule;
  private nextLoop = 0;
  private running = false;
  private closed = false;
  private sampling: Promise<SpillSample> | undefined;

  private constructor(
    private readonly options: TaskManagerOptions,
    private readonly spill: SpillRoot,
    private readonly shape: Shape,
    private readonly slotCheckpoints: readonly string[],
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
    const channels = new Map<string, Shape['channels'][number]>();
    let current: Shape['channels'][number] | undefined;
    const summary = await readCheckpoint(options.checkpoint, {
      onEntry(gate, channel) {
        const key = channelKey({ gate, channel });
        current = channels.get(key);
        if (current === undefined) {
          current = { key, gate, channel, bytes: 0, crc: 0 };
          channels.set(key, current);
        }
      },
      onPayload(chunk) {
        current!.crc = crc32(chunk, current!.crc);
        current!.bytes += chunk.length;
      },
    });
    const shape: Shape = {
      payloadBytes: summary.payloadBytes,
      channels: [...channels.values()],
      ops: { checkpointReads: 1, spillWrites: 1, spillCloses: 1, drainReads: 1, buffers: 1 },
    };
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
    const manager = new TaskManager(options, spill, shape, copies);
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
    setFsHook(this.fsHook);
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
      await this.sampling?.catch(() => undefined);
      // Nothing is live now: whatever the spill root still holds of ours is a leak.
      await this.sample().catch((e) => this.problem(`final sample failed: ${msg(e)}`));
      await this.checkSpillwayDir();
      setFsHook(undefined);
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
    this.sampling ??= this.walk().finally(() => (this.sampling = undefined));
    return this.sampling;
  }

  /** Removes the slots' checkpoint copies. The spill root stays open (it is shared). */
  async close(): Promise<void> {
    if (this.running) throw new MisuseError('close() while the pool is running');
    if (this.closed) return;
    this.closed = true;
    for (const c of this.slotCheckpoints) await fsSeam.rm(c);
  }

  // -------------------------------------------------------------------------------------------

  /**
   * One clean recovery that counts what a loop really does (checkpoint reads, spill writes and
   * closes, drain reads, delivered buffers), so each fault is aimed inside that work whatever
   * the writer's coalescing or the limits. It must finish, and leave nothing behind.
   */
  private async calibrate(): Promise<void> {
    const checkpoint = this.slotCheckpoints[0]!;
    const id = `${this.prefix}-calibration`;
    const inTask = `/task-${id}-`;
    const ops = { checkpointReads: 0, spillWrites: 0, spillCloses: 0, drainReads: 0, buffers: 0 };
    let fetching = true;
    setFsHook((op, path) => {
      if (op === 'read' && path === checkpoint) ops.checkpointReads++;
      if (!path.includes(inTask)) return;
      if (op === 'write') ops.spillWrites++;
      if (op === 'close' && fetching) ops.spillCloses++;
      if (op === 'read' && !fetching) ops.drainReads++;
    });
    try {
      const recovery = recoverChannelState({
        checkpoint,
        spillRoot: this.spill.root,
        limits: this.limits,
        taskId: id,
        channels: () => ({
          borrows: true,
          onBuffer: () => void ops.buffers++,
          onFinished: () => undefined,
        }),
        hooks: { beforeStage: (stage) => void (fetching &&= stage === 'fetch') },
      });
      await recovery.done;
    } finally {
      setFsHook(undefined);
    }
    for (const name of await readdirOrEmpty(this.spill.ownerDir)) {
      if (name.startsWith(`task-${id}-`)) {
        throw new SpillwayError(`calibration recovery left ${name} behind (G1)`);
      }
    }
    for (const key of Object.keys(ops) as (keyof typeof ops)[]) {
      this.shape.ops[key] = Math.max(1, ops[key]);
    }
  }

  private readonly fsHook: FsHook = (op: FsOp, path: string) => {
    const m = PATH_TASK_RE.exec(path);
    const state = m === null ? undefined : this.live.get(m[1]!);
    if (state !== undefined) {
      if (op === 'open' && SPILL_FILE_NAME_RE.test(basename(path))) state.spillFiles.add(path);
      const { kind, variant, nth } = state.plan;
      if (state.failing && !state.fired) {
        this.cancelTask(state, 'injected: cancel after the failure');
      } else if (op === 'write' && kind === 'cancel-fetch') {
        // Cancel while the writer is mid-write: the write lands after the abort (G3, F4).
        if (++state.writes === nth) this.cancelTask(state, 'injected: cancel in fetch');
      } else if (op === 'write' && kind === 'cancel-after-failure' && variant === 'fetch') {
        // This write is the one the armed ENOSPC fails.
        if (++state.writes === nth) state.failing = true;
      }
    }
    return this.options.fsHook?.(op, path);
  };

  private cancelTask(state: LoopState, reason: string): void {
    state.fired = true;
    // beforeStage('fetch') runs inside recoverChannelState(), before it returns the recovery.
    if (state.recovery !== undefined) state.recovery.cancel(reason);
    else queueMicrotask(() => state.recovery?.cancel(reason));
  }

  private problem(line: string): void {
    if (this.m.problems.length < MAX_PROBLEMS) this.m.problems.push(line);
  }

  private async runLoop(slot: number, loop: number, stop: AbortSignal): Promise<void> {
    const plan = this.schedule.plan(loop, this.shape.ops);
    const { kind } = plan;
    const id = `${this.prefix}.${slot}.${loop}`;
    const state: LoopState = {
      id,
      plan,
      recovery: undefined,
      services: undefined,
      fired: false,
      injected: undefined,
      failing: false,
      writes: 0,
      spillFiles: new Set(),
      buffers: 0,
      stage: undefined,
      tracks: new Map(),
      checkpoint: undefined,
      checkpointOut: undefined,
    };
    this.m.loopsStarted++;
    if (kind !== 'none') this.m.faults[kind] = (this.m.faults[kind] ?? 0) + 1;
    const stats = (this.m.byKind[kind] ??= emptyKindStats());
    stats.loops++;
    this.live.set(id, state);
    const disarm = this.armFsFault(state, this.slotCheckpoints[slot]!);

    let report: RecoveryReport | undefined;
    let error: unknown;
    try {
      const recovery = recoverChannelState({
        checkpoint: this.slotCheckpoints[slot]!,
        spillRoot: this.spill.root,
        channels: (info) => this.consumer(state, info),
        signal: stop,
        limits: this.limits,
        taskId: id,
        hooks: this.hooks(state),
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
      await this.judge(state, stats, report, error, stop.aborted);
      await this.checkTaskDirGone(state);
    } catch (e) {
      this.problem(`${id}: checking the loop failed: ${msg(e)}`);
    }
    this.m.loops++;
  }

  /** Arms the loop's fs fault, scoped by path to this task (or this slot's checkpoint copy). */
  private armFsFault(state: LoopState, checkpoint: string): () => void {
    const { plan } = state;
    const taskDir = `/task-${state.id}-`;
    switch (plan.kind) {
      case 'fetch-error':
        return injectFault({ op: 'read', code: 'EIO', nth: plan.nth, pathIncludes: checkpoint });
      case 'close-error':
        return injectFault({ op: 'close', code: 'EIO', nth: plan.nth, pathIncludes: taskDir });
      case 'enospc':
        return injectFault({ op: 'write', code: 'ENOSPC', nth: plan.nth, pathIncludes: taskDir });
      case 'cancel-after-failure':
        if (plan.variant === 'fetch') {
          return injectFault({ op: 'write', code: 'ENOSPC', nth: plan.nth, pathIncludes: taskDir });
        }
        return () => undefined;
      case 'drain-error':
        if (plan.variant === 'spill-read') {
          return injectFault({ op: 'read', code: 'EIO', nth: plan.nth, pathIncludes: taskDir });
        }
        return () => undefined;
      default:
        return () => undefined;
    }
  }

  private hooks(state: LoopState): TaskHooks {
    const { plan } = state;
    return {
      beforeStage: (stage, services) => {
        state.services = services;
        if (stage === 'gap' && plan.variant === 'requestPartitions') {
          if (plan.kind === 'mail-rejected') this.quiesce(state, services);
          if (plan.kind === 'mail-dropped') this.dropNextMail(state, services, 'requestPartitions');
        }
        if (stage === 'gap' && plan.kind === 'cancel-gap' && plan.variant === 'beforeStage') {
          this.cancelTask(state, 'injected: cancel in gap');
        }
        if (stage === 'drain' && plan.kind === 'executor-rejected') {
          state.fired = true;
          void services.executor.shutdown();
        }
      },
      afterDrainerBuilt: () => {
        const services = state.services!;
        if (plan.variant === 'installTrigger') {
          if (plan.kind === 'mail-rejected') this.quiesce(state, services);
          if (plan.kind === 'mail-dropped') this.dropNextMail(state, services, 'installTrigger');
        }
        if (plan.kind === 'cancel-gap' && plan.variant === 'afterDrainerBuilt') {
          this.cancelTask(state, 'injected: cancel in gap');
        }
      },
      beforeDrain: () => {
        if (plan.variant !== 'beforeDrain') return;
        if (plan.kind === 'cancel-drain') this.cancelTask(state, 'injected: cancel in drain');
        if (plan.kind === 'checkpoint') this.takeCheckpoint(state);
      },
    };
  }

  private quiesce(state: LoopState, services: TaskServices): void {
    state.fired = true;
    services.mailbox.quiesce();
  }

  /**
   * Row G3: a mail queued behind a blocker is dropped when the blocker closes the mailbox, so
   * its promise never settles and the gap stage hangs; only a cancel ends the task, and only
   * the registry backstop can free what the stage held.
   */
  private dropNextMail(state: LoopState, services: TaskServices, expected: string): void {
    const { mailbox } = services;
    void mailbox
      .execute('demo-blocker', async () => {
        for (let i = 0; i < 1000 && mailbox.pending === 0; i++) await nextTurn();
        const { names } = mailbox.close();
        if (names.includes(expected)) state.fired = true;
        else this.problem(`${state.id}: wanted to drop '${expected}', dropped [${names}]`);
        state.recovery?.cancel(`injected: mail '${expected}' dropped`);
      })
      .catch(() => undefined);
  }

  private takeCheckpoint(state: LoopState): void {
    state.fired = true;
    state.checkpointOut = join(this.options.workDir, `remainder-${state.id}.spwc`);
    state.checkpoint = state.recovery!.checkpoint(1, { out: state.checkpointOut });
    // Judged after the loop; never an unhandled rejection meanwhile.
    state.checkpoint.catch(() => undefined);
  }

  private consumer(state: LoopState, info: ChannelInfo) {
    const key = channelKey(info);
    const track: ChannelTrack = { crc: 0, bytes: 0, finished: 0, barriers: new Map() };
    state.tracks.set(key, track);
    const { plan } = state;
    return {
      // Only hashes and counts each buffer, synchronously: it keeps no reference.
      borrows: true,
      onBuffer: (buffer: Buffer): void | Promise<void> => {
        const n = ++state.buffers;
        const hit = plan.variant === 'onBuffer' && n === plan.nth;
        if (plan.kind === 'cancel-after-failure' && plan.variant === 'drain' && n === plan.nth) {
          state.failing = true;
          state.injected = new InjectedFaultError(
            `injected: channel ${key} rejects buffer ${n} of task ${state.id}`,
          );
          throw state.injected;
        }
        if (hit && plan.kind === 'drain-error') {
          state.fired = true;
          state.injected = new InjectedFaultError(
            `injected: channel ${key} rejects buffer ${n} of task ${state.id}`,
          );
          throw state.injected;
        }
        track.crc = crc32(buffer, track.crc);
        track.bytes += buffer.length;
        this.m.bytesDelivered += buffer.length;
        if (hit && plan.kind === 'cancel-drain')
          this.cancelTask(state, 'injected: cancel in drain');
        if (hit && plan.kind === 'checkpoint') {
          // Taken between two deliveries (this buffer is committed by then), never re-entrantly.
          return nextTurn().then(() => this.takeCheckpoint(state));
        }
      },
      onFinished: () => {
        track.finished++;
      },
      onBarrier: (checkpointId: number) => {
        track.barriers.set(checkpointId, { crc: track.crc, bytes: track.bytes });
      },
    };
  }

  /** Outcome, first cause, delivered bytes and checkpoint remainder of one ended loop. */
  private async judge(
    state: LoopState,
    stats: KindStats,
    report: RecoveryReport | undefined,
    error: unknown,
    interrupted: boolean,
  ): Promise<void> {
    const { plan, id } = state;
    const outcome: Outcome =
      error === undefined ? 'finished' : error instanceof CancelledError ? 'cancelled' : 'failed';
    this.m.outcomes[outcome]++;
    this.m.spillFilesWritten += state.spillFiles.size;
    const path = abortPath(plan, state.spillFiles.size);
    if (path !== undefined && outcome !== 'finished') {
      this.m.abortPaths[path] = (this.m.abortPaths[path] ?? 0) + 1;
      stats.paths[path] = (stats.paths[path] ?? 0) + 1;
    }

    const expected = this.expectedCause(state, error);
    const what = `${id} ${plan.kind}/${plan.variant}#${plan.nth}`;
    if (interrupted && (outcome === 'cancelled' || expected)) {
      // Our own stop signal: a CancelledError is the right answer whatever was planned.
      stats.interrupted++;
      this.m.interrupted++;
    } else if (outcome === plan.expect && expected) {
      if (plan.stage !== undefined && state.stage !== plan.stage) {
        this.problem(`${what}: ended in stage ${state.stage}, planned ${plan.stage}`);
      }
      stats.asExpected++;
    } else if (outcome === 'finished') {
      // The fault never fired (or fired where it could not hurt): nothing to mask.
      stats.missed++;
      this.m.faultsMissed++;
      this.problem(`${what}: fault did not fire, task finished`);
    } else {
      stats.masked++;
      this.m.maskedCauses++;
      this.problem(`${what}: expected ${plan.expect}, got ${outcome}: ${describe(error)}`);
    }

    if (outcome === 'finished') this.checkDelivery(state, what, report);
    await this.checkCheckpoint(state, what, outcome);
  }

  /** Whether `error` is the first cause this loop injected (or `undefined` for a clean run). */
  private expectedCause(state: LoopState, error: unknown): boolean {
    const { plan, id } = state;
    if (error === undefined) return plan.expect === 'finished';
    if (plan.expect === 'cancelled') return error instanceof CancelledError && state.fired;
    const e = error as NodeJS.ErrnoException;
    const inTask = typeof e.path === 'string' && e.path.includes(`/task-${id}-`);
    switch (plan.kind) {
      case 'fetch-error':
        return e.code === 'EIO' && e.syscall === 'read' && e.path === this.slotPath(id);
      case 'close-error':
        return e.code === 'EIO' && e.syscall === 'close' && inTask;
      case 'enospc':
        return e.code === 'ENOSPC' && e.syscall === 'write' && inTask;
      case 'mail-rejected':
        return error instanceof RejectedError && e.message.includes(`mail '${plan.variant}'`);
      case 'executor-rejected':
        return error instanceof RejectedError && e.message.includes(`job 'drain'`);
      case 'cancel-after-failure':
        if (plan.variant === 'fetch') return e.code === 'ENOSPC' && e.syscall === 'write' && inTask;
        return state.injected !== undefined && error === state.injected;
      case 'drain-error':
        if (plan.variant === 'spill-read') {
          return e.code === 'EIO' && e.syscall === 'read' && inTask;
        }
        return state.injected !== undefined && error === state.injected;
      default:
        return false;
    }
  }

  private slotPath(id: string): string {
    return this.slotCheckpoints[Number(id.split('.')[1])]!;
  }

  /** G6: each channel got exactly its bytes, in order, and was finished exactly once. */
  private checkDelivery(state: LoopState, what: string, report: RecoveryReport | undefined): void {
    let total = 0;
    for (const c of this.shape.channels) {
      const t = state.tracks.get(c.key);
      total += t?.bytes ?? 0;
      if (t === undefined || t.bytes !== c.bytes || t.crc !== c.crc || t.finished !== 1) {
        this.m.deliveryErrors++;
        this.problem(
          `${what}: ${c.key} got ${t?.bytes ?? 0} of ${c.bytes} bytes ` +
            `(crc ${t?.crc === c.crc ? 'ok' : 'wrong'}, finished ${t?.finished ?? 0}×)`,
        );
      }
    }
    if (report !== undefined && report.bytesDelivered !== total) {
      this.m.deliveryErrors++;
      this.problem(`${what}: report says ${report.bytesDelivered} bytes, channels got ${total}`);
    }
  }

  /**
   * G6 at a checkpoint: for every channel, the bytes before its barrier followed by its
   * remainder in the checkpoint file are exactly the original bytes.
   */
  private async checkCheckpoint(state: LoopState, what: string, outcome: Outcome): Promise<void> {
    if (state.checkpoint === undefined) return;
    try {
      let result: CheckpointResult;
      try {
        result = await state.checkpoint;
      } catch (e) {
        if (outcome === 'finished') {
          this.m.deliveryErrors++;
          this.problem(`${what}: checkpoint failed on a task that finished: ${describe(e)}`);
        }
        return;
      }
      if (outcome !== 'finished') return;
      const resumed = new Map<string, { crc: number; bytes: number }>();
      for (const [key, t] of state.tracks) {
        // No barrier: the channel was finished before the cut, so its remainder must be empty.
        const at = t.barriers.get(result.checkpointId) ?? { crc: t.crc, bytes: t.bytes };
        resumed.set(key, { ...at });
      }
      if (result.file !== undefined) {
        let current: { crc: number; bytes: number } | undefined;
        await readCheckpoint(result.file, {
          onEntry(gate, channel) {
            current = resumed.get(channelKey({ gate, channel }));
            if (current === undefined) throw new MisuseError(`remainder names unknown channel`);
          },
          onPayload(chunk) {
            current!.crc = crc32(chunk, current!.crc);
            current!.bytes += chunk.length;
          },
        });
      }
      for (const c of this.shape.channels) {
        const r = resumed.get(c.key);
        if (r === undefined || r.bytes !== c.bytes || r.crc !== c.crc) {
          this.m.deliveryErrors++;
          this.problem(
            `${what}: ${c.key} delivered-before-barrier + remainder = ${r?.bytes ?? 0} of ${c.bytes} bytes`,
          );
          return;
        }
      }
      this.m.checkpointsVerified++;
    } finally {
      if (state.checkpointOut !== undefined) await fsSeam.rm(state.checkpointOut);
    }
  }

  /** G1: by the time `done` settled, the task's dir (and every spill file in it) is gone. */
  private async checkTaskDirGone(state: LoopState): Promise<void> {
    const prefix = `task-${state.id}-`;
    for (const name of await readdirOrEmpty(this.spill.ownerDir)) {
      if (!name.startsWith(prefix)) continue;
      const found = await this.leak(join(this.spill.ownerDir, name));
      if (found.length > 0) {
        this.problem(`${state.id} ${state.plan.kind}: ${name} still there after done settled`);
      }
    }
  }

  /** Records every file under `path` (or `path` itself if empty) as leaked; returns new ones. */
  private async leak(path: string): Promise<string[]> {
    const files = await listFiles(path);
    const entries = files.length > 0 ? files.map((f) => f.path) : [path];
    const fresh = entries.filter((p) => !this.leaked.has(p));
    for (const p of fresh) this.leaked.add(p);
    this.m.leakedFiles += fresh.length;
    return fresh;
  }

  private async walk(): Promise<SpillSample> {
    // Which tasks count as live is fixed before the walk, so a task ending mid-walk is never
    // mistaken for a leak, and a dir whose task had ended before the walk always is.
    const liveBefore = new Set(this.live.keys());
    const startedBefore = this.nextLoop;
    let grants = 0;
    for (const s of this.live.values()) {
      grants += s.recovery?.actor.getSnapshot().context.state?.refCount ?? 0;
    }
    let files = 0;
    let bytes = 0;
    const leaked: string[] = [];
    for (const name of await readdirOrEmpty(this.spill.ownerDir)) {
      if (name === 'owner.json' || name.startsWith('.owner.json.tmp-')) continue;
      const path = join(this.spill.ownerDir, name);
      const m = TASK_DIR_RE.exec(name);
      const id = m === null ? undefined : `${m[1]}.${m[2]}.${m[3]}`;
      const ours = m !== null && m[1] === this.prefix;
      const liveTask =
        ours && (liveBefore.has(id!) || Number(m![3]) >= startedBefore) && this.running;
      if (liveTask) {
        for (const f of await listFiles(path)) {
          files++;
          bytes += f.size;
        }
      } else {
        const fresh = await this.leak(path);
        for (const p of fresh) this.problem(`leaked: ${p}`);
        leaked.push(...fresh);
      }
    }
    this.m.samples++;
    this.m.liveFiles = files;
    this.m.liveBytes = bytes;
    this.m.outstandingGrants = grants;
    this.m.peakLiveFiles = Math.max(this.m.peakLiveFiles, files);
    this.m.peakLiveBytes = Math.max(this.m.peakLiveBytes, bytes);
    return { liveTasks: liveBefore.size, files, bytes, grants, leaked };
  }

  /** With a private root, `<root>/spillway/` holds this process's owner dir and nothing else. */
  private async checkSpillwayDir(): Promise<void> {
    if (this.options.privateRoot !== true) return;
    const dir = join(this.spill.root, 'spillway');
    for (const name of await readdirOrEmpty(dir)) {
      const path = join(dir, name);
      if (path === this.spill.ownerDir) continue;
      for (const p of await this.leak(path)) this.problem(`leaked beside the owner dir: ${p}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function msg(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function describe(e: unknown): string {
  if (e === undefined) return 'no error';
  const name = (e as Error)?.name ?? typeof e;
  const code = (e as NodeJS.ErrnoException)?.code;
  return `${name}${code ? ` ${code}` : ''}: ${msg(e)}`;
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await fsSeam.readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
}
