/**
 * Typed errors shared by every layer. The rule they serve (G5): the first real cause is the
 * error; everything that goes wrong after it is attached to `.suppressed`, in order, and never
 * replaces it.
 *
 * One file on purpose (~490 lines, mostly TSDoc with an example per class): the classes and the
 * `SpillwayErrorCode` union they must match stay side by side, so neither drifts.
 */

/**
 * Every stable `code` a Spillway error carries, so a `switch (error.code)` over them can be
 * exhaustive. `ABORT_ERR` is Node's own code for an abort, which a cancelled task rejects with.
 *
 * @example
 * ```ts
 * function exitCodeOf(error: SpillwayError): number {
 *   switch (error.code) {
 *     case 'ERR_SPILLWAY_CORRUPT_CHECKPOINT':
 *     case 'ERR_SPILLWAY_CHECKPOINT_PATH':
 *       return 2;
 *     default:
 *       return 1;
 *   }
 * }
 * ```
 */
export type SpillwayErrorCode =
  | 'ERR_SPILLWAY'
  | 'ERR_SPILLWAY_CORRUPT_CHECKPOINT'
  | 'ERR_SPILLWAY_CHECKPOINT_PATH'
  | 'ERR_SPILLWAY_CHECKPOINT_DECLINED'
  | 'ERR_SPILLWAY_ABORTED'
  | 'ABORT_ERR'
  | 'ERR_SPILLWAY_REJECTED'
  | 'ERR_SPILLWAY_MISUSE'
  | 'ERR_SPILLWAY_REGISTRY_CLOSED'
  | 'ERR_SPILLWAY_SPILL_TRUNCATED'
  | 'ERR_SPILLWAY_SPILL_CORRUPT'
  | 'ERR_SPILLWAY_CLEANUP'
  | 'ERR_SPILLWAY_SPILL_ROOT'
  | 'ERR_SPILLWAY_OUTPUT_DIR'
  | 'ERR_SPILLWAY_OUTPUT_EXISTS'
  | 'ERR_SPILLWAY_REWRITE_REFUSED'
  | 'ERR_SPILLWAY_CHECKPOINT_OUT'
  | 'ERR_SPILLWAY_CONSUMER'
  | 'ERR_SPILLWAY_IO'
  | 'ERR_SPILLWAY_INTERNAL'
  | 'ERR_SPILLWAY_CONSUMER_ABANDONED'
  | 'ERR_SPILLWAY_USAGE'
  | 'ERR_SPILLWAY_INSPECTOR'
  | 'ERR_SPILLWAY_INJECTED_FAULT'
  | 'ERR_SPILLWAY_CHECKPOINT_CHANGED'
  | 'ERR_SPILLWAY_REMOTE_NOT_FOUND'
  | 'ERR_SPILLWAY_REMOTE_ACCESS'
  | 'ERR_SPILLWAY_REMOTE'
  | 'ERR_SPILLWAY_REMOTE_UNSUPPORTED'
  | 'ERR_SPILLWAY_REMOTE_TIMEOUT'
  | 'ERR_SPILLWAY_UNKNOWN_OPERATOR'
  | 'ERR_SPILLWAY_TYPE_SPEC';

/**
 * Base class: every Spillway error has a stable `code` and can carry the errors that came
 * after it in `.suppressed` (G5).
 *
 * @example
 * ```ts
 * try {
 *   await recovery.done;
 * } catch (error) {
 *   if (error instanceof SpillwayError) console.error(error.code, error.suppressed.length);
 * }
 * ```
 */
export class SpillwayError extends Error {
  /** What kind of failure this is, stable across versions. */
  readonly code: SpillwayErrorCode = 'ERR_SPILLWAY';
  /** Later failures (cleanup, consequences of an abort), in the order they happened. */
  readonly suppressed: Error[] = [];

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * A checkpoint file is not valid SPWC. `offset` is the byte offset of the first bad byte (or of
 * the field that is wrong), so a user can look at it with `xxd -s`.
 *
 * @example
 * ```ts
 * const error = new CorruptCheckpointError('job.spwc', 24, 'crc32 mismatch');
 * error.message; // 'job.spwc: corrupt checkpoint at byte 24: crc32 mismatch'
 * ```
 */
export class CorruptCheckpointError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_CORRUPT_CHECKPOINT';

  constructor(
    readonly file: string,
    readonly offset: number,
    readonly reason: string,
  ) {
    super(`${file}: corrupt checkpoint at byte ${offset}: ${reason}`);
  }
}

