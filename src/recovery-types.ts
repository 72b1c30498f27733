/**
 * The public shape of one recovery: its options, its handle and its report. Kept free of
 * XState's types on purpose: a consumer compiling with `exactOptionalPropertyTypes` and
 * `skipLibCheck: false` would otherwise inherit errors from XState's own declarations. The
 * real task actor satisfies {@link TaskActor} (the compiler checks that in recover.ts); the
 * full XState types are at `spillway/machines`.
 */
import type { CheckpointResult, OwnerId, ResourceId } from './machines/events.ts';
import type { ChannelInfo } from './services/channel.ts';
import type { ChannelTarget } from './services/channel-streams.ts';
import type { RecoveryProgress } from './services/progress.ts';
import type { StageTag, TaskStateValue } from './services/stage.ts';
import type { SpillLimits } from './services/spill/limits.ts';
import type { RescaleOption } from './services/rescale/rescale-options.ts';
import type { RecordReport } from './services/spill/filtering-spill.ts';
import type { RemoteOptions } from './services/locations/remote-options.ts';
import type { FlinkSelection } from './services/formats/flink/entry-source.ts';

/**
 * What `channels(info)` is told of the channel it makes a consumer for: its gate and channel,
 * and a signal that aborts when the recovery ends early (cancelled, failed, stopped), so a
 * consumer can stop work of its own in flight (an upload, a database write) instead of waiting
 * to be abandoned. It never aborts on a recovery that finishes.
 *
 * @example
 * ```ts
 * recoverChannelState({
 *   checkpoint,
 *   channels: ({ gate, channel, signal }) => ({
 *     onBuffer: (buffer) => upload(`${gate}/${channel}`, buffer, { signal }),
 *     onFinished: () => undefined,
 *   }),
 * });
 * ```
 */
export interface ConsumerInfo extends ChannelInfo {
  readonly signal: AbortSignal;
}

/**
 * Options of {@link recoverChannelState}.
 *
 * @example
 * ```ts
 * const options: RecoverOptions = {
 *   checkpoint: 'job-42.spwc',
 *   channels: () => ({ onBuffer: () => {}, onFinished: () => {} }),
 * };
 * ```
 */
export interface RecoverOptions {
  /** The SPWC checkpoint to recover: a path, an `http(s)://` URL or `s3://bucket/key`. */
  checkpoint: string;
  /** Where spill files go; default `SPILLWAY_SPILL_ROOT`, then the OS temp dir. */
  spillRoot?: string | undefined;
  /**
   * Returns where one input channel's recovered bytes go: a {@link ChannelConsumer}, a Node
   * `Writable` (an `fs.WriteStream`, a socket…) or a web `WritableStream`. A stream's
   * backpressure is honoured, its errors (a write, the end, the close) fail the recovery, and
   * it is ended when its channel is done, or destroyed / aborted on any other ending.
   */
  channels: (info: ConsumerInfo) => ChannelTarget;
  /** Aborting it cancels the task (like `cancel()`). */
  signal?: AbortSignal | undefined;
  /**
   * Sees every actor, event and snapshot of the task's system (passed to XState's
   * `createActor`); `startInspectorServer()` from `spillway/inspector` gives one.
   */
  inspect?(event: TaskInspectionEvent): void;
  limits?: SpillLimits | undefined;
  /**
   * For an `http(s)://` or `s3://bucket/key` checkpoint (and `s3://` checkpoint outputs): the
   * S3 endpoint and region, the retry policy (retries in a row, backoff, stall timeout,
   * deadline) and a callback per retry. Local paths ignore it.
   */
  remote?: RemoteOptions | undefined;
  /** A name for logs and the task dir; default a random id. */
  taskId?: string | undefined;
  /** End as soon as recovery is done (default true); false keeps the task running until FINISH. */
  autoFinish?: boolean | undefined;
  /**
   * Once the task begins to end (cancel, an aborted signal, a failure), how long a channel
   * consumer that has not returned is waited for before it is abandoned (G11: `done` settles in
   * bounded time whatever a consumer does); default 3000 ms.
   */
  abandonAfterMs?: number | undefined;
  /**
   * Progress, coalesced: called at most every `progressIntervalMs` while something changed, at
   * every stage change, and once at the end. Cheap enough to leave on: the stages only bump
   * counters.
   */
  onProgress?(progress: RecoveryProgress): void;
  /** How often `onProgress` may be called; default 250 ms. */
  progressIntervalMs?: number | undefined;
  /**
   * Rescaled restore: keep only the records that belong to new subtask `subtask` of
   * `parallelism` (Flink's key groups over the first `keyBytes` bytes of each record), or
   * those a custom `keep(record, from)` accepts. The checkpoint's payloads are then parsed as
   * `[int32 length][bytes]` records per (old subtask, gate, channel).
   */
  rescale?: RescaleOption | undefined;
  /**
   * `checkpoint` is a real Flink checkpoint (a directory holding `_metadata`, or the
   * `_metadata`): which operator (id, uid or name) and subtask to recover, input channels or
   * (`outputState`) result subpartitions, where its files may be (`allowPaths`, `relocate`)
   * and, with `rescale`, how records are keyed (`key`). With `rescale`, every old subtask's
   * input channels are read and `rescale.maxParallelism` defaults to the operator's.
   */
  flink?: FlinkSelection | undefined;
}

