/**
 * `startRecovery()` (the package's `recoverChannelState()`): one recovering task as a lifecycle
 * service. It wires the services a Flink task owns (mailbox, channel-IO executor) to the task
 * actor and turns the actor's ending into one promise that settles only after every resource is
 * closed.
 */
import { randomBytes } from './services/node-crypto.ts';
import { createActor, type Actor, type InspectionEvent } from 'xstate';
import { stageOf, taskMachineOnce, type TaskMachine } from './machines/task.machine.ts';
import type { CheckpointResult } from './machines/events.ts';
import type { TaskHooks, TaskServices } from './machines/task-services.ts';
import { checkHookTargets, withHooks } from './machines/task-hooks.ts';
import { Mailbox } from './services/mailbox.ts';
import { SerialExecutor } from './services/executor.ts';
import { SpillRoot, resolveSpillRoot } from './services/spill-root/spill-root.ts';
import type {
  RecoverOptions as PublicRecoverOptions,
  Recovery as PublicRecovery,
  RecoveryReport,
} from './recovery-types.ts';
import type { ChannelConsumer, ChannelInfo } from './services/channel.ts';
import type { SpillLimits } from './services/spill/limits.ts';
import {
  isStreamConsumer,
  toChannelConsumer,
  type StreamConsumer,
} from './services/channel-streams.ts';
import {
  ProgressCounters,
  type ProgressStage,
  type RecoveryProgress,
} from './services/progress.ts';
import { validateCheckpointOptions, validateRecoverOptions } from './recovery-options.ts';
import { handled } from './services/handled.ts';
import { rescaleLimits } from './services/spill/limits.ts';
import { describeOwnership, watchProgress } from './recovery-view.ts';

// Convenience for the modules inside the package that start recoveries (the CLI, the pool,
// the tests): the types that go with StartOptions and StartedRecovery.
export type {
  ChannelConsumer,
  ChannelInfo,
  CheckpointResult,
  RecoveryReport,
  SpillLimits,
  TaskHooks,
};
import { AbortedError, CancelledError, toError } from './services/errors.ts';
import type { FlinkReadPlan } from './services/formats/flink/entry-source.ts';
import type { FileSystem } from './services/fs.ts';

/** What tests and the demo's pool add to the public options. */
export interface StartOptions extends PublicRecoverOptions {
  /** With XState's own event type (the public option types it loosely). */
  inspect?(event: InspectionEvent): void;
  /** Fault and timing hooks (tests, the demo's fault injection). */
  hooks?: TaskHooks;
  /**
   * The Flink read already planned for `flink` (recoverToDirectory reads the `_metadata` once
   * for every recovery of a run): the fetch stage does not read it again.
   */
  flinkPlan?: FlinkReadPlan;
  /** A file seam for this recovery's spill root and spill files (remainders: the process's). */
  fs?: FileSystem;
}

/** A recovery with the task actor's full XState type (tests, the pool, the bench). */
export interface StartedRecovery extends PublicRecovery {
  readonly actor: Actor<TaskMachine>;
}

/**
 * Starts one recovery with the internal options, returning the actor with its full XState type.
 * The package's one `recoverChannelState` (src/index.ts) is this, with the public types.
 */
export function startRecovery(options: StartOptions): StartedRecovery {
  return startRecoveryOn(taskMachineOnce(), options);
}

/**
 * `startRecovery` on a given task machine: the product composes it with {@link taskMachineOnce};
 * the model suite's mutation check hands in variants made in its own code with
 * `taskMachine.provide(...)`, to prove the oracle can fail.
 */
