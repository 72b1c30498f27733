/**
 * The documented range of every numeric option, in one place: the library's checks, the CLI's
 * flags and environment knobs, and the README all read it. Each upper bound keeps a value inside
 * the range from reaching a native limit:
 *
 * - byte sizes a buffer is allocated for or a single `fs.read` is asked for stay far below
 *   `fs.read`'s 2 GiB − 1 per call (Node aborts the process on more: `readChunkBytes: 2**31` was
 *   a SIGABRT) and below what one `Buffer` may hold;
 * - milliseconds stay within a timer's 2³¹ − 1 ms (above it Node fires the timer after 1 ms);
 * - file sizes and offsets stay below 2⁵³ (exact integers), with room for a spill file to grow.
 */
import { invalidOption } from './option-error.ts';

/** An inclusive integer range and why it ends where it does. */
export interface OptionRange {
  readonly min: number;
  readonly max: number;
}

const MiB = 1024 * 1024;
/** The longest delay a Node timer honours (2³¹ − 1 ms, about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Every numeric option of `recoverChannelState`, by its path under `options`. */
export const OPTION_RANGES = {
  'limits.maxSpillFileBytes': { min: 1, max: 2 ** 50 },
  // A segment is buffered whole on the rescale path (its bufferBytes default): 1 GiB at most.
  'limits.maxSegmentBytes': { min: 1, max: 1024 * MiB },
  'limits.bufferBytes': { min: 1, max: 1024 * MiB },
  // A read-ahead buffer holds two chunks; one read asks for one chunk (fs.read: < 2 GiB).
  'limits.readChunkBytes': { min: 1, max: 256 * MiB },
  'remote.maxRetries': { min: 0, max: 1_000_000 },
  'remote.backoffMs': { min: 0, max: MAX_TIMER_MS },
  'remote.maxBackoffMs': { min: 0, max: MAX_TIMER_MS },
  'remote.stallTimeoutMs': { min: 0, max: MAX_TIMER_MS },
  'remote.deadlineMs': { min: 0, max: MAX_TIMER_MS },
  abandonAfterMs: { min: 0, max: MAX_TIMER_MS },
  progressIntervalMs: { min: 0, max: MAX_TIMER_MS },
  // Flink's largest max parallelism is 32768: subtask indexes are below it.
  'flink.subtask': { min: 0, max: 32767 },
} as const satisfies Record<string, OptionRange>;

export type RangedOption = keyof typeof OPTION_RANGES;

/**
 * Checks one numeric option against its documented range: not a number → `TypeError`
 * (`ERR_INVALID_ARG_TYPE`); not an integer (or not finite) → `TypeError`
 * (`ERR_INVALID_ARG_VALUE`); an integer outside the range → `RangeError` (`ERR_OUT_OF_RANGE`),
 * as Node's own APIs do. `undefined` (the default) passes.
 *
 * @example
 * ```ts
 * checkRange('limits.readChunkBytes', 2 ** 31);
 * // RangeError [ERR_OUT_OF_RANGE]: options.limits.readChunkBytes must be an integer from 1 to 268435456; got 2147483648
 * ```
 */
export function checkRange(name: RangedOption, value: unknown): void {
  if (value === undefined) return;
  const { min, max } = OPTION_RANGES[name];
  const expected = `an integer from ${min} to ${max}`;
  if (typeof value !== 'number') throw invalidOption(name, expected, value);
  if (!Number.isInteger(value)) throw invalidOption(name, expected, value, true);
  if (value < min || value > max) {
    const error = new RangeError(
      `options.${name} must be ${expected}; got ${value}`,
    ) as RangeError & { code: string };
    error.code = 'ERR_OUT_OF_RANGE';
    throw error;
  }
}