/**
 * What an `inspect` callback receives: XState's inspection events (`@xstate.actor`,
 * `@xstate.event`, `@xstate.snapshot`, `@xstate.microstep`, `@xstate.action`), typed loosely
 * here so that Spillway's types do not depend on XState's.
 *
 * @example
 * ```ts
 * const inspect = (event: TaskInspectionEvent) => console.log(event.type, event.rootId);
 * ```
 */
export interface TaskInspectionEvent {
  readonly type: string;
  readonly rootId: string;
  readonly actorRef: unknown;
}

/**
 * What a finished recovery reports.
 *
 * @example
 * ```ts
 * const { bytesDelivered, spillFiles } = await recovery.done;
 * ```
 */
export interface RecoveryReport {
  taskId: string;
  /** Input channels the checkpoint named (each was finished exactly once). */
  channels: number;
  bytesDelivered: number;
  buffers: number;
  /** Checkpoint entries read, zero-length ones included. */
  entries: number;
  payloadBytes: number;
  spillFiles: number;
  spilledBytes: number;
  /** Checkpoints taken during the recovery. */
  checkpoints: number;
  durationMs: number;
  /** Records read, kept and dropped: present only for a rescaled recovery. */
  records?: RecordReport;
}

export type { StageTag, TaskStateValue } from './services/stage.ts';

/**
 * The part of the task's context a program may read.
 *
 * @example
 * ```ts
 * const { ownership } = recovery.actor.getSnapshot().context; // { fetchedState: 'drain', … }
 * ```
 */
export interface TaskView {
  /** resource → the actor that owns it now (G2). A resource is absent once it is closed. */
  readonly ownership: Readonly<Partial<Record<ResourceId, OwnerId>>>;
  /** Resources the registry closed when the task ended (not released by their owner). */
  readonly closedByRegistry: readonly ResourceId[];
  /** Checkpoints taken so far. */
  readonly checkpoints: number;
  /** The first real cause of a failure or cancellation (G5). */
  readonly cause: Error | undefined;
}

/**
 * One snapshot of the task actor.
 *
 * @example
 * ```ts
 * const snapshot = recovery.actor.getSnapshot();
 * if (snapshot.status === 'active' && snapshot.hasTag('drain')) console.log('draining');
 * ```
 */
export interface TaskSnapshot {
  readonly status: 'active' | 'done' | 'error' | 'stopped';
  readonly value: TaskStateValue;
  readonly context: TaskView;
  hasTag(tag: StageTag): boolean;
}

/**
 * The task actor (an XState actor) as a program drives it.
 *
 * @example
 * ```ts
 * const sub = recovery.actor.subscribe((snapshot) => console.log(snapshot.value));
 * await recovery.done;
 * sub.unsubscribe();
 * ```
 */
export interface TaskActor {
  readonly id: string;
  getSnapshot(): TaskSnapshot;
  subscribe(observer: (snapshot: TaskSnapshot) => void): { unsubscribe(): void };
  /** `FINISH` ends a task started with `autoFinish: false`; `CANCEL` is `recovery.cancel()`. */
  send(event: { type: 'FINISH' } | { type: 'CANCEL'; reason?: unknown }): void;
  /** A bare stop: no exit action runs, yet the registry's backstop still removes every file. */
  stop(): void;
}