/**
 * A Flink record type spec (`--type`, `readFlinkRecords({ type })`) that does not parse, or
 * names a type Spillway has no decoder for. Bad input (exit 2); `position` is the 1-based
 * character where the spec went wrong.
 *
 * @example
 * ```ts
 * new TypeSpecError('Tuple<Long,>', 12, "expected a type, found '>'").message;
 * // "type spec 'Tuple<Long,>': at character 12: expected a type, found '>'"
 * ```
 */
export class TypeSpecError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_TYPE_SPEC';

  constructor(
    readonly spec: string,
    readonly position: number,
    readonly reason: string,
  ) {
    const shown = String(spec ?? '');
    super(
      `type spec '${shown.length > 200 ? `${shown.slice(0, 200)}…` : shown}': at character ${position}: ${reason}`,
    );
  }
}

/**
 * A Flink operator named by id, uid or name that the checkpoint does not hold, or that more
 * than one of its operators match, or (`kind` `'subtask'`) a subtask outside the operator's
 * parallelism. Bad input (exit 2); `candidates` lists what the checkpoint does hold (or, when
 * ambiguous, the operators that matched), as `id (name, uid)` strings, or for a subtask the
 * range `0..P-1`; `subtask` is the subtask asked for.
 *
 * @example
 * ```ts
 * const error = new UnknownOperatorError('chk-3/_metadata', 'sink', 'unknown', ['6cdc… (map)']);
 * error.message; // "chk-3/_metadata: unknown operator 'sink'; operators: 6cdc… (map)"
 * new UnknownOperatorError('chk-3/_metadata', '6cdc…', 'subtask', ['0..1'], 9).message;
 * // 'chk-3/_metadata: operator 6cdc… has parallelism 2; subtask 9 does not exist (0..1)'
 * ```
 */
export class UnknownOperatorError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_UNKNOWN_OPERATOR';

  constructor(
    readonly file: string,
    readonly operator: string,
    readonly kind: 'unknown' | 'ambiguous' | 'subtask' = 'unknown',
    readonly candidates: readonly string[] = [],
    readonly subtask?: number,
    /** Said right after the operator: " (did you mean 'slow-join'?)" or what was tried. */
    readonly hint: string = '',
  ) {
    super(
      kind === 'subtask'
        ? `${file}: operator ${operator} has parallelism ${parallelismOf(candidates)}; ` +
            `subtask ${subtask} does not exist (${candidates.join(', ') || 'none'})`
        : `${file}: ${kind} operator '${operator}'${hint}; ` +
            `${kind === 'unknown' ? 'operators' : 'matches'}: ${candidates.join(', ') || 'none'}`,
    );
  }
}

/** The parallelism `P` of a subtask range `0..P-1` (0 when there is none). */
function parallelismOf(candidates: readonly string[]): number {
  const last = /^0\.\.(\d+)$/.exec(candidates[0] ?? '');
  return last === null ? 0 : Number(last[1]) + 1;
}

/**
 * A checkpoint path that is not a usable input: missing, a directory, a FIFO or device, a
 * symlink loop, a dangling link. `errno` is the system's code where there was one (`ENOENT`,
 * `ELOOP`, …).
 *
 * @example
 * ```ts
 * const error = new CheckpointPathError('/tmp', 'is a directory, not a checkpoint file');
 * error.message; // '/tmp: is a directory, not a checkpoint file'
 * ```
 */
export class CheckpointPathError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_CHECKPOINT_PATH';

  constructor(
    readonly file: string,
    readonly reason: string,
    options?: { cause?: unknown; errno?: string },
  ) {
    super(`${file}: ${reason}`, options);
    this.errno = options?.errno;
  }

  readonly errno: string | undefined;
}

/**
 * A remote checkpoint (`http(s)://`, `s3://`) changed while it was read: a resumed request
 * found another ETag or size, or the store refused `If-Match`. Never spliced: the recovery
 * fails. `location` is redacted (no query string, no credentials).
 *
 * @example
 * ```ts
 * const error = new CheckpointChangedError('s3://b/cp.spwc', 1048576, '"a1"', '"b2"');
 * error.message; // 's3://b/cp.spwc: the object changed while it was read (at byte 1048576: …)'
 * ```
 */
export class CheckpointChangedError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_CHECKPOINT_CHANGED';

  constructor(
    readonly location: string,
    readonly offset: number,
    readonly expected: string,
    readonly found: string,
  ) {
    super(
      `${location}: the object changed while it was read (at byte ${offset}: ` +
        `ETag ${expected} when the read began, now ${found}); not spliced, recovery failed`,
    );
  }
}