export function startRecoveryOn(machine: TaskMachine, options: StartOptions): StartedRecovery {
  validateRecoverOptions(options, ['hooks', 'flinkPlan', 'fs']);
  // A hook whose actor the machine does not invoke would never run: refused, loudly.
  if (options.hooks !== undefined) checkHookTargets(machine);
  const started = performance.now();
  const taskId = options.taskId ?? randomBytes(4).toString('hex');
  const progress = new ProgressCounters(taskId);
  // The consumers' signal: aborted when the task ends in any way but finished (below).
  const endedEarly = new AbortController();
  // The task's ending is made with its actor (below); the channels, the consumers' errors and
  // the spill root reach it through this, once the actor exists (nothing calls them before).
  const task: TaskLink = { actor: undefined };
  const channels = adaptChannels(options, task, endedEarly.signal);
  const { spillRoot, stopSweep } = openSpillRoot(options);
  const services = taskServices(options, {
    taskId,
    spillRoot,
    channels,
    consumerError: (error) => endingOf(task).callerThrew(error),
    progress,
  });
  const actor = createActor(machine, {
    id: `task-${taskId}`,
    input: { services, autoFinish: options.autoFinish },
    ...(options.inspect ? { inspect: guardInspect(options.inspect.bind(options)) } : {}),
  });
  task.actor = actor;
  const { ending } = actor.getSnapshot().context;

  // Set once onProgress is watched (below); called when the task has ended and cleaned up.
  let finishProgress = (): void => undefined;
  // Registered first, so they close last of the caller's: the last progress reading, once,
  // before done settles (never after it), after the wait for the spill root — an ending before
  // the spill root was open (an aborted signal, say) must not leave its owner dir still being
  // made after done: nothing of the task runs once done settles.
  ending.ownForCaller('progress', { close: () => finishProgress() });
  ending.ownForCaller('spillRoot', {
    close: () =>
      spillRoot.then(
        () => undefined,
        () => undefined,
      ),
  });
  const done = settled(actor, { taskId, started });

  const cancel = (reason?: unknown) => {
    stopSweep.abort();
    if (actor.getSnapshot().status === 'active') actor.send({ type: 'CANCEL', reason });
  };
  abortConsumersOnEarlyEnd(actor, endedEarly, done);
  if (options.signal !== undefined) cancelOnAbort(options.signal, cancel, done);

  const readProgress = (): RecoveryProgress => {
    progress.checkpoints = actor.getSnapshot().context.checkpoints;
    return progress.read(stageNow(actor));
  };
  if (options.onProgress !== undefined) {
    finishProgress = watchProgress(actor, readProgress, options.onProgress.bind(options), {
      intervalMs: options.progressIntervalMs ?? 250,
    });
  }

  actor.start();
  return recoveryHandle(actor, { taskId, done, cancel, readProgress, progress });
}

/** The task actor, once created: what the caller's inputs, adapted before it, reach it by. */
interface TaskLink {
  actor: StartedRecovery['actor'] | undefined;
}

function endingOf(task: TaskLink) {
  if (task.actor === undefined) throw new Error('the task actor does not exist yet');
  return task.actor.getSnapshot().context.ending;
}

/** The spill root, opened with a start-up sweep that a cancel can stop. */
function openSpillRoot(options: StartOptions): {
  spillRoot: Promise<SpillRoot>;
  stopSweep: AbortController;
} {
  // A cancel while the start-up sweep runs stops it between owners (G11): sweeping less is
  // never unsafe, the next start takes the rest, and the cancel need not wait for all of it.
  const stopSweep = new AbortController();
  const spillRoot = SpillRoot.open(resolveSpillRoot(options.spillRoot), {
    signal: stopSweep.signal,
    ...(options.fs !== undefined ? { fs: options.fs } : {}),
  });
  // Surfaces through the fetch stage; do not let an unused rejection crash the process.
  spillRoot.catch(() => undefined);
  return { spillRoot, stopSweep };
}

/** `done`: settles once the actor has ended and {@link settle} has closed everything. */
function settled(
  actor: StartedRecovery['actor'],
  s: { readonly taskId: string; readonly started: number },
): Promise<RecoveryReport> {
  const ended = new Promise<void>((resolve) => {
    actor.subscribe({ complete: () => resolve(), error: () => resolve() });
  });
  // Marked handled: a caller may await done only later; that must never crash the process.
  return handled(ended.then(() => settle(actor, s)));
}

/** The recovery as its caller holds it, over the started actor. */
function recoveryHandle(
  actor: StartedRecovery['actor'],
  r: {
    taskId: string;
    done: Promise<RecoveryReport>;
    cancel: (reason?: unknown) => void;
    readProgress: () => RecoveryProgress;
    progress: ProgressCounters;
  },
): StartedRecovery {
  const { taskId, done, cancel } = r;
  return {
    actor,
    taskId,
    done,
    cancel,
    progress: r.readProgress,
    ownership: () => describeOwnership(actor.getSnapshot().context, r.progress),
    checkpoint(id, checkpointOptions) {
      // A wrong option is the caller's mistake: thrown by the call, like recoverChannelState's.
      validateCheckpointOptions(checkpointOptions);
      // Marked handled: the README keeps this promise and awaits it after done, by which time
      // it may have rejected (the task was cancelled while the remainder was written).
      return handled(requestCheckpoint(actor, taskId, id, checkpointOptions));
    },
    async [Symbol.asyncDispose]() {
      cancel('disposed');
      await done.catch(() => undefined);
    },
  };
}