/**
 * The options of `recovery.checkpoint(id, options)`.
 *
 * @example
 * ```ts
 * const options: CheckpointOptions = { out: 'cp-7.spwc', signal: AbortSignal.timeout(5000) };
 * ```
 */
export interface CheckpointOptions {
  /**
   * Where the remainder goes: a path that does not exist yet (never replaced) in an existing
   * directory, or an `s3://bucket/key`. The file is written in the task's spill dir and
   * published at `out` only when complete. Default: `<task dir>-checkpoint-<id>.spwc` in the spill
   * root, deleted when the task ends — to keep it, move `result.file` elsewhere (`fs.rename`,
   * same file system) as soon as the checkpoint resolves; the task does not end before that
   * (with `autoFinish: false` it waits for `FINISH`).
   */
  out?: string;
  /** Cancels this checkpoint (not the recovery): it rejects with a `CancelledError`. */
  signal?: AbortSignal;
}

/**
 * One recovering task as a lifecycle service.
 *
 * @example
 * ```ts
 * await using recovery = recoverChannelState(options); // leaving the block cancels and waits
 * const report = await recovery.done;
 * ```
 */
export interface Recovery extends AsyncDisposable {
  /** The task actor: subscribe to it, read `getSnapshot().context.ownership`. */
  readonly actor: TaskActor;
  readonly taskId: string;
  /**
   * Settles once the task has ended **and** every resource is closed (G1): the report, or the
   * first cause with later errors in `.suppressed` (G5). A failed close or delete of spill
   * files (row C1) is suppressed under a real cause; if the task otherwise finished, it is the
   * failure itself (typically a `CleanupError`), even when the registry's retry then removed
   * the files.
   */
  readonly done: Promise<RecoveryReport>;
  /**
   * Takes checkpoint `id` during recovery: barriers into every channel still in recovery, and
   * the undelivered remainder written as an SPWC file (G6). Declined with a
   * `CheckpointDeclinedError` before the drain stage has its drainer installed; rejected with
   * an `AbortedError` once the task has ended, a `CancelledError` when `options.signal` aborts
   * (`cause`: its reason), a `CheckpointOutError` when `out` exists or its directory does not
   * (before anything is written). Whatever fails, no file is left behind. The promise is marked
   * handled: it may be awaited after `done`.
   *
   * @example
   * ```ts
   * const { file } = await recovery.checkpoint(7, { out: 'cp-7.spwc', signal: AbortSignal.timeout(5000) });
   * ```
   */
  checkpoint(id: number, options?: CheckpointOptions): Promise<CheckpointResult>;
  /** The progress right now (the same reading `onProgress` gets). */
  progress(): RecoveryProgress;
  /**
   * Who owns which spill resource right now, with its path, files and bytes where known (G2):
   * the live view of `getSnapshot().context.ownership`.
   */
  ownership(): OwnershipReport;
  /**
   * Cancels the task; `done` then rejects, after cleanup, with a `CancelledError`
   * (`name: 'AbortError'`, `code: 'ABORT_ERR'`) whose `cause` is `reason`.
   */
  cancel(reason?: unknown): void;
}

/**
 * One owned spill resource, as {@link Recovery.ownership} describes it.
 *
 * @example
 * ```ts
 * const entry: OwnedResource = { owner: 'drain', path: '/tmp/task-1', files: 3, bytes: 1024 };
 * ```
 */
export interface OwnedResource {
  readonly owner: OwnerId;
  /** The task dir it lives in, once known. */
  readonly path: string | undefined;
  /** Spill files it holds (the task dir, the fetched state, the drainer). */
  readonly files: number | undefined;
  /** Bytes it holds on disk (the task dir, the fetched state), or still to deliver (the drainer). */
  readonly bytes: number | undefined;
}

/**
 * Every resource owned right now: absent ones are closed.
 *
 * @example
 * ```ts
 * for (const [resource, owned] of Object.entries(recovery.ownership())) {
 *   console.log(resource, owned?.owner, owned?.files);
 * }
 * ```
 */
export type OwnershipReport = Readonly<Partial<Record<ResourceId, OwnedResource>>>;
