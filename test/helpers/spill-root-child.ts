/**
 * A child process for the G7 tests: opens a spill root with the real `SpillRoot`, puts a spill
 * file in a task dir, prints `{"ownerDir", "taskDir"}` as one line, then ends as told.
 *
 * Usage: `node --import tsx test/helpers/spill-root-child.ts <mode> <root>` where mode is
 * `exit` (ends normally), `throw` (uncaught exception), `sigterm` (waits; exits 143 on SIGTERM,
 * as the CLI does), `hang` (waits for SIGKILL) or `sweep` (prints a sweep report and exits).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SpillRoot } from '../../src/services/spill-root/spill-root.ts';
import { sweepSpillRoot } from '../../src/services/spill-root/sweep.ts';

const [mode, root] = process.argv.slice(2);
if (mode === undefined || root === undefined) throw new Error('usage: <mode> <root>');

if (mode === 'sweep') {
  process.stdout.write(`${JSON.stringify(await sweepSpillRoot(root, { log: () => {} }))}\n`);
} else {
  const spill = await SpillRoot.open(root, { log: () => {} });
  const taskDir = spill.taskDirPath('child');
  await mkdir(taskDir, { mode: 0o700 });
  await writeFile(join(taskDir, 'spill-segment-0.bin'), Buffer.alloc(4096, 7));
  if (mode === 'sigterm') process.on('SIGTERM', () => process.exit(143));
  process.stdout.write(`${JSON.stringify({ ownerDir: spill.ownerDir, taskDir })}\n`);
  if (mode === 'throw')
    setTimeout(() => {
      throw new Error('child crashed on purpose');
    }, 10);
  // Keep the event loop alive until a signal arrives; 'exit' mode just falls off the end.
  if (mode === 'sigterm' || mode === 'hang') setInterval(() => {}, 1 << 30);
}
