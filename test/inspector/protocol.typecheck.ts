/**
 * Compile-time checks (tsc, not vitest): the inspector's view of a task context, typed from
 * XState-free types so that `spillway/inspector`'s declarations stay free of XState's, still
 * matches the task machine's real context field by field.
 */
import type { TaskContext } from '../../src/machines/task.machine.ts';
import type { TaskContextView } from '../../inspector/protocol.ts';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const checks: {
  ownership: Same<NonNullable<TaskContextView['ownership']>, Readonly<TaskContext['ownership']>>;
  closedByRegistry: Same<
    NonNullable<TaskContextView['closedByRegistry']>,
    readonly TaskContext['closedByRegistry'][number][]
  >;
  trigger: Same<NonNullable<TaskContextView['trigger']>, TaskContext['trigger']>;
  checkpoints: Same<NonNullable<TaskContextView['checkpoints']>, TaskContext['checkpoints']>;
} = { ownership: true, closedByRegistry: true, trigger: true, checkpoints: true };
// A real context is a view (the fields the page reads are all there, with their types).
const view = (context: TaskContext): TaskContextView => ({
  ownership: context.ownership,
  closedByRegistry: context.closedByRegistry,
  checkpoints: context.checkpoints,
  trigger: context.trigger,
  ...(context.fetch ? { fetch: context.fetch } : {}),
  ...(context.drain ? { drain: context.drain } : {}),
});
void checks;
void view;
