/**
 * Errors about the checkpoint a recovery reads: a file that is not valid, a path that is not a
 * file, an operator or type the checkpoint cannot serve, a remote object that changed.
 */
import { SpillwayError } from './base.ts';

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
