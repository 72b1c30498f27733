/**
 * The task's backstop as an actor: it tells the task's ending (services/task-ending.ts) each
 * ownership move, and starts its close from its disposer. XState runs no exit actions on a bare
 * `actor.stop()`, but it always runs a `fromCallback` disposer, so this is what makes G1 hold
 * for a stopped actor.
 */
import { fromCallback } from 'xstate';
import type { TaskEnding } from '../services/task-ending.ts';
import type { RegistryEvent } from './events.ts';

export interface RegistryActorInput {
  /** The task's ending: its registry, its (idempotent) close. */
  ending: Pick<TaskEnding, 'own' | 'disown' | 'close'>;
}

export const registryActor = fromCallback<RegistryEvent, RegistryActorInput>(
  ({ input, receive }) => {
    // The registry keys each entry by its resource id: the task's ownership map and the
    // registry are the only two records of who holds what, both fed by the same moves.
    receive((event) => {
      if (event.type === 'close') void input.ending.close();
      else if (event.type === 'own') input.ending.own(event.resource, event.closeable);
      else input.ending.disown(event.resource);
    });
    // Synchronous disposer, asynchronous close: the promise is kept by the ending and awaited
    // by `done`, so the close is tracked, not fire-and-forget.
    return () => void input.ending.close();
  },
);
