/**
 * The task's state tree is declared once (services/stage.ts) and the machine is held to it:
 * every public `TaskStateValue` (free of XState's types) is a value of the type XState derives
 * from the task machine itself (a renamed state fails `tsc --noEmit`), and the run checks that
 * the machine has no state the declaration lacks: one restoring state per stage, `running`, and
 * the endings as its final states.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { StateValueFrom } from 'xstate';
import { taskMachine } from '../../src/machines.ts';
import type { Outcome } from '../../src/machines/task.machine.ts';
import type { TaskStateValue } from '../../src/recovery-types.ts';
import { ENDINGS, RESTORING_STATES, STAGE_NAMES } from '../../src/services/stage.ts';

describe('state tree', () => {
  it('every public TaskStateValue is a value of the task machine', () => {
    expectTypeOf<TaskStateValue>().toExtend<StateValueFrom<typeof taskMachine>>();
    expectTypeOf<Outcome>().toEqualTypeOf<(typeof ENDINGS)[number]>();
  });

  it("the machine's states are the declared ones: one restoring state per stage, the endings final", () => {
    const states = taskMachine.root.states;
    const alive = states.alive!;
    const restoring = alive.states.restoring!;
    expect(Object.keys(restoring.states)).toEqual(STAGE_NAMES.map((s) => RESTORING_STATES[s]));
    expect(Object.keys(alive.states)).toEqual(['restoring', 'running']);
    expect(Object.keys(states).filter((k) => states[k]!.type === 'final')).toEqual([...ENDINGS]);
  });
});
