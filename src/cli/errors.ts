/** How an error becomes an exit code and what a person reads on stderr (docs/cli.md). */
import {
  CleanupError,
  FOREIGN_ERROR_CODE,
  SpillwayError,
  isErrorCode,
  suppressedOf,
} from '../services/errors.ts';
import type { ErrorKind } from '../services/errors.ts';
import { UsageError } from './args.ts';
import { redactText } from '../services/locations/redact.ts';
import { oneLine } from './terminal-text.ts';
import type { Io } from './io.ts';

/**
 * The exit code of each error kind (docs/cli.md): the caller's input or configuration is 2, a
 * failure (the environment's or a bug) is 1. The only place an exit code is chosen for an error.
 */
const EXIT_CODE_OF_KIND = {
  input: 2,
  environment: 1,
  internal: 1,
} as const satisfies Record<ErrorKind, number>;

/** The exit code for an error: its kind's, and 1 for anything that is not one of ours. */
export function exitCodeOf(error: unknown): number {
  return error instanceof SpillwayError ? EXIT_CODE_OF_KIND[error.errorKind] : 1;
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
    code: isErrorCode(raw) ? raw : FOREIGN_ERROR_CODE,
    message: redactText(typeof e?.message === 'string' ? e.message : String(error)),
  };
  for (const key of ['errno', 'file', 'offset', 'dir', 'out'] as const) {
    const v = e?.[key];
    if (typeof v === 'string' || typeof v === 'number')
      out[key] = key === 'file' || key === 'dir' || key === 'out' ? redactText(String(v)) : v;
  }
  if (raw !== undefined && out.code === FOREIGN_ERROR_CODE && /^E[A-Z0-9]+$/.test(raw))
    out.errno = raw;
  const later = suppressedOf(error).length;
  if (later > 0) out.suppressed = later;
  return out;
}

function reportErrorText(io: Io, error: unknown, command: string): number {
  const e = error as Error | undefined;
  // A presigned URL's signature or an AWS secret never reaches a terminal or a log.
  const message = oneLine(redactText(e?.message ?? String(error)));
  const code = exitCodeOf(error);
  if (error instanceof UsageError) {
    io.err.write(`spillway ${command}: ${message} (see 'spillway ${command} --help')\n`);
  } else if (code === 2) {
    io.err.write(`spillway ${command}: ${message}\n`);
  } else {
    io.err.write(`spillway ${command}: failed: ${message}\n`);
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
