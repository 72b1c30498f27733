/** How an error becomes an exit code and one line on stderr (DESIGN §4). */
import { CorruptCheckpointError, suppressedOf } from '../services/errors.ts';
import { UsageError } from './args.ts';
import type { Io } from './io.ts';

/** Bad input that names a file: the checkpoint is missing or unreadable. */
export function isBadInput(error: unknown): boolean {
  return error instanceof UsageError || error instanceof CorruptCheckpointError;
}

/**
 * Prints the error for a person and returns the exit code: 2 for bad input or usage (one line,
 * no stack), 1 for a failed recovery (the first cause, then how many later errors it hides).
 */
export function reportError(io: Io, error: unknown, command: string): number {
  if (error instanceof UsageError) {
    io.err.write(`spillway ${command}: ${error.message} (see 'spillway ${command} --help')\n`);
    return 2;
  }
  if (error instanceof CorruptCheckpointError) {
    io.err.write(`spillway ${command}: ${error.message}\n`);
    return 2;
  }
  const e = error as Error;
  io.err.write(`spillway ${command}: failed: ${e?.message ?? String(error)}\n`);
  const later = suppressedOf(error);
  if (later.length > 0) {
    io.err.write(`  (${later.length} later error(s) suppressed; SPILLWAY_DEBUG=1 shows them)\n`);
    if (process.env.SPILLWAY_DEBUG) for (const s of later) io.err.write(`  - ${s.message}\n`);
  }
  if (process.env.SPILLWAY_DEBUG && e?.stack) io.err.write(`${e.stack}\n`);
  return 1;
}