/** What the remote errors share: the location (redacted) and the reason, as `location: reason`. */
export abstract class RemoteLocationError extends SpillwayError {
  constructor(
    readonly location: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${location}: ${reason}`, options);
  }
}

/**
 * What a remote read that gave up carries besides the location and reason: how many times it
 * was retried first. {@link RemoteError} (failed for good) and {@link RemoteTimeoutError} (its
 * deadline passed) share it; the package groups them under {@link RemoteLocationError} only.
 */
export abstract class RetriedRemoteError extends RemoteLocationError {
  constructor(
    location: string,
    reason: string,
    /** How many times the read was retried before it gave up. */
    readonly retries = 0,
    options?: { cause?: unknown },
  ) {
    super(location, reason, options);
  }
}

/**
 * A remote checkpoint that does not exist: no such object, key or bucket (HTTP 404/410). Bad
 * input, like a missing file. `location` is redacted.
 *
 * @example
 * ```ts
 * new RemoteNotFoundError('s3://b/missing.spwc', 'no such key').message;
 * // 's3://b/missing.spwc: no such key'
 * ```
 */
export class RemoteNotFoundError extends RemoteLocationError {
  override readonly code = 'ERR_SPILLWAY_REMOTE_NOT_FOUND';
}

/**
 * The store refused the credentials or the request (HTTP 401/403, no credentials found): the
 * environment's refusal, reported without any secret. `location` is redacted.
 *
 * @example
 * ```ts
 * new RemoteAccessError('s3://b/cp.spwc', 'access denied (InvalidAccessKeyId)').message;
 * ```
 */
export class RemoteAccessError extends RemoteLocationError {
  override readonly code = 'ERR_SPILLWAY_REMOTE_ACCESS';
}

/**
 * A remote read or upload that failed for good: retries exhausted, the deadline passed, or a
 * response the client cannot use. `retries` = how many times it was retried first.
 *
 * @example
 * ```ts
 * new RemoteError('https://h/cp.spwc?<redacted>', 'gave up after 8 retries: HTTP 503', 8);
 * ```
 */
export class RemoteError extends RetriedRemoteError {
  override readonly code = 'ERR_SPILLWAY_REMOTE';
}

/**
 * A remote checkpoint served in a way no retry can make readable as the object's own bytes: an
 * encoded body (`Content-Encoding: gzip` despite `Accept-Encoding: identity`), no size to prove
 * its end by, a range that starts elsewhere than asked. The location is not a usable checkpoint
 * as it is served, like a FIFO given as a file: bad input (CLI exit 2). `location` is redacted.
 *
 * @example
 * ```ts
 * new RemoteUnsupportedError('https://h/cp.spwc', 'the body is gzip-encoded …').code;
 * // 'ERR_SPILLWAY_REMOTE_UNSUPPORTED'
 * ```
 */
export class RemoteUnsupportedError extends RemoteLocationError {
  override readonly code = 'ERR_SPILLWAY_REMOTE_UNSUPPORTED';
}

/**
 * A remote read that passed its hard deadline (`deadlineMs`, from the first request to the last
 * byte): a server that drips, or accepts and never answers, ends here instead of never. The
 * request in flight was aborted; `retries` = how many times the read was retried first.
 *
 * @example
 * ```ts
 * new RemoteTimeoutError('https://h/cp.spwc', 'deadline of 8000 ms passed at byte 12', 0).code;
 * // 'ERR_SPILLWAY_REMOTE_TIMEOUT'
 * ```
 */
export class RemoteTimeoutError extends RetriedRemoteError {
  override readonly code = 'ERR_SPILLWAY_REMOTE_TIMEOUT';
}

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
 * A spill file ended before a header or body was complete.
 *
 * @example
 * ```ts
 * if (error instanceof SpillEOFError) console.error('spill disk lost data:', error.message);
 * ```
 */
export class SpillEOFError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_SPILL_TRUNCATED';
}

/**
 * A spill segment's body does not match its CRC-32, or its header is impossible.
 *
 * @example
 * ```ts
 * if (error instanceof SpillCorruptError) console.error('spill disk corrupted data');
 * ```
 */
export class SpillCorruptError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_SPILL_CORRUPT';
}

/**
 * One or more files or directories could not be deleted (row C1).
 *
 * @example
 * ```ts
 * if (error instanceof CleanupError) console.error('run spillway sweep later:', error.message);
 * ```
 */
export class CleanupError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_CLEANUP';
}

/**
 * A spill root that must not be used: missing, a symlink, not a directory, or unsafe. `errno`
 * is set when the file system refused (then it is the environment, not the configuration).
 *
 * @example
 * ```ts
 * await SpillRoot.open('/nonexistent').catch((e) => e instanceof SpillRootError); // true
 * ```
 */
export class SpillRootError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_SPILL_ROOT';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.errno = errnoOf(options?.cause);
  }

  readonly errno: string | undefined;
}

/**
 * An output directory that cannot be used (not a directory, a dangling link, a symlink loop).
 *
 * @example
 * ```ts
 * const error = new OutputDirError('out', 'is a file, not a directory');
 * error.message; // 'out: is a file, not a directory'
 * ```
 */
export class OutputDirError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_OUTPUT_DIR';

  constructor(
    readonly dir: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${dir}: ${reason}`, options);
  }
}