/** The services the task's actors share: a Flink task's mailbox and executor, and its inputs. */
function taskServices(
  options: StartOptions,
  task: Pick<TaskServices, 'taskId' | 'channels' | 'consumerError' | 'progress'> & {
    spillRoot: Promise<SpillRoot>;
  },
): TaskServices {
  const { taskId, spillRoot } = task;
  const services: TaskServices = {
    taskId,
    checkpoint: options.checkpoint,
    taskDir: async () => (await spillRoot).taskDirPath(taskId),
    limits: rescaleLimits(options.limits ?? {}, options.rescale),
    rescale: options.rescale,
    remote: options.remote,
    flink:
      options.flink !== undefined && options.flinkPlan !== undefined
        ? { ...options.flink, plan: options.flinkPlan }
        : options.flink,
    abandonAfterMs: options.abandonAfterMs,
    fs: options.fs,
    channels: task.channels,
    consumerError: task.consumerError,
    progress: task.progress,
    mailbox: new Mailbox(),
    executor: new SerialExecutor(`channel-io-${taskId}`),
  };
  // Tests and the demo's pool hand hooks in; the stages never call them (task-hooks.ts).
  return options.hooks === undefined ? services : withHooks(services, options.hooks);
}

/**
 * The caller's channel factory, adapted: told the consumers' signal, a factory's throw tagged,
 * and each stream registered with the task's ending where it is made: released (destroyed,
 * aborted, with the task's cause) when the task has closed, unless its channel finished it — a
 * sink is always ended or destroyed, never left open.
 */
function adaptChannels(
  options: StartOptions,
  task: TaskLink,
  signal: AbortSignal,
): (info: ChannelInfo) => ChannelConsumer {
  return ({ gate, channel }) => {
    const info = { gate, channel, signal };
    const ending = endingOf(task);
    const consumer = toChannelConsumer(callConsumer(ending, () => options.channels(info)));
    if (isStreamConsumer(consumer)) {
      ending.ownForCaller(consumer, { close: () => consumer.release(causeOf(task)) });
    }
    // Not wrapped: the drain reports its consumers' errors (consumerError below), and a wrapper
    // per channel was 12.6 MB of a 63 MB heap at 262,144 channels.
    return consumer;
  };
}

/**
 * Aborts the consumers' signal as soon as the task leaves for an ending other than finished
 * (its ending starts then, and the consumers should stop what they have in flight), or when
 * `done` rejects (a bare `actor.stop()` emits no final state).
 */
function abortConsumersOnEarlyEnd(
  actor: StartedRecovery['actor'],
  consumers: AbortController,
  done: Promise<unknown>,
): void {
  const abort = (how: string) => {
    if (!consumers.signal.aborted) {
      consumers.abort(new AbortedError(`the recovery ended early (${how})`));
    }
  };
  const subscription = actor.subscribe({
    next: (snapshot) => {
      if (snapshot.status !== 'done') return;
      subscription.unsubscribe();
      if (!snapshot.matches('finished')) abort(String(snapshot.value));
    },
    error: () => abort('failed'),
  });
  done.then(
    () => subscription.unsubscribe(),
    () => abort('failed'),
  );
}

/** The first real cause the task recorded (a stream is released with it). */
function causeOf(task: TaskLink): Error | undefined {
  return task.actor?.getSnapshot().context.cause;
}

/**
 * What `done` settles with, once the task actor has ended: the report, or the first cause with
 * everything after it in `.suppressed` — only after everything the task holds is closed.
 */
async function settle(
  actor: StartedRecovery['actor'],
  s: { readonly taskId: string; readonly started: number },
): Promise<RecoveryReport> {
  const { ending } = actor.getSnapshot().context;
  // Already started by the machine's exit action or the registry actor's disposer: this
  // waits for it (services/task-ending.ts tells the story).
  await ending.close();
  const { status, value, error, context } = actor.getSnapshot();
  const failure = ending.failure({ status, value, error, cause: context.cause });
  if (failure !== undefined) throw failure;
  return buildReport(s.taskId, context, s.started);
}

