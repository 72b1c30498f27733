/** How an error becomes an exit code and what a person reads on stderr (docs/cli.md). */
import {
  CheckpointPathError,
  CleanupError,
  CorruptCheckpointError,
  OutputDirError,
  OutputExistsError,
  RemoteNotFoundError,
  RemoteUnsupportedError,
  RewriteRefusedError,
  SpillRootError,
  TypeSpecError,
  UnknownOperatorError,
  suppressedOf,
} from '../services/errors.ts';
import { UsageError } from './args.ts';
import { redactText } from '../services/locations/redact.ts';
import { oneLine } from './terminal-text.ts';
import type { Io } from './io.ts';

/** Whether an error is the caller's input or configuration (exit 2), not a failure (exit 1). */
function isBadInput(error: unknown): boolean {
  if (
    error instanceof UsageError ||
    error instanceof CorruptCheckpointError ||
    error instanceof CheckpointPathError ||
    error instanceof OutputDirError ||
    error instanceof OutputExistsError ||
    error instanceof RemoteNotFoundError ||
    error instanceof RemoteUnsupportedError ||
    error instanceof RewriteRefusedError ||
    error instanceof UnknownOperatorError ||
    error instanceof TypeSpecError
  ) {
    return true;
  }
  // An unusable spill root (missing, a symlink, world-writable) is the caller's configuration;
  // one the file system refused to write (ENOSPC, EROFS, EIO) is the environment failing.
  // A spill root that does not exist (or whose path cannot name one) is the same mistake.
  return (
    error instanceof SpillRootError &&
    (error.errno === undefined ||
      ['ENOENT', 'ENOTDIR', 'ENAMETOOLONG', 'ELOOP'].includes(error.errno))
  );
}

/** A delete that failed: a file may be left behind. */
function isCleanupFailure(error: Error): boolean {
  const syscall = (error as NodeJS.ErrnoException).syscall;
  return (
    error instanceof CleanupError || syscall === 'rm' || syscall === 'unlink' || syscall === 'rmdir'
  );
}

/**
 * Prints the error for a person and returns the exit code: 2 for bad input or usage (one line,
 * no stack), 1 for a failure (the first cause, naming the real errno). Either way the errors
 * it hides are not lost: a line counts them and names the first cleanup failure, since a file
 * left behind is something the user must know about.
 */
export function reportError(io: Io, error: unknown, command: string, json = false): number {
  const code = reportErrorText(io, error, command);
  // `--json`: one object on stdout on failure too, with the same exit code (DESIGN §4).
  if (json) io.out.write(`${JSON.stringify({ error: errorJson(error) })}\n`);
  return code;
}

/**
 * The `error` object `--json` prints on failure: `code` (the error's stable code, or
 * `ERR_SPILLWAY_INTERNAL` for a foreign one), `message` (redacted), and what else identifies it.
 */
export function errorJson(error: unknown): Record<string, unknown> {
  const e = error as Record<string, unknown> & { message?: unknown };
  const raw = typeof e?.code === 'string' ? e.code : undefined;
  const out: Record<string, unknown> = {
    code:
      raw !== undefined && /^(ERR_SPILLWAY|ABORT_ERR)/.test(raw) ? raw : 'ERR_SPILLWAY_INTERNAL',
    message: redactText(typeof e?.message === 'string' ? e.message : String(error)),
  };
  for (const key of ['errno', 'file', 'offset', 'dir', 'out'] as const) {
    const v = e?.[key];
    if (typeof v === 'string' || typeof v === 'number')
      out[key] = key === 'file' || key === 'dir' || key === 'out' ? redactText(String(v)) : v;
  }
  if (raw !== undefined && out.code === 'ERR_SPILLWAY_INTERNAL' && /^E[A-Z0-9]+$/.test(raw))
    out.errno = raw;
  const later = suppressedOf(error).length;
  if (later > 0) out.suppressed = later;
  return out;
}

function reportErrorText(io: Io, error: unknown, command: string): number {
  const e = error as Error | undefined;
  // A presigned URL's signature or an AWS secret never reaches a terminal or a log.
  const message = oneLine(redactText(e?.message ?? String(error)));
  let code: number;
  if (error instanceof UsageError) {
    io.err.write(`spillway ${command}: ${message} (see 'spillway ${command} --help')\n`);
    code = 2;
  } else if (isBadInput(error)) {
    io.err.write(`spillway ${command}: ${message}\n`);
    code = 2;
  } else {
    io.err.write(`spillway ${command}: failed: ${message}\n`);
    code = 1;
  }
  const later = suppressedOf(error);
  if (later.length > 0) {
    const cleanup = later.filter(isCleanupFailure);
    io.err.write(
      `  (${later.length} later error(s) suppressed` +
        (cleanup.length > 0
          ? `, ${cleanup.length} of them cleanup failures: ${oneLine(redactText(cleanup[0]!.message))}`
          : '') +
        `; SPILLWAY_DEBUG=1 lists them)\n`,
    );
    if (process.env.SPILLWAY_DEBUG) {
      for (const s of later) io.err.write(`  - ${oneLine(redactText(s.message))}\n`);
    }
  }
  if (process.env.SPILLWAY_DEBUG && e?.stack && code === 1)
    io.err.write(`${redactText(e.stack)}\n`);
  return code;
}
