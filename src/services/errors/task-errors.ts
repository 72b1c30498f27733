/**
 * Errors of a task's life: work refused or fenced while it ends, an API used out of order, a
 * consumer that failed or was abandoned, a cancel, and the catch-all for anything else.
 */
import { SpillwayError, errnoOf, messageOf } from './base.ts';

/**
 * A checkpoint requested during recovery was declined: before the drainer is installed (the
 * trigger is NOT_READY), or after the spill state was closed with bytes still undelivered.
 * Declining fails that checkpoint only, never the task.
 *
 * @example
 * ```ts
 * await recovery.checkpoint(7).catch((e) => {
 *   if (e instanceof CheckpointDeclinedError) console.log('try again once draining:', e.reason);
 * });
 * ```
 */
export class CheckpointDeclinedError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_CHECKPOINT_DECLINED';

  constructor(
    readonly checkpointId: number,
    readonly reason: string,
  ) {
    super(`checkpoint ${checkpointId} declined: ${reason}`);
  }
}

/**
 * A consequence of an abort: the operation was fenced because the task was cancelled or its
 * resources were force-closed. Never reported as a task's cause (G4, G5).
 *
 * @example
 * ```ts
 * if (error instanceof AbortedError) return; // the task is ending; not news
 * ```
 */
export class AbortedError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_ABORTED';
}

/**
 * A mail or job was refused because its mailbox or executor is no longer open (rows GAP2, D1).
 *
 * @example
 * ```ts
 * await mailbox.execute('late', () => 1).catch((e) => e instanceof RejectedError); // true once quiesced
 * ```
 */
export class RejectedError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_REJECTED';
}

/**
 * An API was used against its contract (acquire after cleanup, release past zero, ...).
 *
 * @example
 * ```ts
 * await state.release().catch((e) => e instanceof MisuseError); // true past zero
 * ```
 */
export class MisuseError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_MISUSE';
}

/**
 * Registering with a registry that is already closed: the argument was closed instead (row F5).
 *
 * @example
 * ```ts
 * try { registry.register(c); } catch (e) { if (e instanceof RegistryClosedError) return; }
 * ```
 */
export class RegistryClosedError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_REGISTRY_CLOSED';
}

/**
 * A channel consumer had not returned when the task's ending allowed it to (G11): it was
 * abandoned — its late result is ignored and it is never delivered to again.
 *
 * @example
 * ```ts
 * const abandoned = suppressedOf(error).filter((e) => e instanceof ConsumerAbandonedError);
 * ```
 */
export class ConsumerAbandonedError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_CONSUMER_ABANDONED';
}

/**
 * The task was cancelled (`cancel()`, an aborted `signal`, a terminating signal in the CLI).
 * Shaped like Node's own abort errors — `name` `'AbortError'`, `code` `'ABORT_ERR'` — and its
 * `cause` is the very reason given (`signal.reason`, or the argument of `cancel(reason)`).
 *
 * @example
 * ```ts
 * controller.abort(new Error('shutdown'));
 * await recovery.done.catch((e) => e.cause.message); // 'shutdown'
 * ```
 */
export class CancelledError extends SpillwayError {
  override readonly code = 'ABORT_ERR';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AbortError';
  }
}

/**
 * A channel's consumer failed: its `onBuffer`, `onFinished` or `onBarrier` threw or rejected, or
 * the stream given as the channel errored (on a write, on finish, on close). `cause` is what
 * the consumer or stream raised, unchanged; the message is its message.
 *
 * @example
 * ```ts
 * const error = new ConsumerError(new Error('disk quota'));
 * error.message; // 'disk quota'
 * ```
 */
export class ConsumerError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_CONSUMER';
  /** The errno of the original, when a stream's file system call failed (`ENOENT`, `ENOSPC`). */
  readonly errno: string | undefined;

  constructor(cause: unknown) {
    super(messageOf(cause), { cause });
    this.errno = errnoOf(cause);
  }
}

/**
 * Any other failure that is not one of the classes above (a bug, a foreign throwable, an error
 * sent in by `FAIL`): `cause` the original.
 *
 * @example
 * ```ts
 * new InternalError('something unexpected', { cause: 42 }).code; // 'ERR_SPILLWAY_INTERNAL'
 * ```
 */
export class InternalError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_INTERNAL';
}
