/**
 * The real-Flink harness as the tests meet it: where it lives, and whether this machine can
 * run it. A suite that needs it runs only when `java` and `mvn` are on PATH and otherwise skips
 * with one printed line saying which is missing (nothing outside the repo is needed by a test).
 */
import { join } from 'node:path';
import { describe } from 'vitest';
import { missingJvmTools } from '../../bench/jvm-harness.ts';
import { repoRoot } from './processes.ts';

/** interop/flink: the Maven project of the Java programs (build.sh, run.sh). */
export const harnessDir = join(repoRoot, 'interop', 'flink');

/**
 * `describe` when the harness can run; otherwise `describe.skip`, having printed
 * `<name>: skipped, <tools> not on PATH<why>`.
 *
 * @example
 * ```ts
 * const suite = harnessSuite('rewrite-real-flink');
 * suite('a real Flink restores the rewrite', () => { ... });
 * ```
 */
export function harnessSuite(name: string, why = ''): typeof describe | typeof describe.skip {
  const missing = missingJvmTools();
  if (missing.length === 0) return describe;
  console.log(`${name}: skipped, ${missing.join(' and ')} not on PATH${why}`);
  return describe.skip;
}
