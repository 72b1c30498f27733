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
export {
  taskMachine,
  stageOf,
  type TaskContext,
  type TaskInput,
  type Outcome,
} from './machines/task.machine.ts';
export { fetchMachine } from './machines/fetch.machine.ts';
export { gapMachine } from './machines/gap.machine.ts';
export { drainMachine } from './machines/drain.machine.ts';
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
