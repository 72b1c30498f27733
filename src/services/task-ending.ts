/**
 * How one task ends (G1, G5), in one place: what the task owns at the end, the order it is
 * closed in, and which error is the cause while every later one goes to `.suppressed`.
 *
 * Ownership. The task machine creates its `TaskEnding` when its actor is created (the context
 * factory) and is the only owner; nothing else makes one. Through the task's life the machine's
 * ownership moves are told to the ending by the registry actor (`own`/`disown`), so the registry
 * here holds exactly what the task owns besides its mailbox and channel-IO executor.
 *
 * The close. Two callers start it, whichever comes first; the second call returns the same
 * promise (`close()` is idempotent):
 * 1. the exit action of the machine's `alive` state (`resourceCloser`), which every ending by a
 *    transition runs (through the registry actor's mailbox, after the moves of the same step);
 * 2. the registry actor's disposer, which XState runs even on a bare `actor.stop()`, where no
 *    exit action runs.
 * The registry closes in reverse registration order, as Flink's StreamTask does: the resources
 * (registered later) first, then the executor drains, then the mailbox closes. After them go
 * what the task holds for its caller, each registered where it is made (`ownForCaller`): the
 * streams given as channels (released), the remainders written without an `out` (deleted), the
 * wait for the spill root and the last progress reading. The close resolves only once every
 * entry, and every argument of a late registration, has finished closing: `done` awaits it, so
 * "the task ended" and "its files are gone" are the same instant.
 *
 * The first cause. The machine keeps the first real cause of a failure or cancellation in its
 * context (`recordStageError`, `recordCancel`, `recordFailure`: the first one wins). Besides it,
 * three kinds of later errors arrive here, and {@link TaskEnding.outcome} puts them together:
 * - a close a stage reported failing while letting go of a resource (row C1);
 * - errors a stage raised after its actor was stopped (XState drops a stopped promise actor's
 *   rejection: these are consequences of the ending, never the cause);
 * - the registry's own close failure.
 * A task that otherwise finished fails with its first cleanup error (the spill disk is failing,
 * and the caller must hear of it); under a real cause they are all suppressed, in order.
 * {@link TaskEnding.failure} is that error as it leaves the library: one of ours, a foreign
 * error wrapped (as a ConsumerError when the caller's code threw it, told by `callerThrew`).
 */
import { CloseableRegistry, type Closeable } from './registry.ts';
import {
  CancelledError,
  addSuppressed,
  ours,
  suppressedOf,
  toError,
  type SpillwayError,
} from './errors.ts';

/** The task's services whose close ends the task after its resources (Flink's order). */
export interface TaskEndingServices {
  readonly mailbox: { close(): unknown };
  readonly executor: { shutdown(): Promise<void> };
}

/** How the task actor ended, in plain terms (no XState type). */
export interface TaskEnd {
  /** The actor's status: `'done'` (a final state), `'error'` (it threw) or `'stopped'`. */
  readonly status: 'active' | 'done' | 'error' | 'stopped';
  /** The final state's name, when `status` is `'done'`. */
  readonly value: unknown;
  /** What the actor threw, when `status` is `'error'`. */
  readonly error: unknown;
  /** The first real cause the machine recorded, if any. */
  readonly cause: Error | undefined;
}

/**
 * One task's ending: its registry (the resourceCloser), the close, and the first cause.
 *
 * @example
 * ```ts
 * const ending = new TaskEnding({ mailbox, executor });
 * ending.own('drainer', drainer);
 * await ending.close(); // the drainer, then the executor, then the mailbox
 * const error = ending.outcome({ status: 'done', value: 'finished', error: undefined, cause: undefined });
 * if (error !== undefined) throw error; // a failed close of a task that otherwise finished
 * ```
 */
export class TaskEnding {
  /** Whatever the task owns; closed in reverse registration order, once. */
  readonly registry = new CloseableRegistry();
  private closing: Promise<void> | undefined;
  private closeError: Error | undefined;
  private readonly cleanupErrors: Error[] = [];
  private readonly lateErrors: Error[] = [];
  /**
   * What the task holds of its caller's: the streams given as channels, the remainder files
   * written without an `out`, the wait for the spill root. Closed last, after the mailbox.
   */
  private readonly callers = new CloseableRegistry();
  /** What the caller's code threw: it leaves wrapped as a ConsumerError (see {@link asOurs}). */
  private readonly callerErrors = new WeakSet<object>();

