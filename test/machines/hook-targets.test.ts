/**
 * Task hooks attach by actor id (src/machines/actor-ids.ts): each hook names the actor whose
 * mail or job it wraps, and a hook whose actor the machine does not invoke fails loudly — a
 * renamed actor must never leave a test's fault silently un-injected.
 */
import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { taskMachine } from '../../src/machines.ts';
import { HOOK_TARGETS, checkHookTargets } from '../../src/machines/task-hooks.ts';
import { startRecoveryOn } from '../../src/recover.ts';
import { InternalError } from '../../src/services/errors.ts';

describe('task hooks attach by actor id', () => {
  it('every hook target names an actor the task machine invokes', () => {
    expect(Object.keys(HOOK_TARGETS).sort()).toEqual(['drain', 'drainerBuilt', 'fetch', 'gap']);
    expect(() => checkHookTargets(taskMachine)).not.toThrow();
  });

  it('a hook attached to an id that does not exist fails loudly, naming the hook and the id', () => {
    const check = () => checkHookTargets(taskMachine, { beforeGap: ['gap', 'requestPartition'] });
    expect(check).toThrow(InternalError);
    expect(check).toThrow(
      "task hook 'beforeGap' is attached to actor 'gap.requestPartition', which the task machine does not invoke",
    );
    expect(() => checkHookTargets(taskMachine, { stage: ['fetching'] })).toThrow(/'fetching'/);
  });

  it('a recovery with hooks on a machine whose gap no longer invokes the hooked actors is refused before it starts', () => {
    // A variant made with XState's provide, as the model suite's mutants are: the gap stage is
    // replaced by one that posts no mail, so the gap's hooks could never run.
    const emptyGap = setup({}).createMachine({
      id: 'gap',
      initial: 'ready',
      states: { ready: { type: 'final' } },
    });
    const machine = taskMachine.provide({
      actors: { gapMachine: emptyGap as unknown as typeof taskMachine },
    } as unknown as Parameters<typeof taskMachine.provide>[0]);
    const start = () =>
      startRecoveryOn(machine, {
        checkpoint: 'never-read.spwc',
        channels: () => ({ onBuffer() {}, onFinished() {} }),
        hooks: { beforeStage() {} },
      });
    expect(start).toThrow(/attached to actor 'gap\.requestPartitions'/);
  });
});
