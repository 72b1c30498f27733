/**
 * Deliberately broken task machines (test code, never product code): the mutation check runs the
 * model oracle against each and requires it to fail on at least one path, proving the oracle can
 * fail. Each mutant breaks exactly one thing the design depends on.
 */
import { fromCallback, setup, type CallbackLogicFunction } from 'xstate';
import { fetchMachine, taskMachine } from '../../src/machines.ts';
import {
  createSpillCheckpoint,
  spillRules,
  type SpillRules,
} from '../../src/machines/fetch.machine.ts';
import { registryActor, type RegistryActorInput } from '../../src/machines/registry.actor.ts';
import type { RegistryEvent } from '../../src/machines/events.ts';

export interface Mutant {
  readonly name: string;
  readonly machine: typeof taskMachine;
}

/**
 * The registry actor with its disposer emptied: it still keeps the registry, but a bare
 * `actor.stop()` (where no exit action runs) no longer hands everything to the backstop.
 */
function registryWithoutDisposer() {
  // The product's own receive logic, so only the disposer differs.
  const original = (registryActor as unknown as { config: CallbackLogicFunction<RegistryEvent> })
    .config;
  return fromCallback<RegistryEvent, RegistryActorInput>((args) => {
    void original(args as Parameters<typeof original>[0]);
    return () => {};
  });
}

/** The task machine whose spill actor is the product's with `broken` in place of its rules. */
function withSpillActor(broken: Partial<SpillRules>): typeof taskMachine {
  return taskMachine.provide({
    actors: {
      fetchMachine: fetchMachine.provide({
        actors: { spillCheckpoint: createSpillCheckpoint({ ...spillRules, ...broken }) },
      }),
    },
  });
}

/** The task machine rebuilt from its own config and implementations with CANCEL → failed. */
function cancelMappedToFailed(): typeof taskMachine {
  const config = taskMachine.config as unknown as {
    states: { alive: { on: Record<string, unknown> } & Record<string, unknown> };
  } & Record<string, unknown>;
  const alive = config.states.alive;
  const mutated = {
    ...config,
    states: {
      ...config.states,
      alive: {
        ...alive,
        on: { ...alive.on, CANCEL: { target: '#task.failed', actions: 'recordCancel' } },
      },
    },
  };
  const impl = taskMachine.implementations;
  return setup({
    actors: impl.actors,
    actions: impl.actions,
    guards: impl.guards,
  } as unknown as Parameters<typeof setup>[0]).createMachine(
    mutated as never,
  ) as unknown as typeof taskMachine;
}

/** The four mutants the issue names. */
export function mutants(): Mutant[] {
  return [
    {
      name: 'registry disposer emptied',
      machine: taskMachine.provide({ actors: { registryActor: registryWithoutDisposer() } }),
    },
    {
      name: "hand-off moved to the stage's final output",
      // The task dir is never handed off as acquired; state sealed after the ending goes out
      // as the stage's output instead of being closed here.
      machine: withSpillActor({ taskDirAcquired: () => {}, sealedAfterEnding: async () => {} }),
    },
    { name: 'CANCEL mapped to failed', machine: cancelMappedToFailed() },
    {
      name: 'abort flag ignored',
      // The writer gets a signal that never aborts.
      machine: withSpillActor({ writerSignal: () => new AbortController().signal }),
    },
  ];
}
