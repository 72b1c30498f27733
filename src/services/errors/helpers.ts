/**
 * The helpers every layer uses to keep the first cause (G5): the union of the classes and its
 * guard, wrapping a foreign error as one of ours, `.suppressed`, and the collector.
 */
import { SpillwayError, errnoOf, messageOf } from './base.ts';
import type {
  CheckpointChangedError,
  CheckpointPathError,
  CorruptCheckpointError,
  TypeSpecError,
  UnknownOperatorError,
} from './checkpoint-errors.ts';
import type {
  RemoteAccessError,
  RemoteError,
  RemoteNotFoundError,
  RemoteTimeoutError,
  RemoteUnsupportedError,
} from './remote-errors.ts';
import type {
  CheckpointOutError,
  CleanupError,
  OutputDirError,
  OutputExistsError,
  RewriteRefusedError,
  SpillCorruptError,
  SpillEOFError,
  SpillRootError,
} from './file-errors.ts';
import { IoError } from './file-errors.ts';
import type {
  CheckpointDeclinedError,
  ConsumerAbandonedError,
  MisuseError,
  RegistryClosedError,
} from './task-errors.ts';
import {
  AbortedError,
  CancelledError,
  ConsumerError,
  InternalError,
  RejectedError,
} from './task-errors.ts';

/**
 * Every error class a Spillway API rejects or throws with, as a union discriminated by `code`:
 * after `switch (error.code)` each `case` narrows to its class (`error.offset` after
 * `'ERR_SPILLWAY_CORRUPT_CHECKPOINT'`). {@link isSpillwayError} narrows an unknown to it.
 *
 * @example
 * ```ts
 * if (isSpillwayError(error) && error.code === 'ERR_SPILLWAY_CORRUPT_CHECKPOINT') {
 *   console.error(error.file, error.offset);
 * }
 * ```
 */
export type AnySpillwayError =
  | CorruptCheckpointError
  | RewriteRefusedError
  | CheckpointPathError
  | CheckpointChangedError
  | UnknownOperatorError
  | TypeSpecError
  | RemoteNotFoundError
  | RemoteAccessError
  | RemoteError
  | RemoteUnsupportedError
  | RemoteTimeoutError
  | CheckpointDeclinedError
  | AbortedError
  | RejectedError
  | MisuseError
  | RegistryClosedError
  | SpillEOFError
  | SpillCorruptError
  | CleanupError
  | SpillRootError
  | OutputDirError
  | OutputExistsError
  | CheckpointOutError
  | ConsumerAbandonedError
  | CancelledError
  | ConsumerError
  | IoError
  | InternalError;

/**
 * Whether `error` is a Spillway error, narrowed to {@link AnySpillwayError} so that a `switch`
 * on its `code` narrows to each class.
 *
 * @example
 * ```ts
 * recovery.done.catch((error) => {
 *   if (!isSpillwayError(error)) throw error;
 *   if (error.code === 'ABORT_ERR') console.error('cancelled:', error.cause);
 * });
 * ```
 */
export function isSpillwayError(error: unknown): error is AnySpillwayError {
  return error instanceof SpillwayError;
}

/**
 * Makes any error leaving the library one of ours: a Spillway error stays as it is; anything
 * else becomes a {@link ConsumerError} (when `fromConsumer`), an {@link IoError} (it has an
 * errno) or an {@link InternalError}, with the original as `cause` and its `.suppressed` moved
 * over.
 *
 * @example
 * ```ts
 * ours(Object.assign(new Error('EIO'), { code: 'EIO' })).code; // 'ERR_SPILLWAY_IO'
 * ```
 */
export function ours(error: unknown, fromConsumer = false): SpillwayError {
  if (error instanceof SpillwayError) return error;
  const wrapped = fromConsumer
    ? new ConsumerError(error)
    : errnoOf(error) !== undefined
      ? new IoError(error)
      : new InternalError(messageOf(error), { cause: error });
  for (const later of suppressedOf(error)) addSuppressed(wrapped, later);
  return wrapped;
}

/**
 * The error {@link ours} wrapped (a consumer's throw, an errno error, a foreign throwable), or
 * `error` itself when it was a Spillway error from the start: the first cause as it happened.
 *
 * @example
 * ```ts
 * await recovery.done.catch((e) => originalOf(e)); // the stream's own ENOENT, the consumer's throw
 * ```
 */
export function originalOf(error: unknown): unknown {
  const wrapper =
    error instanceof ConsumerError || error instanceof IoError || error instanceof InternalError;
  return wrapper && error.cause !== undefined ? error.cause : error;
}

/** Wraps a non-Error throwable so it can carry `.suppressed`. */
export function toError(value: unknown): Error {
  if (value instanceof Error) return value;
  return new InternalError(typeof value === 'string' ? value : JSON.stringify(value));
}

/** Adds `later` to `primary.suppressed` (creating the array on foreign errors). */
export function addSuppressed(primary: Error, later: unknown): void {
  const error = toError(later);
  if (error === primary) return;
  const holder = primary as Error & { suppressed?: Error[] };
  if (!Array.isArray(holder.suppressed)) {
    Object.defineProperty(holder, 'suppressed', { value: [], enumerable: false, writable: true });
  }
  if (!holder.suppressed!.includes(error)) holder.suppressed!.push(error);
}

/**
 * Runs `body`; when it fails, runs `cleanUp` and rethrows the body's error. The first cause wins
 * (G5): a failed clean-up goes to that error's `.suppressed`, never in its place.
 *
 * @example
 * ```ts
 * await cleanUpOnFailure(() => writeAll(writer), () => writer.discard());
 * ```
 */
export async function cleanUpOnFailure<T>(
  body: () => Promise<T>,
  cleanUp: () => Promise<void>,
): Promise<T> {
  try {
    return await body();
  } catch (primary) {
    try {
      await cleanUp();
    } catch (later) {
      if (primary instanceof Error) addSuppressed(primary, later);
    }
    throw primary;
  }
}

/**
 * Returns the suppressed errors of any error (empty for errors that never had any).
 *
 * @example
 * ```ts
 * await recovery.done.catch((e) => suppressedOf(e).forEach((later) => console.error(later)));
 * ```
 */
export function suppressedOf(error: unknown): Error[] {
  const list = (error as { suppressed?: unknown } | undefined)?.suppressed;
  return Array.isArray(list) ? (list as Error[]) : [];
}

/**
 * A consequence of an abort rather than a cause: a fenced read, a mail rejected after the task
 * began to end, or a file that vanished because cleanup deleted it.
 */
export function isAbortConsequence(error: unknown): boolean {
  if (error instanceof AbortedError || error instanceof RejectedError) return true;
  if (error instanceof CancelledError) return false;
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === 'ENOENT' || (error as Error | undefined)?.name === 'AbortError';
}

/**
 * Collects errors in the order they happen and yields one error whose primary is the first,
 * with every later one attached as suppressed.
 */
export class ErrorCollector {
  private first: Error | undefined;

  /** Records an error; the first one recorded stays the primary. */
  add(error: unknown): void {
    const e = toError(error);
    if (this.first === undefined) this.first = e;
    else addSuppressed(this.first, e);
  }

  get error(): Error | undefined {
    return this.first;
  }

  /** Throws the primary error, if any. */
  throwIfAny(): void {
    if (this.first !== undefined) throw this.first;
  }
}
