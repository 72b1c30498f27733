/**
 * Child process of the `flinkVsSpwc` measurement (bench/flink.ts): runs
 * `measureFlinkVsSpwc` in a process of its own and prints its figures as one JSON line.
 *
 * Why a process of its own: the bench's process carries the heap its earlier phases grew, and
 * a major GC there lands on the side that allocates more (the Flink fetch reads and plans its
 * `_metadata`: objects per handle and per entry). In a fresh process holding ~1 M objects
 * besides, the ratio fell from 0.95–0.99 to 0.89–0.94 (4 processes each); a user's `recover`
 * of either checkpoint runs in a process of its own.
 *
 * usage: node [--import <tsx>] bench/flink-child.ts DIR MB RUNS SEED
 */
import { measureFlinkVsSpwc } from './flink.ts';

const [dir, mb, runs, seed] = process.argv.slice(2);
if (dir === undefined || seed === undefined) {
  process.stderr.write('usage: flink-child.ts DIR MB RUNS SEED\n');
  process.exit(2);
}
// SIGINT from the parent (the bench was interrupted): stop between pairs; the files go.
const controller = new AbortController();
process.once('SIGINT', () => controller.abort(new Error('interrupted')));
const figures = await measureFlinkVsSpwc({
  dir,
  mb: Number(mb),
  runs: Number(runs),
  seed: Number(seed),
  signal: controller.signal,
});
process.stdout.write(`${JSON.stringify(figures)}\n`);
