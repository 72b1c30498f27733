/// <reference types="node" preserve="true" />
// The declarations use Node's types (Buffer, streams, AsyncDisposable): a consumer whose
// TypeScript loads no @types by default (TS 6+, `types: []`) still compiles against them.
/**
 * `spillway/machines`: the task machine and its parts with their full XState types, for
 * programs that provide their own implementations, inspect definitions, or drive the actor
 * with `createActor` themselves. Its declarations import XState's; a consumer compiling with
 * `exactOptionalPropertyTypes` and `skipLibCheck: false` then also checks XState's own
 * declarations, which do not pass that (see docs/package.md), where `spillway` itself does.
 *
 * @example
 * ```ts
 * import { taskMachine, stageOf } from 'spillway/machines';
 * console.log(taskMachine.id, typeof stageOf);
 * ```
 *
 * @packageDocumentation
 */
import { drainMachineOnce, type DrainMachine } from './machines/drain.machine.ts';
import { fetchMachineOnce, type FetchMachine } from './machines/fetch.machine.ts';
import { gapMachineOnce, type GapMachine } from './machines/gap.machine.ts';
import { taskMachineOnce, type TaskMachine } from './machines/task.machine.ts';

export {
  stageOf,
  type TaskContext,
  type TaskInput,
  type Outcome,
} from './machines/task.machine.ts';

// The machines are made here, when `spillway/machines` is imported; `spillway` itself makes
// them on its first recovery (importing it does not pay for XState building them).
/**
 * The task machine: one recovering task, `alive.restoring` (fetch → gap → drain, each an
 * invoked stage machine) → `alive.running` → `finished`, `failed` or `cancelled`. Every
 * ownership move of a spill resource is a named action over `context.ownership` (G2), and the
 * task's registry closes whatever a stage still holds on any ending (G1).
 * `recoverChannelState()` wires its services; programs driving it themselves use this.
 *
 * @example
 * ```ts
 * import { createActor } from 'xstate';
 * import { taskMachine } from 'spillway/machines';
 *
 * const actor = createActor(taskMachine, { input: { services, autoFinish: true } }).start();
 * actor.subscribe((snapshot) => console.log(snapshot.value, snapshot.context.ownership));
 * ```
 */
export const taskMachine: TaskMachine = taskMachineOnce();
/** Stage 1, fetch: the checkpoint read and spilled (the task machine's `fetchMachine`). */
export const fetchMachine: FetchMachine = fetchMachineOnce();
/** Stage 2, gap: the mailbox steps between fetch and drain (the task machine's `gapMachine`). */
export const gapMachine: GapMachine = gapMachineOnce();
/** Stage 3, drain: the spilled bytes into the channels (the task machine's `drainMachine`). */
export const drainMachine: DrainMachine = drainMachineOnce();
export type {
  OwnerId,
  ResourceId,
  OwnedEvent,
  FetchHandoffEvent,
  DrainerReadyEvent,
  TriggerInstalledEvent,
  SnapshotOwnedEvent,
  ReleasedEvent,
  CheckpointResult,
  CheckpointReply,
  CheckpointEvent,
  CancelEvent,
  FailEvent,
  FinishEvent,
  FetchRetryEvent,
  TaskEvent,
  RegistryEvent,
} from './machines/events.ts';
export type { TaskRef } from './machines/task-ref.ts';
// TaskHooks are the tests' and the demo's pool's, never a user's: not exported here.
export type { TaskServices, StageName } from './machines/task-services.ts';
export {
  type Ownership,
  type OwnershipMove,
  snapshotResource,
  checkpointOwner,
  snapshotCheckpointId,
  takeTaskDir,
  handOffFetchedState,
  adoptDrainer,
  passToDrain,
  adoptSnapshotReader,
  releaseResource,
  leftovers,
  holdsSnapshot,
} from './machines/ownership.ts';
