/**
 * `recoverChannelState()`: one recovering task as a lifecycle service. It wires the services a
 * Flink task owns (mailbox, channel-IO executor, resourceCloser) to the task actor and turns
 * the actor's ending into one promise that settles only after every resource is closed.
 */
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createActor, type Actor, type InspectionEvent } from 'xstate';
import { stageOf, taskMachine } from './machines/task.machine.ts';
import type { CheckpointResult } from './machines/events.ts';
import type { TaskHooks, TaskServices } from './machines/task-services.ts';
import { CloseableRegistry } from './services/registry.ts';
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
import { validateRecoverOptions } from './recovery-options.ts';
import { rescaleLimits } from './services/rescale/rescale-options.ts';
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
import {
  AbortedError,
  CancelledError,
  addSuppressed,
  suppressedOf,
  toError,
} from './services/errors.ts';

/** What tests and the demo's pool add to the public options. */
export interface StartOptions extends PublicRecoverOptions {
  /** With XState's own event type (the public option types it loosely). */
  inspect?(event: InspectionEvent): void;
  /** Fault and timing hooks (tests, the demo's fault injection). */
  hooks?: TaskHooks;
  /**
   * The task machine to run; default {@link taskMachine}. Tests pass variants made with
   * `taskMachine.provide(...)` (the model suite's mutants) to prove the oracle can fail.
   */
  machine?: typeof taskMachine;
}

/** A recovery with the task actor's full XState type (tests, the pool, the bench). */
export interface StartedRecovery extends PublicRecovery {
  readonly actor: Actor<typeof taskMachine>;
}

/**
 * Starts one recovery (the public `recoverChannelState` of `src/index.ts`, which narrows its
 * types), with the internal options, returning the actor with its full XState type.
 */
