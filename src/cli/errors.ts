/** How an error becomes an exit code and one line on stderr (DESIGN §4). */
import { CorruptCheckpointError, SpillRootError, suppressedOf } from '../services/errors.ts';
import { UsageError } from './args.ts';
import type { Io } from './io.ts';

/**
 * Prints the error for a person and returns the exit code: 2 for bad input or usage (one line,
 * no stack), 1 for a failed recovery (the first cause, then how many later errors it hides).
 */
export function reportError(io: Io, error: unknown, command: string): number {
  if (error instanceof UsageError) {
    io.err.write(`spillway ${command}: ${error.message} (see 'spillway ${command} --help')\n`);
    return 2;
  }
  // An unusable spill root (missing, a symlink, world-writable) is the caller's configuration.
  if (error instanceof CorruptCheckpointError || error instanceof SpillRootError) {
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
