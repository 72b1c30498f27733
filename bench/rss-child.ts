/**
 * Child process of the `peakRssMiBAt2GiB` measurement: recovers one checkpoint into discarding
 * consumers through the full task machine with default limits, then prints one JSON line with
 * the bytes delivered and its own VmHWM. With `--baseline` it only loads the same modules, so
 * the parent can tell Node's own footprint from what a recovery adds.
 *
 * With TASKS it runs that many recoveries of the checkpoint at once in this one process (the
 * memory a task costs).
 *
 * usage: node --import <tsx> bench/rss-child.ts CHECKPOINT SPILL_ROOT [TASKS] | --baseline
 */
import { readFileSync } from 'node:fs';
import { startRecovery } from '../src/recover.ts';
import { SpillRoot } from '../src/services/spill-root/spill-root.ts';
import { discardingConsumer } from './stages.ts';

function vmHwmKiB(): number {
  const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : 0;
}

const [checkpoint, spillRoot, tasksArg] = process.argv.slice(2);
if (checkpoint === '--baseline') {
  process.stdout.write(`${JSON.stringify({ bytes: 0, vmHwmKiB: vmHwmKiB() })}\n`);
} else {
  if (checkpoint === undefined || spillRoot === undefined) {
    process.stderr.write('usage: rss-child.ts CHECKPOINT SPILL_ROOT | --baseline\n');
    process.exit(2);
  }
  // SIGINT from the parent (the bench was interrupted) cancels, so the spill files go too.
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort('SIGINT'));
  const t0 = performance.now();
  const tasks = Math.max(1, Number(tasksArg ?? 1));
  const reports = await Promise.all(
    Array.from(
      { length: tasks },
      (_, k) =>
        startRecovery({
          checkpoint,
          spillRoot,
          taskId: tasks === 1 ? 'bench-rss' : `bench-rss-${k}`,
          signal: controller.signal,
          channels: () => discardingConsumer,
        }).done,
    ),
  );
  const report = {
    bytesDelivered: reports.reduce((sum, r) => sum + r.bytesDelivered, 0),
    spillFiles: reports.reduce((sum, r) => sum + r.spillFiles, 0),
  };
  const ms = performance.now() - t0;
  await (await SpillRoot.open(spillRoot)).close();
  process.stdout.write(
    `${JSON.stringify({ bytes: report.bytesDelivered, ms, spillFiles: report.spillFiles, vmHwmKiB: vmHwmKiB() })}\n`,
  );
}
