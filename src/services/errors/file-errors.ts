/**
 * Errors of the files Spillway writes: its spill files and spill root, `--out`, a rewrite's
 * NEWDIR, a checkpoint's `out`, and any file system or network call of its own.
 */
import type { ErrorKind } from './codes.ts';
import { SpillwayError, errnoOf, messageOf } from './base.ts';

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

  /**
   * The caller's configuration (missing, a symlink, world-writable, a path that cannot name a
   * directory), unless the file system refused a write (ENOSPC, EROFS, EIO): the environment.
   */
  override get errorKind(): ErrorKind {
    return this.errno === undefined || CONFIGURATION_ERRNOS.includes(this.errno)
      ? 'input'
      : 'environment';
  }
}

/** The errnos that say a spill root does not exist (or its path cannot name one). */
const CONFIGURATION_ERRNOS: readonly string[] = ['ENOENT', 'ENOTDIR', 'ENAMETOOLONG', 'ELOOP'];

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
