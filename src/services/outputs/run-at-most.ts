/**
 * Runs jobs with at most `limit` in flight, in order. After the first failure no job starts;
 * the ones in flight are awaited (their sinks are still open: nothing may be discarded under
 * them) and the first cause is thrown, later ones in its `.suppressed`.
 */
import { ErrorCollector } from '../errors.ts';

/** How many sides of `recover --all` run at once: one's fetch overlaps another's drain. */
export const SIDES_AT_ONCE = 2;

/**
 * @param beforeEach called before each job starts; a throw there (a cancel) stops the run.
 * @example
 * ```ts
 * await runAtMost(2, [() => a(), () => b(), () => c()], () => signal.throwIfAborted());
 * ```
 */
export async function runAtMost(
  limit: number,
  jobs: readonly (() => Promise<void>)[],
  beforeEach: () => void,
): Promise<void> {
  let next = 0;
  const errors = new ErrorCollector();
  const lane = async () => {
    while (errors.error === undefined && next < jobs.length) {
      const job = jobs[next++]!;
      try {
        beforeEach();
        await job();
      } catch (e) {
        errors.add(e);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, lane));
  errors.throwIfAny();
}
