/**
 * The task lifecycle: fetch → gap → drain → running, and the three endings. It owns the
 * registry (the resourceCloser) and records, in `context.ownership`, which actor owns each
 * spill resource at every instant (G2).
 */
import { assign, enqueueActions, setup, type DoneActorEvent } from 'xstate';
import { CancelledError, toError } from '../services/errors.ts';
import type { Drainer, DrainReport } from '../services/spill/drainer.ts';
import type { FetchedChannelState } from '../services/spill/fetched-state.ts';
import type { OwnerId, RegistryEvent, ReleasedEvent, ResourceId, TaskEvent } from './events.ts';
import { fetchMachine, type FetchOutput } from './fetch.machine.ts';
import { gapMachine } from './gap.machine.ts';
import { drainMachine } from './drain.machine.ts';
import { registryActor } from './registry.actor.ts';
import { checkpointWriter } from './checkpoint-writer.actor.ts';
import type { TaskServices } from './task-services.ts';

export interface TaskInput {
  services: TaskServices;
  /** End in `finished` as soon as recovery is done and no checkpoint writer is busy (default). */
  autoFinish?: boolean;
}

export type Outcome = 'finished' | 'failed' | 'cancelled';

export interface TaskContext {
  services: TaskServices;
  autoFinish: boolean;
  /** resource → the actor that owns it now. A resource is absent once it is closed. */
  ownership: Partial<Record<ResourceId, OwnerId>>;
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
   * Failed closes its stages reported while letting go of a resource (row C1): the task's
   * failure if it otherwise finishes, suppressed under its cause if not.
   */
  cleanupErrors: Error[];
}

const without = (
  ownership: TaskContext['ownership'],
  ...resources: ResourceId[]
): TaskContext['ownership'] => {
  const next = { ...ownership };
  for (const r of resources) delete next[r];
  return next;
};

const isSnapshotResource = (r: string) => r.startsWith('snapshot-');

/**
 * A release that closed the state's last grant without error: its delete has finished (the
 * owner's close awaits it), so the files are gone.
 */
const stateDeleted = (context: TaskContext, event: ReleasedEvent): boolean =>
  context.state?.isClosed === true && event.error === undefined;

