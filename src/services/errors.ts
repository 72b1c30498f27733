/**
 * Typed errors shared by every layer. The rule they serve (G5): the first real cause is the
 * error; everything that goes wrong after it is attached to `.suppressed`, in order, and never
 * replaces it.
 */

/** Base class: every Spillway error can carry the errors that came after it. */
export class SpillwayError extends Error {
  /** Later failures (cleanup, consequences of an abort), in the order they happened. */
  readonly suppressed: Error[] = [];

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * A checkpoint file is not valid SPWC v1. `offset` is the byte offset of the first bad byte
 * (or of the field that is wrong), so a user can look at it with `xxd -s`.
 */
export class CorruptCheckpointError extends SpillwayError {
  constructor(
    readonly file: string,
    readonly offset: number,
    readonly reason: string,
  ) {
    super(`${file}: corrupt checkpoint at byte ${offset}: ${reason}`);
  }
}

/**
 * A consequence of an abort: the operation was fenced because the task was cancelled or its
 * resources were force-closed. Never reported as a task's cause (G4, G5).
 */
export class AbortedError extends SpillwayError {}

/** A mail or job was refused because its mailbox or executor is no longer open (rows G2, D1). */
export class RejectedError extends SpillwayError {}

/** An API was used against its contract (acquire after cleanup, release past zero, ...). */
export class MisuseError extends SpillwayError {}

/** Registering with a registry that is already closed: the argument was closed instead (row F5). */
export class RegistryClosedError extends SpillwayError {}

/** A spill file ended before a header or body was complete. */
export class SpillEOFError extends SpillwayError {}

/** A spill segment's body does not match its CRC-32, or its header is impossible. */
export class SpillCorruptError extends SpillwayError {}

/** A spill root that must not be used: missing, a symlink, not a directory, or unsafe. */
export class SpillRootError extends SpillwayError {}

/** One or more files or directories could not be deleted (row C1). */
export class CleanupError extends SpillwayError {}

/**
 * A checkpoint requested during recovery was declined: before the drainer is installed (the
 * trigger is NOT_READY), or after the spill state was closed with bytes still undelivered.
 * Declining fails that checkpoint only, never the task.
 */
export class CheckpointDeclinedError extends SpillwayError {
  constructor(
    readonly checkpointId: number,
    readonly reason: string,
  ) {
    super(`checkpoint ${checkpointId} declined: ${reason}`);
  }
}

/** The task was cancelled (CANCEL, an AbortSignal, SIGINT or SIGTERM). */
export class CancelledError extends SpillwayError {}

/** Wraps a non-Error throwable so it can carry `.suppressed`. */
export function toError(value: unknown): Error {
  if (value instanceof Error) return value;
  return new SpillwayError(typeof value === 'string' ? value : JSON.stringify(value));
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

/** Returns the suppressed errors of any error (empty for errors that never had any). */
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