/** Cancels the task when `signal` aborts (at once if it already has), until `done` settles. */
function cancelOnAbort(
  signal: AbortSignal,
  cancel: (reason?: unknown) => void,
  done: Promise<unknown>,
): void {
  const onAbort = () => cancel(signal.reason);
  if (signal.aborted) queueMicrotask(onAbort);
  else signal.addEventListener('abort', onAbort, { once: true });
  void done.finally(() => signal.removeEventListener('abort', onAbort)).catch(() => undefined);
}

/** Where the task is, in progress words. */
function stageNow(actor: StartedRecovery['actor']): ProgressStage {
  const snapshot = actor.getSnapshot();
  const stage = stageOf(snapshot);
  if (stage !== undefined) return stage;
  if (snapshot.status === 'active') return 'starting';
  // A bare stop() leaves the value where it was: the task was ended from outside.
  const value = snapshot.value;
  return value === 'finished' || value === 'failed' ? value : 'cancelled';
}

/**
 * Sends one checkpoint request to the task; `remainderWritten` hears of each remainder file.
 * Rejects at once if the task has ended or the request's signal has aborted; what the task
 * rejects with leaves as one of ours.
 */
function requestCheckpoint(
  actor: StartedRecovery['actor'],
  taskId: string,
  id: number,
  checkpointOptions: Parameters<StartedRecovery['checkpoint']>[1],
): Promise<CheckpointResult> {
  return new Promise<CheckpointResult>((resolve, reject) => {
    if (actor.getSnapshot().status !== 'active') {
      reject(new AbortedError(`checkpoint ${id}: task ${taskId} has ended`));
      return;
    }
    const signal = checkpointOptions?.signal;
    if (signal?.aborted) {
      reject(
        new CancelledError(`checkpoint ${id}: cancelled by its signal`, { cause: signal.reason }),
      );
      return;
    }
    actor.send({
      type: 'CHECKPOINT',
      checkpointId: id,
      out: checkpointOptions?.out,
      signal,
      reply: {
        resolve,
        // What the task rejects with leaves as one of ours (the ending's mapping).
        reject: (error) => reject(actor.getSnapshot().context.ending.asOurs(error)),
      },
    });
    // An event a final state drops is never answered: answer it here.
    if (actor.getSnapshot().status !== 'active') {
      reject(new AbortedError(`checkpoint ${id}: task ${taskId} ended`));
    }
  });
}

function buildReport(
  taskId: string,
  ctx: ReturnType<StartedRecovery['actor']['getSnapshot']>['context'],
  started: number,
): RecoveryReport {
  return {
    taskId,
    channels: ctx.state?.channels.length ?? 0,
    bytesDelivered: ctx.drain?.bytes ?? 0,
    buffers: ctx.drain?.buffers ?? 0,
    entries: ctx.fetch?.entries ?? 0,
    payloadBytes: ctx.fetch?.payloadBytes ?? 0,
    spillFiles: ctx.fetch?.spillFiles ?? 0,
    spilledBytes: ctx.fetch?.spilledBytes ?? 0,
    checkpoints: ctx.checkpoints,
    durationMs: Math.round(performance.now() - started),
    ...(ctx.fetch?.records !== undefined ? { records: ctx.fetch.records } : {}),
  };
}

/**
 * The caller's `inspect` callback, made harmless: XState calls it inside its own event loop,
 * where a throw would crash the process. The first throw is reported once, as a process warning
 * (code `ERR_SPILLWAY_INSPECT_CALLBACK`) naming the error; later ones are dropped, and the
 * recovery goes on either way — an observer's bug is not the recovery's failure.
 */
function guardInspect(inspect: (event: InspectionEvent) => void): (event: InspectionEvent) => void {
  let reported = false;
  return (event) => {
    try {
      inspect(event);
    } catch (error) {
      if (reported) return;
      reported = true;
      process.emitWarning(
        `spillway: the inspect callback threw (${toError(error).message}); later throws are ignored`,
        { code: 'ERR_SPILLWAY_INSPECT_CALLBACK' },
      );
    }
  };
}

/** Calls into the caller's code, telling the ending what it threw: it leaves as a consumer's. */
function callConsumer<T>(ending: { callerThrew(error: unknown): void }, call: () => T): T {
  try {
    return call();
  } catch (error) {
    ending.callerThrew(error);
    throw error;
  }
}