  constructor(services?: TaskEndingServices) {
    if (services === undefined) return;
    // Registered first, so they close last: the resources' closes may still need them.
    this.registry.register({ close: () => void services.mailbox.close() });
    this.registry.register({ close: () => services.executor.shutdown() });
  }

  /** The task now owns `closeable` under `resource`; the close will close it. */
  own(resource: unknown, closeable: Closeable): void {
    try {
      this.registry.register(closeable, resource);
    } catch {
      // Registry already closed (row F5): it closed the argument itself; the task is ending.
    }
  }

  /**
   * The task holds `closeable` for its caller (a stream given as a channel, a default remainder
   * file): closed after the task's own resources, its executor and its mailbox, in reverse
   * order of these calls. After the close began, it is closed at once (and awaited).
   */
  ownForCaller(key: unknown, closeable: Closeable): void {
    try {
      this.callers.register(closeable, key);
    } catch {
      // Already closing: the registry closed the argument itself; close() waits for it.
    }
  }

  /** The caller's code (a consumer, a channel factory, a stream) threw `error`. */
  callerThrew(error: unknown): void {
    if (typeof error === 'object' && error !== null) this.callerErrors.add(error);
  }

  /**
   * `error` as it leaves the library: one of ours, a foreign one wrapped with it as the cause
   * (a ConsumerError if the caller's code threw it).
   */
  asOurs(error: unknown): SpillwayError {
    return ours(error, typeof error === 'object' && error !== null && this.callerErrors.has(error));
  }

  /** Its owner closed `resource` itself: the close must not close it again. */
  disown(resource: unknown): void {
    this.registry.unregister(resource);
  }

  /**
   * Starts closing everything the task owns (idempotent: every call returns the same promise).
   * Never rejects: a failed close is kept for {@link outcome}. Resolves once every close,
   * late ones included, has finished.
   */
  close(): Promise<void> {
    // The caller's holdings close after everything of the task's own: a caller's stream is
    // released only once nothing of the task can write to it any more, and a default remainder
    // is deleted only once no checkpoint can still be writing it.
    this.closing ??= this.registry
      .close()
      .catch((error: unknown) => {
        this.closeError = toError(error);
      })
      .then(() => this.registry.settled())
      .then(() => this.callers.close())
      .catch((error: unknown) => this.cleanupFailed(toError(error)))
      .then(() => this.callers.settled());
    return this.closing;
  }

  /** A stage's close of a resource it let go of failed (row C1). */
  cleanupFailed(error: Error): void {
    this.cleanupErrors.push(error);
  }

  /** A stage failed after its actor was stopped: a consequence of the ending, never its cause. */
  lateError(error: unknown): void {
    this.lateErrors.push(toError(error));
  }

  /**
   * The error the task ends with, or undefined for a task that finished and closed cleanly.
   * Call it once the close has finished.
   */
  outcome(end: TaskEnd): Error | undefined {
    let primary: Error | undefined;
    if (end.status === 'error') primary = toError(end.error);
    else if (end.status === 'stopped') {
      primary = end.cause ?? new CancelledError('task actor stopped');
    } else if (end.value !== 'finished') primary = end.cause;
    // Row C1: a failed close or delete is never lost, even when the registry's retry removed
    // the files after all.
    const cleanupErrors = [...this.cleanupErrors];
    if (this.closeError !== undefined) cleanupErrors.push(this.closeError);
    if (primary === undefined) {
      const [first, ...later] = cleanupErrors;
      if (first === undefined) return undefined;
      for (const e of later) addSuppressed(first, e);
      return first;
    }
    for (const e of this.lateErrors) addSuppressed(primary, e);
    for (const e of cleanupErrors) {
      addSuppressed(primary, e);
      for (const s of suppressedOf(e)) addSuppressed(primary, s);
    }
    return primary;
  }

  /**
   * What `done` rejects with: {@link outcome} as one of ours (undefined for a clean finish).
   * Call it once the close has finished.
   */
  failure(end: TaskEnd): SpillwayError | undefined {
    const error = this.outcome(end);
    return error === undefined ? undefined : this.asOurs(error);
  }
}
