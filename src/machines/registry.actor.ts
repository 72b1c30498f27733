/**
 * The task's backstop as an actor: it keeps the task's registry (Flink's resourceCloser) and
 * closes it from its disposer. XState runs no exit actions on a bare `actor.stop()`, but it
 * always runs a `fromCallback` disposer, so this is what makes G1 hold for a stopped actor.
 */
import { fromCallback } from 'xstate';
import type { CloseableRegistry } from '../services/registry.ts';
import type { RegistryEvent } from './events.ts';

export interface RegistryActorInput {
  registry: CloseableRegistry;
  /** Starts the close (idempotent); the same call the task's exit action makes. */
  closeResources: () => Promise<void>;
}

export const registryActor = fromCallback<RegistryEvent, RegistryActorInput>(
  ({ input, receive }) => {
    // The registry keys each entry by its resource id: the task's ownership map and the
    // registry are the only two records of who holds what, both fed by the same moves.
    receive((event) => {
      if (event.type === 'close') {
        void input.closeResources();
      } else if (event.type === 'own') {
        try {
          input.registry.register(event.closeable, event.resource);
        } catch {
          // Registry already closed (row F5): it closed the argument itself; the task is ending.
        }
      } else {
        input.registry.unregister(event.resource);
      }
    });
    // Synchronous disposer, asynchronous close: the promise is kept by closeResources and
    // awaited by `done`, so the close is tracked, not fire-and-forget.
    return () => void input.closeResources();
  },
);
