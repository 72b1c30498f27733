/**
 * The real-Flink harness as the tests meet it: where it lives, and whether this machine can
 * run it. A suite that needs it runs only when `java` and `mvn` are on PATH and otherwise skips
 * with one printed line saying which is missing (nothing outside the repo is needed by a test).
 */
import { join } from 'node:path';
import { describe } from 'vitest';
import { buildHarness, missingJvmTools } from '../../bench/jvm-harness.ts';
import { repoRoot } from './processes.ts';

/** interop/flink: the Maven project of the Java programs (build.sh, run.sh). */
export const harnessDir = join(repoRoot, 'interop', 'flink');

/** One Maven build per release and test file: the classpath of its programs. */
const builds = new Map<string, Promise<string>>();

/**
 * Builds the harness for a release (`build.sh`: one Maven at a time) once per test file and
 * gives the classpath of its programs, for `java -cp`. Programs that start a MiniCluster take
 * `--tmp DIR`: pass one inside the test's temp dir, so Flink's temp files go where the test
 * removes them once the JVM has exited.
 *
 * @example
 * ```ts
 * const cp = await harnessClasspath('flink2');
 * await run('java', ['-cp', cp, 'dev.spillway.flink.PoisonJob', 'write', '--tmp', join(dir, 'flink-tmp'), …]);
 * ```
 */
export function harnessClasspath(profile: 'flink1' | 'flink2'): Promise<string> {
  let built = builds.get(profile);
  if (built === undefined) {
    const t0 = performance.now();
    built = buildHarness(profile).then((classpath) => {
      const s = ((performance.now() - t0) / 1000).toFixed(1);
      console.log(`flink harness ${profile}: maven ${s} s`);
      return classpath;
    });
    builds.set(profile, built);
  }
  return built;
}

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
