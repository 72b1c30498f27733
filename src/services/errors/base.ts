/**
 * The base of every Spillway error, and the two readings of a foreign error the classes use
 * (its message, its errno). The rule the classes serve (G5): the first real cause is the error;
 * everything that goes wrong after it is attached to `.suppressed`, in order, and never
 * replaces it.
 */
import { ERROR_CODES, type ErrorKind, type SpillwayErrorCode } from './codes.ts';

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
  /** What failed, stable across versions: one of {@link ERROR_CODES}. */
  readonly code: SpillwayErrorCode = 'ERR_SPILLWAY';
  /** Later failures (cleanup, consequences of an abort), in the order they happened. */
  readonly suppressed: Error[] = [];

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }

  /**
   * Whose error this is ({@link ErrorKind}), read from the code's row in {@link ERROR_CODES}:
   * the CLI's exit code follows it. Named `errorKind` because two classes already use `kind`
   * for their own detail (`UnknownOperatorError`, `RewriteRefusedError`).
   */
  get errorKind(): ErrorKind {
    return ERROR_CODES[this.code];
  }
}

/** The message of any throwable: an Error's own, a string as it is, anything else as JSON. */
export function messageOf(value: unknown): string {
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