export const taskMachine = setup({
  types: {} as {
    input: TaskInput;
    context: TaskContext;
    events: TaskEvent;
  },
  actors: { registryActor, fetchMachine, gapMachine, drainMachine, checkpointWriter },
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
    recordLeftovers: assign({
      closedByRegistry: ({ context }) => Object.keys(context.ownership) as ResourceId[],
      ownership: () => ({}),
    }),
    recordStageError: assign({
      cause: ({ context, event }) =>
        context.cause ?? ('error' in event ? toError(event.error) : undefined),
    }),
    recordCancel: assign({
      cause: ({ context, event }) =>
        context.cause ??
        new CancelledError(
          `task cancelled${event.type === 'CANCEL' && event.reason ? `: ${event.reason}` : ''}`,
        ),
    }),
    recordFailure: assign({
      cause: ({ context, event }) =>
        context.cause ?? (event.type === 'FAIL' ? event.error : undefined),
    }),
  },
  guards: {
    triggerInstalled: ({ context }) => context.trigger === 'drainer',
    readyToFinish: ({ context }) =>
      context.autoFinish && !Object.keys(context.ownership).some(isSnapshotResource),
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
    cleanupErrors: [],
  }),
  // Root-level, so it lives exactly as long as the task; its disposer is the backstop for a
  // bare actor.stop(), where no exit action runs.
  invoke: {
    id: 'registry',
    src: 'registryActor',
    input: ({ context }) => ({
      registry: context.services.registry,
      closeResources: context.services.closeResources,
    }),
  },
  initial: 'alive',
  states: {
    alive: {
      description:
        'Every ending leaves this state, so its exit action (the resourceCloser) closes whatever the stages did not release.',
      exit: ['resourceCloser', 'recordLeftovers'],
      on: {
        'SPILL.OWNED': {
          actions: [
            assign({
              ownership: ({ context, event }) => ({
                ...context.ownership,
                [event.resource]: event.owner,
              }),
            }),
            enqueueActions(({ event, enqueue }) =>
              enqueue.sendTo('registry', {
                type: 'own',
                resource: event.resource,
                closeable: event.closeable,
              }),
            ),
          ],
        },
        'FETCH.HANDOFF': {
          actions: [
            assign({
              state: ({ event }) => event.state,
              ownership: ({ context }) => ({
                ...without(context.ownership, 'taskDir'),
                fetchedState: 'gap',
              }),
            }),
            enqueueActions(({ event, enqueue }) => {
              // The state now owns the task dir: its forced close deletes it.
              enqueue.sendTo('registry', {
                type: 'own',
                resource: 'fetchedState',
                closeable: { close: () => event.state.close() },
              });
              enqueue.sendTo('registry', { type: 'disown', resource: 'taskDir' });
            }),
          ],
        },
        'DRAINER.READY': {
          actions: [
            assign({
              drainer: ({ event }) => event.drainer,
              ownership: ({ context }) => ({ ...context.ownership, drainer: 'gap' }),
            }),
            enqueueActions(({ event, enqueue }) =>
              enqueue.sendTo('registry', {
                type: 'own',
                resource: 'drainer',
                closeable: event.drainer,
              }),
            ),
          ],
        },
        'TRIGGER.INSTALLED': { actions: assign({ trigger: 'drainer' }) },
        'SNAPSHOT.OWNED': {
          actions: [
            assign({
              ownership: ({ context, event }) => ({
                ...context.ownership,
                [`snapshot-${event.checkpointId}`]: `checkpoint-${event.checkpointId}`,
              }),
            }),
            enqueueActions(({ event, enqueue }) =>
              enqueue.sendTo('registry', {
                type: 'own',
                resource: `snapshot-${event.checkpointId}`,
                closeable: event.reader,
              }),
            ),
          ],
        },
        'SPILL.RELEASED': {
          actions: [
            assign({
              ownership: ({ context, event }) => {
                // The state deletes itself with its last grant: once that delete is done,
                // nobody owns it.
                if (stateDeleted(context, event)) {
                  return without(context.ownership, event.resource, 'fetchedState');
                }
                const next = without(context.ownership, event.resource);
                // The releasing stage is about to end; snapshot grants (or a failed delete)
                // may keep the state alive after it, and then only the task's registry holds it.
                if (
                  next.fetchedState !== undefined &&
                  (event.resource === 'drainer' || event.error !== undefined)
                ) {
                  next.fetchedState = 'task';
                }
                return next;
              },
              cleanupErrors: ({ context, event }) =>
                event.error === undefined
                  ? context.cleanupErrors
                  : [...context.cleanupErrors, event.error],
            }),
            enqueueActions(({ context, event, enqueue }) => {
              enqueue.sendTo('registry', { type: 'disown', resource: event.resource });
              // The registry holds exactly what the ownership map shows: a deleted state needs
              // no backstop, a state whose delete failed keeps it (its close retries).
              if (stateDeleted(context, event)) {
                enqueue.sendTo('registry', { type: 'disown', resource: 'fetchedState' });
              }
            }),
          ],
        },
        CHECKPOINT: [
          {
            guard: 'triggerInstalled',
            actions: [
              assign({ checkpoints: ({ context }) => context.checkpoints + 1 }),
              enqueueActions(({ context, event, enqueue, self }) =>
                enqueue.spawnChild('checkpointWriter', {
                  id: `checkpoint-${event.checkpointId}`,
                  input: {
                    parent: self,
                    drainer: context.drainer!,
                    checkpointId: event.checkpointId,
                    out: event.out,
                    reply: event.reply,
                  },
                }),
              ),
            ],
          },
          {
            description: 'Before the drainer is installed the trigger is NOT_READY: decline.',
            actions: ({ event }) =>
              event.reply.reject(
                new Error(`checkpoint ${event.checkpointId} declined: recovery trigger not ready`),
              ),
          },
        ],
        CANCEL: { target: 'cancelled', actions: 'recordCancel' },
        FAIL: { target: 'failed', actions: 'recordFailure' },
      },
      initial: 'restoring',
      states: {
        restoring: {
          description: 'Recovering channel state: the three stages in order.',
          initial: 'fetching',
          states: {
            fetching: {
              description: 'Stage 1 (fetch machine): checkpoint → spill files.',
              invoke: {
                id: 'fetch',
                src: 'fetchMachine',
                input: ({ context, self }) => ({ services: context.services, parent: self }),
                onDone: {
                  target: 'gap',
                  actions: assign({
                    fetch: ({ event }) => (event as DoneActorEvent<FetchOutput>).output,
                  }),
                },
                onError: { target: '#task.failed', actions: 'recordStageError' },
              },
            },
            gap: {
              description: 'Stage 2 (gap machine): mailbox mails build and install the drainer.',
              invoke: {
                id: 'gap',
                src: 'gapMachine',
                input: ({ context, self }) => ({
                  services: context.services,
                  parent: self,
                  state: context.state!,
                }),
                onDone: {
                  target: 'draining',
                  actions: assign({
                    ownership: ({ context }) => ({
                      ...context.ownership,
                      ...(context.ownership.fetchedState ? { fetchedState: 'drain' as const } : {}),
                      ...(context.ownership.drainer ? { drainer: 'drain' as const } : {}),
                    }),
                  }),
                },
                onError: { target: '#task.failed', actions: 'recordStageError' },
              },
            },
            draining: {
              description: 'Stage 3 (drain machine): spill files → channels.',
              invoke: {
                id: 'drain',
                src: 'drainMachine',
                input: ({ context, self }) => ({
                  services: context.services,
                  parent: self,
                  state: context.state!,
                  drainer: context.drainer!,
                }),
                onDone: {
                  target: '#task.alive.running',
                  actions: assign({
                    drain: ({ event }) => (event as DoneActorEvent<DrainReport>).output,
                  }),
                },
                onError: { target: '#task.failed', actions: 'recordStageError' },
              },
            },
          },
        },
        running: {
          description: 'Recovered. Ends on FINISH, or by itself once no checkpoint writer is busy.',
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
