/** Stage 3 of recovery: drain the spilled bytes into the input channels. */
import { assign, fromPromise, setup } from 'xstate';
import type { DrainReport, Drainer } from '../services/spill/drainer.ts';
import type { FetchedChannelState } from '../services/spill/fetched-state.ts';
import { addSuppressed, toError } from '../services/errors.ts';
import type { TaskRef } from './task-ref.ts';
import { ACTOR_IDS } from './actor-ids.ts';
import type { LateErrors, TaskServices } from './task-services.ts';
import { madeOnce } from './made-once.ts';

export interface DrainInput {
  services: TaskServices;
  /** Where an error raised after the stage was stopped goes (never the cause). */
  ending: LateErrors;
  parent: TaskRef;
  state: FetchedChannelState;
  drainer: Drainer;
}

/**
 * Runs on the channel-IO executor (a shut-down executor rejects it: row D1). Releases the
 * hand-off grant exactly once as it starts, drains, and closes the drainer on every path; a
 * cancelled drain stops at its next buffer and the state's fence turns reads into AbortedError.
 */
export const drainChannels = fromPromise<DrainReport, DrainInput>(async ({ input, signal }) => {
  const { services, ending, drainer, parent } = input;
  const onAbort = () => drainer.stop();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await services.executor.submit(ACTOR_IDS.drain, async () => {
      let report: DrainReport;
      try {
        await input.state.release(); // the hand-off grant
        report = await drainer.drain();
      } catch (error) {
        // Report before the cleanup awaits anything: a cancel arriving meanwhile must not
        // become the cause (G5).
        if (!signal.aborted) parent.send({ type: 'FAIL', error: toError(error) });
        await drainer.close().catch((e) => addSuppressed(toError(error), e));
        throw error;
      }
      await drainer.close();
      if (!signal.aborted) parent.send({ type: 'SPILL.RELEASED', resource: 'drainer' });
      return report;
    });
  } catch (error) {
    if (signal.aborted) ending.lateError(error);
    throw error;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
});

function createDrainMachine() {
  return setup({
    types: {} as {
      input: DrainInput;
      context: DrainInput & { report?: DrainReport };
      output: DrainReport;
    },
    actors: { drainChannels },
  }).createMachine({
    id: ACTOR_IDS.drain,
    description: 'Stage 3: spill files → channels, on the channel-IO executor.',
    context: ({ input }) => input,
    initial: 'draining',
    states: {
      draining: {
        description:
          'Delivers every segment in buffer-sized chunks, then finishes every channel once; checkpoints cut it exactly (G6).',
        invoke: {
          id: 'drainChannels',
          src: 'drainChannels',
          input: ({ context }) => context,
          onDone: { target: 'drained', actions: assign({ report: ({ event }) => event.output }) },
        },
      },
      drained: {
        description: 'Every channel finished; the drainer is closed and its grant returned.',
        type: 'final',
      },
    },
    output: ({ context }) => context.report!,
  });
}

/** The type of {@link drainMachineOnce}'s machine (`drainMachine` in `spillway/machines`). */
export type DrainMachine = ReturnType<typeof createDrainMachine>;

/** The machine, made on its first call (see {@link madeOnce}): the same object after. */
export const drainMachineOnce: () => DrainMachine = madeOnce(createDrainMachine);
