/**
 * How a stage reaches its task: a typed actor ref (kept apart from ./events.ts, whose plain
 * event types are part of the public API and must not drag XState's types into it).
 */
import type { ActorRef, Snapshot } from 'xstate';
import type { TaskEvent } from './events.ts';

/**
 * What a child holds to hand resources to the task: a typed ref, so sending an event the task
 * does not know fails `tsc` (unlike `sendParent`).
 */
export type TaskRef = ActorRef<Snapshot<unknown>, TaskEvent>;
