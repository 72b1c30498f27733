/**
 * The task's backstop as an actor: it keeps the task's registry (Flink's resourceCloser) and
 * closes it from its disposer. XState runs no exit actions on a bare `actor.stop()`, but it
 * always runs a `fromCallback` disposer, so this is what makes G1 hold for a stopped actor.
 */
import { fromCallback } from 'xstate';
import type { Closeable, CloseableRegistry } from '../services/registry.ts';
import type { RegistryEvent, ResourceId } from './events.ts';

export interface RegistryActorInput {
  registry: CloseableRegistry;
  /** Starts the close (idempotent); the same call the task's exit action makes. */
  closeResources: () => Promise<void>;
}

export const registryActor = fromCallback<RegistryEvent, RegistryActorInput>(
  ({ input, receive }) => {
    const held = new Map<ResourceId, Closeable>();
    receive((event) => {
      if (event.type === 'close') {
        void input.closeResources();
      } else if (event.type === 'own') {
        held.set(event.resource, event.closeable);
        try {
          input.registry.register(event.closeable);
        } catch {
          // Registry already closed (row F5): it closed the argument itself; the task is ending.
        }
      } else {
        const closeable = held.get(event.resource);
        held.delete(event.resource);
        if (closeable !== undefined) input.registry.unregister(closeable);
      }
    });
    // Synchronous disposer, asynchronous close: the promise is kept by closeResources and
    // awaited by `done`, so the close is tracked, not fire-and-forget.
    return () => void input.closeResources();
  },
);
