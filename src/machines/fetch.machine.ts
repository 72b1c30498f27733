/** Stage 1 of recovery: stream the checkpoint into spill files and hand the sealed state on. */
import { assign, fromPromise, setup } from 'xstate';
import { fetchToSpill, type FetchReport } from '../services/spill/fetch-stage.ts';
import type { FetchedChannelState } from '../services/spill/fetched-state.ts';
import { AbortedError, toError } from '../services/errors.ts';
import type { TaskRef } from './task-ref.ts';
import { ACTOR_IDS } from './actor-ids.ts';
import type { LateErrors, TaskServices } from './task-services.ts';
import { madeOnce } from './made-once.ts';

export interface FetchInput {
  services: TaskServices;
  /** Where an error raised after the stage was stopped goes (never the cause). */
  ending: LateErrors;
  parent: TaskRef;
}

/** The stage's output: what it spilled and read (its state went to the task by event). */
export type FetchOutput = FetchReport;

/**
 * The two rules the spill actor keeps, as parts rather than switches: the product composes its
 * actor from {@link spillRules}; the model suite's mutation check (test code) hands in one broken
 * part, so a mutant can never drift from the real actor in anything but that one rule.
 */
export interface SpillRules {
  /** G3: the signal the writer stops on. */
  writerSignal(stage: AbortSignal): AbortSignal;
  /** G2: hands the task dir to the task (`handOff`) the instant the writer acquires it. */
  taskDirAcquired(handOff: () => void): void;
  /**
   * G2: state sealed after the task ended has no taker, so it is closed here (and the stage
   * fails); returning instead sends it on as the stage's hand-off.
   */
  sealedAfterEnding(state: FetchedChannelState): Promise<void>;
}

/** The product's rules: the task dir handed off at acquisition, the stage's own abort signal. */
export const spillRules: SpillRules = {
  writerSignal: (stage) => stage,
  taskDirAcquired: (handOff) => handOff(),
  async sealedAfterEnding(state) {
    await state.close();
    throw new AbortedError('fetch finished after its task ended; state discarded');
  },
};

/**
 * The fetch stage's actor. Runs on the channel-IO executor. Hands the task dir to the task the
 * instant the writer acquires it (before the first file), and the sealed state the instant it
 * exists: a promise actor's result is dropped after stop, so nothing may wait for the stage's
 * output.
 */
export function createSpillCheckpoint(rules: SpillRules) {
  return fromPromise<FetchOutput, FetchInput>(async ({ input, signal }) => {
    const { services, ending, parent } = input;
    try {
      const taskDir = await services.taskDir();
      const result = await services.executor.submit(ACTOR_IDS.fetch, () =>
        fetchToSpill({
          checkpoint: services.checkpoint,
          taskDir,
          fs: services.fs,
          limits: services.limits,
          rescale: services.rescale,
          flink: services.flink,
          progress: services.progress,
          remote: {
            ...services.remote,
            onRetry: (info) => {
              services.remote?.onRetry?.(info);
              // An event the task ignores, so the inspector shows each retry where it happened.
              parent.send({ type: 'FETCH.RETRY', ...info });
            },
          },
          signal: rules.writerSignal(signal),
          onFailure: (error) => {
            // The cause reaches the task before the stage's cleanup awaits anything.
            if (!signal.aborted) parent.send({ type: 'FAIL', error: toError(error) });
          },
          onTaskDirAcquired: (writer) => {
            // Aborted: the writer's own flag is set too, so it will not create the dir.
            if (signal.aborted) return;
            rules.taskDirAcquired(() => {
              services.progress.taskDir = taskDir;
              parent.send({
                type: 'SPILL.OWNED',
                resource: 'taskDir',
                owner: 'fetch',
                closeable: { close: () => writer.discardSpilledFiles() },
                detail: taskDir,
              });
            });
          },
        }),
      );
      // The task ended while the state was being sealed: nobody can take it.
      if (signal.aborted) await rules.sealedAfterEnding(result.state);
      parent.send({
        type: 'FETCH.HANDOFF',
        state: result.state,
        spillFiles: result.spillFiles,
        spilledBytes: result.spilledBytes,
      });
      const { state: _handedOff, ...output } = result;
      return output;
    } catch (error) {
      if (signal.aborted) ending.lateError(error);
      throw error;
    }
  });
}

/** The product's spill actor: both rules kept. */
export const spillCheckpoint = createSpillCheckpoint(spillRules);

function createFetchMachine() {
  return setup({
    types: {} as {
      input: FetchInput;
      context: FetchInput & { output?: FetchOutput };
      output: FetchOutput;
    },
    actors: { spillCheckpoint },
  }).createMachine({
    id: ACTOR_IDS.fetch,
    description: 'Stage 1: checkpoint → spill files, on the channel-IO executor.',
    context: ({ input }) => input,
    initial: 'spilling',
    states: {
      spilling: {
        description:
          'Reads the checkpoint and spills it. The task dir is handed to the task before it exists; a failure discards it here (rows F1–F4).',
        invoke: {
          id: 'spill',
          src: 'spillCheckpoint',
          input: ({ context }) => ({
            services: context.services,
            ending: context.ending,
            parent: context.parent,
          }),
          onDone: {
            target: 'handedOff',
            actions: assign({ output: ({ event }) => event.output }),
          },
          // No onError: the failure propagates to the task as xstate.error.actor.fetch.
        },
      },
      handedOff: {
        description: 'The fetched state was sent to the task (FETCH.HANDOFF).',
        type: 'final',
      },
    },
    output: ({ context }) => context.output!,
  });
}

/** The type of {@link fetchMachineOnce}'s machine (`fetchMachine` in `spillway/machines`). */
export type FetchMachine = ReturnType<typeof createFetchMachine>;

/** The machine, made on its first call (see {@link madeOnce}): the same object after. */
export const fetchMachineOnce: () => FetchMachine = madeOnce(createFetchMachine);
