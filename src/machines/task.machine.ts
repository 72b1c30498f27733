/**
 * The task lifecycle: fetch → gap → drain → running, and the three endings. It owns the
 * registry (the resourceCloser) and records, in `context.ownership`, which actor owns each
 * spill resource at every instant (G2).
 *
 * One file on purpose (~410 lines): the statechart is one `setup(...).createMachine(...)`
 * definition; the ownership maths its named actions call live in ownership.ts.
 */
import { assign, enqueueActions, setup, type SnapshotFrom } from 'xstate';
import { CancelledError, CheckpointDeclinedError, toError } from '../services/errors.ts';
import type { Closeable } from '../services/registry.ts';
import { TaskEnding } from '../services/task-ending.ts';
import type { Drainer, DrainReport } from '../services/spill/drainer.ts';
import type { FetchedChannelState } from '../services/spill/fetched-state.ts';
import type { SpillReader } from '../services/spill/spill-reader.ts';
import type {
  CheckpointEvent,
  CheckpointReply,
  OwnerId,
  RegistryEvent,
  ResourceId,
  TaskEvent,
} from './events.ts';
import {
  adoptDrainer,
  adoptSnapshotReader,
  checkpointOwner,
  handOffFetchedState,
  holdsSnapshot,
  leftovers,
  passToDrain,
  releaseResource,
  takeTaskDir,
  type Ownership,
  type OwnershipMove,
} from './ownership.ts';
import { fetchMachineOnce, type FetchOutput } from './fetch.machine.ts';
import { gapMachineOnce } from './gap.machine.ts';
import { drainMachineOnce } from './drain.machine.ts';
import { registryActor } from './registry.actor.ts';
import { checkpointWriter } from './checkpoint-writer.actor.ts';
import { ACTOR_IDS } from './actor-ids.ts';
import type { TaskServices } from './task-services.ts';
import { ENDINGS, STAGE_TAGS, type StageTag } from '../services/stage.ts';
import { remainderFormat } from '../services/rescale/rescale-options.ts';
import { madeOnce } from './made-once.ts';

export interface TaskInput {
  services: TaskServices;
  /** End in `finished` as soon as recovery is done and no checkpoint writer is busy (default). */
  autoFinish?: boolean;
}

export type Outcome = (typeof ENDINGS)[number];

export interface TaskContext {
  services: TaskServices;
  autoFinish: boolean;
  /** resource → the actor that owns it now. A resource is absent once it is closed. */
  ownership: Ownership;
  /** Resources the registry closed when the task ended (not released by their owner). */
  closedByRegistry: ResourceId[];
  state: FetchedChannelState | undefined;
  drainer: Drainer | undefined;
  trigger: 'not-ready' | 'drainer';
  fetch: FetchOutput | undefined;
  drain: DrainReport | undefined;
  checkpoints: number;
  /** The first real cause of a failure or cancellation (G5). */
  cause: Error | undefined;
  /**
   * The task's ending (services/task-ending.ts): its registry, the close, and the errors that
   * come after the cause. Made with the actor; this machine is its only owner.
   */
  ending: TaskEnding;
}

/**
 * A release that closed the state's last grant without error: its delete has finished (the
 * owner's close awaits it), so the files are gone.
 */
const stateDeleted = (context: TaskContext, error: Error | undefined): boolean =>
  context.state?.isClosed === true && error === undefined;

/** The part of `enqueueActions`' enqueuer an ownership move uses (xstate does not export it). */
interface MoveEnqueuer {
  assign(assignment: { ownership: Ownership }): void;
  sendTo(target: 'registry', message: RegistryEvent): void;
}

/** One ownership move: the new map, and the same move told to the registry actor. */
function applyMove(enqueue: MoveEnqueuer, move: OwnershipMove): void {
  enqueue.assign({ ownership: move.ownership });
  for (const message of move.registry) enqueue.sendTo('registry', message);
}