/**
 * The output directory already holds a channel file and overwriting was not asked for (G10).
 *
 * @example
 * ```ts
 * const error = new OutputExistsError('out', 'gate-0-channel-0.bin');
 * error.message; // 'out: gate-0-channel-0.bin already exists (pass --overwrite to replace it)'
 * ```
 */
export class OutputExistsError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_OUTPUT_EXISTS';

  constructor(
    readonly dir: string,
    readonly file: string,
  ) {
    super(`${dir}: ${file} already exists (pass --overwrite to replace it)`);
  }
}

/**
 * `flink rewrite` refused to write NEWDIR (bad input, exit 2; nothing is created): `kind` says
 * why — `'selector'` a malformed selector, `'no-match'` a selector that matched no element
 * (without `allowEmpty`), `'partial'` a selector naming a record cut between this channel and
 * the upstream's output state, `'unsupported'` a selection this release cannot rewrite,
 * `'out'` an unusable NEWDIR (not empty, not a directory, remote, inside the source).
 *
 * @example
 * ```ts
 * const error = new RewriteRefusedError('no-match', 'map/0/input/0/1/7 matches no element');
 * error.message; // 'map/0/input/0/1/7 matches no element'
 * ```
 */
export class RewriteRefusedError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_REWRITE_REFUSED';

  constructor(
    readonly kind: 'selector' | 'no-match' | 'partial' | 'unsupported' | 'out',
    readonly reason: string,
  ) {
    super(reason);
  }
}

/**
 * `checkpoint(id, { out })` cannot write to `out`: it already exists (`errno` `EEXIST`; never
 * replaced), its directory is missing (`ENOENT`) or not a directory (`ENOTDIR`). Raised before
 * anything is written, and before the barriers go in.
 *
 * @example
 * ```ts
 * const error = new CheckpointOutError('cp-7.spwc', 'EEXIST', 'already exists');
 * error.message; // 'cp-7.spwc: already exists'
 * ```
 */
export class CheckpointOutError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_CHECKPOINT_OUT';

  constructor(
    readonly out: string,
    readonly errno: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${out}: ${reason}`, options);
  }
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
 * A file system or network call of Spillway's own failed (`ENOSPC` writing a spill file, `EIO`
 * reading the checkpoint). `errno`, `syscall` and `path` are the original's; `cause` is it.
 *
 * @example
 * ```ts
 * const error = new IoError(Object.assign(new Error('ENOSPC: no space left'), { code: 'ENOSPC' }));
 * error.errno; // 'ENOSPC'
 * ```
 */
export class IoError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_IO';
  readonly errno: string | undefined;
  readonly syscall: string | undefined;
  readonly path: string | undefined;

  constructor(cause: unknown) {
    super(messageOf(cause), { cause });
    const e = cause as NodeJS.ErrnoException | undefined;
    this.errno = errnoOf(cause);
    this.syscall = e?.syscall;
    this.path = e?.path;
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

function messageOf(value: unknown): string {
  if (value instanceof Error) return value.message;
  return typeof value === 'string' ? value : String(JSON.stringify(value) ?? value);
}

/**
 * The errno code of a system error (`ENOSPC`, `EIO`, …), if it has one.
 *
 * @example
 * ```ts
 * errnoOf(Object.assign(new Error('x'), { code: 'EIO' })); // 'EIO'
 * ```
 */
export function errnoOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^E[A-Z0-9]+$/.test(code) ? code : undefined;
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
