/** Stage 2 of recovery: the mailbox steps between fetch and drain. */
import { assign, fromPromise, setup } from 'xstate';
import { Drainer } from '../services/spill/drainer.ts';
import { type ChannelConsumer } from '../services/channel.ts';
import { channelId } from '../services/channel.ts';
import { type FetchedChannelState } from '../services/spill/fetched-state.ts';
import { AbortedError, toError } from '../services/errors.ts';
import type { TaskRef } from './task-ref.ts';
import { ACTOR_IDS } from './actor-ids.ts';
import type { LateErrors, TaskServices } from './task-services.ts';
import { madeOnce } from './made-once.ts';

export interface GapInput {
  services: TaskServices;
  /** Where an error raised after the stage was stopped goes (never the cause). */
  ending: LateErrors;
  parent: TaskRef;
  state: FetchedChannelState;
}

export interface GapContext extends GapInput {
  consumers?: Map<number, ChannelConsumer>;
}

/**
 * Runs one gap step as a mail. A closed mailbox rejects it (row GAP2); a closing one drops it and
 * its promise never settles (row GAP3): the task's registry already owns the state, so nothing
 * here has to be cleaned up by this actor.
 */
function mail<T>(input: GapInput, name: string, signal: AbortSignal, body: () => T) {
  return input.services.mailbox
    .execute(name, () => {
      if (signal.aborted) throw new AbortedError(`${name}: gap stage already stopped`);
      return body();
    })
    .catch((error: unknown) => {
      if (signal.aborted) input.ending.lateError(error);
      throw error;
    });
}

export const requestPartitions = fromPromise<Map<number, ChannelConsumer>, GapInput>(
  async ({ input, signal }) => {
    return mail(input, ACTOR_IDS.requestPartitions, signal, () => {
      const consumers = new Map<number, ChannelConsumer>();
      for (const info of input.state.channels) {
        consumers.set(channelId(info), input.services.channels(info));
      }
      return consumers;
    });
  },
);

export const buildDrainer = fromPromise<
  void,
  GapInput & { consumers: Map<number, ChannelConsumer> }
>(({ input, signal }) =>
  mail(input, ACTOR_IDS.buildDrainer, signal, () => {
    const drainer = new Drainer(input.state, input.consumers, {
      ...input.services.limits,
      progress: input.services.progress,
      onConsumerError: input.services.consumerError,
      ...(input.services.abandonAfterMs !== undefined
        ? { abandonAfterMs: input.services.abandonAfterMs }
        : {}),
    });
    // Hand-off at acquisition, in the same synchronous step that opened the main reader.
    input.parent.send({ type: 'DRAINER.READY', drainer });
    // Returned for the task's hooks (task-hooks.ts), which run after this body; the actor's
    // output stays empty.
    return drainer;
  }).then(() => undefined),
);

export const installTrigger = fromPromise<void, GapInput>(({ input, signal }) =>
  mail(input, ACTOR_IDS.installTrigger, signal, () => {
    input.parent.send({ type: 'TRIGGER.INSTALLED' });
  }),
);

function createGapMachine() {
  return setup({
    types: {} as { input: GapInput; context: GapContext },
    actors: { requestPartitions, buildDrainer, installTrigger },
    actions: { forgetConsumers: assign({ consumers: undefined }) },
  }).createMachine({
    id: ACTOR_IDS.gap,
    description: 'Stage 2: mailbox mails that turn the fetched state into a live drainer.',
    context: ({ input }) => input,
    initial: 'requestingPartitions',
    states: {
      requestingPartitions: {
        description:
          'Mail: ask the owner for one consumer per channel. A closed mailbox rejects it (row GAP2), a closing one drops it (row GAP3).',
        invoke: {
          id: ACTOR_IDS.requestPartitions,
          src: 'requestPartitions',
          input: ({ context }) => context,
          onDone: {
            target: 'buildingDrainer',
            actions: assign({ consumers: ({ event }) => event.output }),
          },
        },
      },
      buildingDrainer: {
        description:
          'Mail: build the drainer (its main reader takes a grant) and hand it to the task (row GAP4 if it throws).',
        invoke: {
          id: ACTOR_IDS.buildDrainer,
          src: 'buildDrainer',
          input: ({ context }) => ({ ...context, consumers: context.consumers! }),
          // The drainer holds the consumers now; one channel's entry each is plenty (G8).
          onDone: { target: 'installingTrigger', actions: 'forgetConsumers' },
        },
      },
      installingTrigger: {
        description:
          'Mail: make the drainer the checkpoint trigger (row GAP5 if rejected or dropped).',
        invoke: {
          id: ACTOR_IDS.installTrigger,
          src: 'installTrigger',
          input: ({ context }) => context,
          onDone: 'ready',
        },
      },
      ready: {
        description: 'The drainer is installed; drain may start.',
        type: 'final',
      },
    },
  });
}

/** The type of {@link gapMachineOnce}'s machine (`gapMachine` in `spillway/machines`). */
export type GapMachine = ReturnType<typeof createGapMachine>;

/** The machine, made on its first call (see {@link madeOnce}): the same object after. */
export const gapMachineOnce: () => GapMachine = madeOnce(createGapMachine);