/**
 * The cause of a cancelled task: an AbortError-style `CancelledError` whose `cause` is the very
 * reason given (`signal.reason`, the argument of `cancel(reason)`), kept as the object it is.
 */
function cancellation(reason: unknown): CancelledError {
  const said =
    reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : undefined;
  return new CancelledError(`task cancelled${said ? `: ${said}` : ''}`, {
    ...(reason !== undefined ? { cause: reason } : {}),
  });
}

/** A stage's failure becomes the cause unless an earlier one is (G5). */
const STAGE_ERROR = {
  type: 'recordStageError',
  params: ({ event }: { event: { error: unknown } }) => ({ error: event.error }),
} as const;

/** The task machine (`taskMachine` in `spillway/machines`, where its use is shown). */
function createTaskMachine() {
  return setup({
    types: {} as {
      input: TaskInput;
      context: TaskContext;
      events: TaskEvent;
      tags: StageTag;
    },
    actors: {
      registryActor,
      fetchMachine: fetchMachineOnce(),
      gapMachine: gapMachineOnce(),
      drainMachine: drainMachineOnce(),
      checkpointWriter,
    },
    actions: {
      /**
       * The resourceCloser: starts closing the registry. Never throws (it only starts a promise
       * that `done` awaits), and a second call is a no-op. It goes through the registry actor's
       * mailbox rather than closing directly: `sendTo` runs deferred, after the transition, so a
       * direct close here would snapshot the registry before the `own`/`disown` messages of the
       * same macrostep arrive (a reader released by SPILL.RELEASED in the step that ends the task
       * would be closed a second time by the registry, its failure reported twice).
       */
      resourceCloser: enqueueActions(({ enqueue }) =>
        enqueue.sendTo('registry', { type: 'close' } satisfies RegistryEvent),
      ),
      /** Whatever is still owned as the task ends is the registry's to close. */
      recordLeftovers: assign({
        closedByRegistry: ({ context }) => leftovers(context.ownership),
        ownership: () => ({}),
      }),
      takeTaskDir: enqueueActions(
        ({ context, enqueue }, params: { owner: OwnerId; closeable: Closeable }) =>
          applyMove(enqueue, takeTaskDir(context.ownership, params.owner, params.closeable)),
      ),
      handOffFetchedState: enqueueActions(
        ({ context, enqueue }, params: { state: FetchedChannelState }) => {
          enqueue.assign({ state: params.state });
          applyMove(enqueue, handOffFetchedState(context.ownership, params.state));
        },
      ),
      adoptDrainer: enqueueActions(({ context, enqueue }, params: { drainer: Drainer }) => {
        enqueue.assign({ drainer: params.drainer });
        applyMove(enqueue, adoptDrainer(context.ownership, params.drainer));
      }),
      markTriggerInstalled: assign({ trigger: 'drainer' as const }),
      passToDrain: assign({ ownership: ({ context }) => passToDrain(context.ownership) }),
      adoptSnapshotReader: enqueueActions(
        ({ context, enqueue }, params: { checkpointId: number; reader: SpillReader }) =>
          applyMove(
            enqueue,
            adoptSnapshotReader(context.ownership, params.checkpointId, params.reader),
          ),
      ),
      releaseResource: enqueueActions(
        ({ context, enqueue }, params: { resource: ResourceId; error: Error | undefined }) => {
          const { resource, error } = params;
          applyMove(
            enqueue,
            releaseResource(
              context.ownership,
              resource,
              error !== undefined,
              stateDeleted(context, error),
            ),
          );
          // Row C1: a failed close is the task's failure if it otherwise finishes.
          if (error !== undefined) enqueue(() => context.ending.cleanupFailed(error));
        },
      ),
      startCheckpointWriter: enqueueActions(
        ({ context, enqueue, self }, params: Omit<CheckpointEvent, 'type'>) => {
          enqueue.assign({ checkpoints: context.checkpoints + 1 });
          enqueue.spawnChild('checkpointWriter', {
            id: checkpointOwner(params.checkpointId),
            input: {
              parent: self,
              drainer: context.drainer!,
              checkpointId: params.checkpointId,
              out: params.out,
              signal: params.signal,
              reply: params.reply,
              remainder: remainderFormat(context.services.rescale),
              s3: context.services.remote?.s3,
              ending: context.ending,
            },
          });
        },
      ),
      /** Before the drainer is installed the trigger is NOT_READY: the checkpoint is declined. */
      declineCheckpoint: (_, params: { checkpointId: number; reply: CheckpointReply }) =>
        params.reply.reject(
          new CheckpointDeclinedError(params.checkpointId, 'recovery trigger not ready'),
        ),
      recordFetchOutput: assign({ fetch: (_, params: { output: FetchOutput }) => params.output }),
      recordDrainReport: assign({ drain: (_, params: { report: DrainReport }) => params.report }),
      recordStageError: assign({
        cause: ({ context }, params: { error: unknown }) => context.cause ?? toError(params.error),
      }),
      recordCancel: assign({
        cause: ({ context }, params: { reason: unknown }) =>
          context.cause ?? cancellation(params.reason),
      }),
      recordFailure: assign({
        cause: ({ context }, params: { error: Error }) => context.cause ?? params.error,
      }),
    },
    guards: {
      triggerInstalled: ({ context }) => context.trigger === 'drainer',
      readyToFinish: ({ context }) => context.autoFinish && !holdsSnapshot(context.ownership),
    },
  }).createMachine({
    id: 'task',
    description: 'One recovering task: fetch → gap → drain, then running until it ends.',
    context: ({ input }) => ({
      services: input.services,
      autoFinish: input.autoFinish ?? true,
      ownership: {},
      closedByRegistry: [],
      state: undefined,
      drainer: undefined,
      trigger: 'not-ready',
      fetch: undefined,
      drain: undefined,
      checkpoints: 0,
      cause: undefined,
      ending: new TaskEnding(input.services),
    }),
    // Root-level, so it lives exactly as long as the task; its disposer is the backstop for a
    // bare actor.stop(), where no exit action runs.
    invoke: {
      id: 'registry',
      src: 'registryActor',
      input: ({ context }) => ({ ending: context.ending }),
    },
    initial: 'alive',
    states: {
      alive: {
        description:
          'Every ending leaves this state, so its exit action (the resourceCloser) closes whatever the stages did not release.',
        exit: ['resourceCloser', 'recordLeftovers'],
        on: {
          'SPILL.OWNED': {
            actions: {
              type: 'takeTaskDir',
              params: ({ event }) => ({ owner: event.owner, closeable: event.closeable }),
            },
          },
          'FETCH.HANDOFF': {
            actions: {
              type: 'handOffFetchedState',
              params: ({ event }) => ({ state: event.state }),
            },
          },
          'DRAINER.READY': {
            actions: { type: 'adoptDrainer', params: ({ event }) => ({ drainer: event.drainer }) },
          },
          'TRIGGER.INSTALLED': { actions: 'markTriggerInstalled' },
          'SNAPSHOT.OWNED': {
            actions: {
              type: 'adoptSnapshotReader',
              params: ({ event }) => ({ checkpointId: event.checkpointId, reader: event.reader }),
            },
          },
          'SPILL.RELEASED': {
            actions: {
              type: 'releaseResource',
              params: ({ event }) => ({ resource: event.resource, error: event.error }),
            },
          },
          CHECKPOINT: [
            {
              guard: 'triggerInstalled',
              actions: {
                type: 'startCheckpointWriter',
                params: ({ event }) => ({
                  checkpointId: event.checkpointId,
                  out: event.out,
                  signal: event.signal,
                  reply: event.reply,
                }),
              },
            },
            {
              description: 'Before the drainer is installed the trigger is NOT_READY: decline.',
              actions: {
                type: 'declineCheckpoint',
                params: ({ event }) => ({ checkpointId: event.checkpointId, reply: event.reply }),
              },
            },
          ],
          CANCEL: {
            target: 'cancelled',
            actions: { type: 'recordCancel', params: ({ event }) => ({ reason: event.reason }) },
          },
          FAIL: {
            target: 'failed',
            actions: { type: 'recordFailure', params: ({ event }) => ({ error: event.error }) },
          },
        },
        initial: 'restoring',
        states: {
          restoring: {
            description: 'Recovering channel state: the three stages in order.',
            initial: 'fetching',
            states: {
              fetching: {
                description: 'Stage 1 (fetch machine): checkpoint → spill files.',
                tags: ['fetch'],
                invoke: {
                  id: ACTOR_IDS.fetch,
                  src: 'fetchMachine',
                  input: ({ context, self }) => ({
                    services: context.services,
                    ending: context.ending,
                    parent: self,
                  }),
                  onDone: {
                    target: 'gap',
                    actions: {
                      type: 'recordFetchOutput',
                      params: ({ event }) => ({ output: event.output }),
                    },
                  },
                  onError: { target: '#task.failed', actions: STAGE_ERROR },
                },
              },
              gap: {
                description: 'Stage 2 (gap machine): mailbox mails build and install the drainer.',
                tags: ['gap'],
                invoke: {
                  id: ACTOR_IDS.gap,
                  src: 'gapMachine',
                  input: ({ context, self }) => ({
                    services: context.services,
                    ending: context.ending,
                    parent: self,
                    state: context.state!,
                  }),
                  onDone: { target: 'draining', actions: 'passToDrain' },
                  onError: { target: '#task.failed', actions: STAGE_ERROR },
                },
              },
              draining: {
                description: 'Stage 3 (drain machine): spill files → channels.',
                tags: ['drain'],
                invoke: {
                  id: ACTOR_IDS.drain,
                  src: 'drainMachine',
                  input: ({ context, self }) => ({
                    services: context.services,
                    ending: context.ending,
                    parent: self,
                    state: context.state!,
                    drainer: context.drainer!,
                  }),
                  onDone: {
                    target: '#task.alive.running',
                    actions: {
                      type: 'recordDrainReport',
                      params: ({ event }) => ({ report: event.output }),
                    },
                  },
                  onError: { target: '#task.failed', actions: STAGE_ERROR },
                },
              },
            },
          },
          running: {
            description:
              'Recovered. Ends on FINISH, or by itself once no checkpoint writer is busy.',
            tags: ['running'],
            always: { guard: 'readyToFinish', target: '#task.finished' },
            on: { FINISH: '#task.finished' },
          },
        },
      },
      finished: { type: 'final', description: 'Recovered and ended normally.' },
      failed: { type: 'final', description: 'A stage failed; `cause` is the first real error.' },
      cancelled: { type: 'final', description: 'Cancelled; every resource was closed.' },
    },
  });
}

/** The type of {@link taskMachineOnce}'s machine (`taskMachine` in `spillway/machines`). */
export type TaskMachine = ReturnType<typeof createTaskMachine>;

/** The machine, made on its first call (see {@link madeOnce}): the same object after. */
export const taskMachineOnce: () => TaskMachine = madeOnce(createTaskMachine);

/**
 * The stage a task snapshot is in, read from its state tags: `'fetch'`, `'gap'`, `'drain'`,
 * `'running'` (recovered), or undefined once it has ended.
 *
 * @example
 * ```ts
 * recovery.actor.subscribe((snapshot) => console.log(stageOf(snapshot)));
 * ```
 */
export function stageOf(snapshot: SnapshotFrom<TaskMachine>): StageTag | undefined {
  for (const tag of STAGE_TAGS) {
    if (snapshot.hasTag(tag)) return tag;
  }
  return undefined;
}
