/**
 * The typed events that move ownership of spill resources between actors (G2). A reader of the
 * event log can follow every hand-off without the code: who acquired what, who holds it now,
 * and who let it go.
 */
import type { Closeable } from '../services/registry.ts';
import type { FetchedChannelState } from '../services/spill/fetched-state.ts';
import type { Drainer } from '../services/spill/drainer.ts';
import type { SpillReader } from '../services/spill/spill-reader.ts';
import type { StageName } from '../services/stage.ts';

/**
 * The actors that can own a resource. `task` means the task's registry holds it.
 *
 * @example
 * ```ts
 * const owner: OwnerId | undefined = recovery.actor.getSnapshot().context.ownership.drainer;
 * ```
 */
export type OwnerId = StageName | 'task' | `checkpoint-${number}`;

/**
 * The resources whose ownership is tracked: one entry per live resource.
 *
 * @example
 * ```ts
 * const resources = Object.keys(recovery.ownership()) as ResourceId[]; // ['fetchedState', 'drainer']
 * ```
 */
export type ResourceId = 'taskDir' | 'fetchedState' | 'drainer' | `snapshot-${number}`;

/** A stage took a resource; from this instant the task's registry is its backstop. */
export interface OwnedEvent {
  type: 'SPILL.OWNED';
  resource: ResourceId;
  owner: OwnerId;
  /** Closing it releases the resource (discard files, force-close, release a grant). */
  closeable: Closeable;
  /** Human-readable: a path, a grant count. */
  detail: string;
}

/** The fetch stage sealed its files: the fetched state replaces the raw task dir. */
export interface FetchHandoffEvent {
  type: 'FETCH.HANDOFF';
  state: FetchedChannelState;
  spillFiles: number;
  spilledBytes: number;
}

/** The gap stage built the drainer (it holds a grant through its main reader). */
export interface DrainerReadyEvent {
  type: 'DRAINER.READY';
  drainer: Drainer;
}

/** The drainer is installed as the checkpoint trigger: checkpoints now cut the spill state. */
export interface TriggerInstalledEvent {
  type: 'TRIGGER.INSTALLED';
}

/** A checkpoint writer took the snapshot reader of checkpoint `id`. */
export interface SnapshotOwnedEvent {
  type: 'SNAPSHOT.OWNED';
  checkpointId: number;
  reader: SpillReader;
}

/** A resource was closed by its owner on the normal path: it leaves the ownership map. */
export interface ReleasedEvent {
  type: 'SPILL.RELEASED';
  resource: ResourceId;
  /**
   * The close failed with this error (row C1: say, the last grant's delete hit EIO). The owner
   * still lets go, but the files may remain, so the fetched state stays owned by the task's
   * registry, whose close retries the delete; the task reports the error (G5).
   */
  error?: Error;
}

/**
 * Result of a checkpoint taken during recovery.
 *
 * @example
 * ```ts
 * const { file, channels } = await recovery.checkpoint(7, { out: 'cp-7.spwc' });
 * console.log(file, channels.reduce((n, c) => n + c.bytes, 0), 'bytes left to deliver');
 * ```
 */
export interface CheckpointResult {
  checkpointId: number;
  /** The SPWC file holding the undelivered remainder, or undefined if nothing remained. */
  file: string | undefined;
  /** Remainder bytes per channel, in checkpoint order. */
  channels: { gate: number; channel: number; bytes: number }[];
}

/** How the caller of `checkpoint(id)` is answered. */
export interface CheckpointReply {
  resolve(result: CheckpointResult): void;
  reject(error: Error): void;
}

/** Take a checkpoint during recovery (Flink: `snapshotAndInsertBarriers` at checkpoint start). */
export interface CheckpointEvent {
  type: 'CHECKPOINT';
  checkpointId: number;
  /** Where the remainder goes; default `<task dir>-checkpoint-<id>.spwc` (deleted with the task). */
  out?: string | undefined;
  /** Cancels this checkpoint only (not the task). */
  signal?: AbortSignal | undefined;
  reply: CheckpointReply;
}

/** Cancel the task: every resource is closed, `done` rejects with a CancelledError. */
export interface CancelEvent {
  type: 'CANCEL';
  /** Why: any value (an Error, a string); it becomes the `cause` of the task's `CancelledError`. */
  reason?: unknown;
}

/** Fail the task from outside with this cause. */
export interface FailEvent {
  type: 'FAIL';
  error: Error;
}

/** End a recovered task normally. */
export interface FinishEvent {
  type: 'FINISH';
}

/**
 * A remote checkpoint read was retried (a reset, a 5xx, a stall, a truncated body). Changes no
 * state: it is sent so the inspector shows each retry; progress counts them too.
 */
export interface FetchRetryEvent {
  type: 'FETCH.RETRY';
  retry: number;
  offset: number;
  /** What failed, redacted. */
  reason: string;
  delayMs: number;
}

/** Everything a task machine accepts from its children and its owner. */
export type TaskEvent =
  | OwnedEvent
  | FetchHandoffEvent
  | DrainerReadyEvent
  | TriggerInstalledEvent
  | SnapshotOwnedEvent
  | ReleasedEvent
  | CheckpointEvent
  | CancelEvent
  | FailEvent
  | FinishEvent
  | FetchRetryEvent;

/** The events the registry actor takes from the task. */
export type RegistryEvent =
  | { type: 'own'; resource: ResourceId; closeable: Closeable }
  | { type: 'disown'; resource: ResourceId }
  /** The resourceCloser: close everything still held (after the messages queued before it). */
  | { type: 'close' };
