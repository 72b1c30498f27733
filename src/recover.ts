/**
 * `recoverChannelState()`: one recovering task as a lifecycle service. It wires the services a
 * Flink task owns (mailbox, channel-IO executor, resourceCloser) to the task actor and turns
 * the actor's ending into one promise that settles only after every resource is closed.
 */
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createActor, type Actor, type InspectionEvent } from 'xstate';
import { taskMachine } from './machines/task.machine.ts';
import type { CheckpointResult } from './machines/events.ts';
import type { TaskHooks, TaskServices } from './machines/task-services.ts';
import { CloseableRegistry } from './services/registry.ts';
import { Mailbox } from './services/mailbox.ts';
import { SerialExecutor } from './services/executor.ts';
import { SpillRoot, resolveSpillRoot } from './services/spill-root/spill-root.ts';
import type { ChannelInfo } from './services/channel.ts';
import type { ChannelConsumer } from './services/channel.ts';
import type { SpillLimits } from './services/spill/limits.ts';
import {
  AbortedError,
  CancelledError,
  addSuppressed,
  suppressedOf,
  toError,
} from './services/errors.ts';

export type { ChannelInfo, ChannelConsumer, SpillLimits, CheckpointResult, TaskHooks };

export interface RecoverOptions {
  /** The SPWC v1 checkpoint file to recover. */
  checkpoint: string;
  /** Where spill files go; default `SPILLWAY_SPILL_ROOT`, then the OS temp dir. */
  spillRoot?: string;
  /** Returns the consumer of one input channel's recovered bytes. */
  channels: (info: ChannelInfo) => ChannelConsumer;
  /** Aborting it cancels the task (like `CANCEL`). */
  signal?: AbortSignal;
  /** Passed to `createActor`: sees every actor, event and snapshot of the task's system. */
  inspect?: (event: InspectionEvent) => void;
  limits?: SpillLimits;
  /** A name for logs and the task dir; default a random id. */
  taskId?: string;
  /** Fault and timing hooks (tests, the demo's fault injection). */
  hooks?: TaskHooks;
  /** End as soon as recovery is done (default true); false keeps the task running until FINISH. */
  autoFinish?: boolean;
  /**
   * The task machine to run; default {@link taskMachine}. Tests pass variants made with
   * `taskMachine.provide(...)` (the model suite's mutants) to prove the oracle can fail.
   */
  machine?: typeof taskMachine;
}

/** What a finished recovery reports. */
export interface RecoveryReport {
  taskId: string;
  channels: number;
  bytesDelivered: number;
  buffers: number;
  entries: number;
  payloadBytes: number;
  spillFiles: number;
  spilledBytes: number;
  checkpoints: number;
  durationMs: number;
}

export type TaskActor = Actor<typeof taskMachine>;

export interface Recovery extends AsyncDisposable {
  /** The task actor: subscribe to it, read `getSnapshot().context.ownership`. */
  readonly actor: TaskActor;
  readonly taskId: string;
  /**
   * Settles once the task has ended **and** every resource is closed (G1): the report, or the
   * first cause with later errors in `.suppressed` (G5). A failed close or delete of spill
   * files (row C1) is suppressed under a real cause; if the task otherwise finished, it is the
   * failure itself (typically a `CleanupError`), even when the registry's retry then removed
   * the files.
   */
  readonly done: Promise<RecoveryReport>;
  /**
   * Takes checkpoint `id` during recovery: barriers into every channel still in recovery, and
   * the undelivered remainder written as an SPWC file (G6). Declined before the drainer is
   * installed; empty after recovery.
   */
  checkpoint(id: number, options?: { out?: string }): Promise<CheckpointResult>;
  /** Cancels the task; `done` then rejects with a `CancelledError` after cleanup. */
  cancel(reason?: string): void;
}

/**
 * Recovers the channel state in `options.checkpoint` into `options.channels`, as an XState task
 * actor with fetch, gap and drain stages.
 *
 * @example
 * ```ts
 * import { recoverChannelState } from 'spillway';
 *
 * await using recovery = recoverChannelState({
 *   checkpoint: 'job-42.spwc',
 *   channels: ({ gate, channel }) => ({
 *     onBuffer: (buf) => sink(gate, channel).write(buf),
 *     onFinished: () => sink(gate, channel).end(),
 *   }),
 * });
 * const report = await recovery.done; // every spill file is gone by now
 * console.log(report.bytesDelivered);
 * ```
 */
export function recoverChannelState(options: RecoverOptions): Recovery {
  const started = performance.now();
  const taskId = options.taskId ?? randomBytes(4).toString('hex');
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

  const spillRoot = SpillRoot.open(resolveSpillRoot(options.spillRoot));
  // Surfaces through the fetch stage; do not let an unused rejection crash the process.
  spillRoot.catch(() => undefined);

  const services: TaskServices = {
    taskId,
    checkpoint: options.checkpoint,
    taskDir: async () => (await spillRoot).taskDirPath(taskId),
    limits: options.limits ?? {},
    channels: options.channels,
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
    ...(options.inspect ? { inspect: options.inspect } : {}),
  });

  const ended = new Promise<void>((resolve) => {
    actor.subscribe({ complete: () => resolve(), error: () => resolve() });
  });

  const done = ended.then(async () => {
    await closeResources();
    const snapshot = actor.getSnapshot();
    const ctx = snapshot.context;
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

  const cancel = (reason?: string) => {
    if (actor.getSnapshot().status === 'active') actor.send({ type: 'CANCEL', reason });
  };
  const onAbort = () => cancel(String(options.signal?.reason ?? 'aborted'));
  if (options.signal?.aborted) queueMicrotask(onAbort);
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  void done
    .finally(() => options.signal?.removeEventListener('abort', onAbort))
    .catch(() => undefined);

  actor.start();

  return {
    actor,
    taskId,
    done,
    cancel,
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
  ctx: ReturnType<TaskActor['getSnapshot']>['context'],
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
  };
}