export function recoverChannelState(options: StartOptions): StartedRecovery {
  validateRecoverOptions(options);
  const started = performance.now();
  const taskId = options.taskId ?? randomBytes(4).toString('hex');
  const progress = new ProgressCounters(taskId);
  // Streams given as channels are adapted here, and released (destroyed, aborted) if the task
  // ends before their channel did: a sink is always ended or destroyed, never left open.
  const streams = new Set<StreamConsumer>();
  const channels = (info: ChannelInfo): ChannelConsumer => {
    const consumer = toChannelConsumer(options.channels(info));
    if (isStreamConsumer(consumer)) streams.add(consumer);
    return consumer;
  };
  const registry = new CloseableRegistry();
  const mailbox = new Mailbox();
  const executor = new SerialExecutor(`channel-io-${taskId}`);
  // Flink's registration order, so the reverse close order matches StreamTask: resources
  // (registered later) first, then the executor drains, then the mailbox closes last.
  registry.register({ close: () => void mailbox.close() });
  registry.register({ close: () => executor.shutdown() });

  let closing: Promise<void> | undefined;
  let cleanupError: Error | undefined;
  const closeResources = (): Promise<void> => {
    closing ??= registry.close().then(
      () => registry.settled(),
      async (error: unknown) => {
        cleanupError = toError(error);
        await registry.settled();
      },
    );
    return closing;
  };

  // A cancel while the start-up sweep runs stops it between owners (G11): sweeping less is
  // never unsafe, the next start takes the rest, and the cancel need not wait for all of it.
  const stopSweep = new AbortController();
  const spillRoot = SpillRoot.open(resolveSpillRoot(options.spillRoot), {
    signal: stopSweep.signal,
  });
  // Surfaces through the fetch stage; do not let an unused rejection crash the process.
  spillRoot.catch(() => undefined);

  const services: TaskServices = {
    taskId,
    checkpoint: options.checkpoint,
    taskDir: async () => (await spillRoot).taskDirPath(taskId),
    limits: rescaleLimits(options.limits ?? {}, options.rescale),
    rescale: options.rescale,
    remote: options.remote,
    abandonAfterMs: options.abandonAfterMs,
    channels,
    progress,
    registry,
    mailbox,
    executor,
    hooks: options.hooks ?? {},
    lateErrors: [],
    closeResources,
  };

  const actor = createActor(options.machine ?? taskMachine, {
    id: `task-${taskId}`,
    input: { services, autoFinish: options.autoFinish },
    ...(options.inspect ? { inspect: guardInspect(options.inspect.bind(options)) } : {}),
  });

  const ended = new Promise<void>((resolve) => {
    actor.subscribe({ complete: () => resolve(), error: () => resolve() });
  });

  const done = ended.then(async () => {
    await closeResources();
    // An ending before the spill root was open (an aborted signal, say) must not leave its
    // owner dir still being made after done: nothing of the task runs once done settles.
    await spillRoot.catch(() => undefined);
    const snapshot = actor.getSnapshot();
    const ctx = snapshot.context;
    for (const stream of streams) stream.release(ctx.cause);
    streams.clear();
    let primary: Error | undefined;
    if (snapshot.status === 'error') primary = toError(snapshot.error);
    else if (snapshot.status === 'stopped') {
      primary = ctx.cause ?? new CancelledError('task actor stopped');
    } else if (snapshot.value !== 'finished') primary = ctx.cause;
    // Row C1: a failed close or delete is never lost. It is the failure of a task that
    // otherwise finished (even when the registry's retry removed the files after all: the
    // spill disk is failing, and the caller must hear of it), and suppressed under a real cause.
    const cleanupErrors = [...ctx.cleanupErrors];
    if (cleanupError !== undefined) cleanupErrors.push(cleanupError);
    if (primary === undefined) {
      const [first, ...later] = cleanupErrors;
      if (first === undefined) return buildReport(taskId, ctx, started);
      for (const e of later) addSuppressed(first, e);
      throw first;
    }
    for (const e of services.lateErrors) addSuppressed(primary, e);
    for (const e of cleanupErrors) {
      addSuppressed(primary, e);
      for (const s of suppressedOf(e)) addSuppressed(primary, s);
    }
    throw primary;
  });

  const cancel = (reason?: unknown) => {
    stopSweep.abort();
    if (actor.getSnapshot().status === 'active') actor.send({ type: 'CANCEL', reason });
  };
  const onAbort = () => cancel(options.signal?.reason);
  if (options.signal?.aborted) queueMicrotask(onAbort);
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  void done
    .finally(() => options.signal?.removeEventListener('abort', onAbort))
    .catch(() => undefined);

  const stageNow = (): ProgressStage => {
    const snapshot = actor.getSnapshot();
    const stage = stageOf(snapshot);
    if (stage !== undefined) return stage;
    if (snapshot.status === 'active') return 'starting';
    // A bare stop() leaves the value where it was: the task was ended from outside.
    const value = snapshot.value;
    return value === 'finished' || value === 'failed' ? value : 'cancelled';
  };
  const readProgress = (): RecoveryProgress => {
    progress.checkpoints = actor.getSnapshot().context.checkpoints;
    return progress.read(stageNow());
  };
  if (options.onProgress !== undefined) {
    watchProgress(actor, readProgress, options.onProgress.bind(options), done, {
      intervalMs: options.progressIntervalMs ?? 250,
    });
  }

  actor.start();

  return {
    actor,
    taskId,
    done,
    cancel,
    progress: readProgress,
    ownership: () => describeOwnership(actor.getSnapshot().context, progress),
    checkpoint(id, checkpointOptions) {
      return new Promise<CheckpointResult>((resolve, reject) => {
        if (actor.getSnapshot().status !== 'active') {
          reject(new AbortedError(`checkpoint ${id}: task ${taskId} has ended`));
          return;
        }
        const out =
          checkpointOptions?.out ?? join(tmpdir(), `spillway-checkpoint-${taskId}-${id}.spwc`);
        actor.send({ type: 'CHECKPOINT', checkpointId: id, out, reply: { resolve, reject } });
        // An event a final state drops is never answered: answer it here.
        if (actor.getSnapshot().status !== 'active') {
          reject(new AbortedError(`checkpoint ${id}: task ${taskId} ended`));
        }
      });
    },
    async [Symbol.asyncDispose]() {
      cancel('disposed');
      await done.catch(() => undefined);
    },
  };
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
