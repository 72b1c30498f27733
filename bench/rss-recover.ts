/**
 * Peak RSS of `spillway recover` on a large checkpoint (G8: memory must not grow with state
 * size). Makes the checkpoint in a temp dir, runs the real CLI once, prints one JSON line and
 * removes everything it made.
 *
 * Usage: `node --import tsx bench/rss-recover.ts [--mb 1024] [--max-spill-file-bytes 64M]`
 *
 * The figure comes from `/usr/bin/time -v` ("Maximum resident set size", the kernel's
 * ru_maxrss of the child) when it exists, else from polling `/proc/<pid>/status` VmHWM (a
 * lower bound: growth in the last poll interval before exit is missed).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { makeCheckpoint } from '../src/services/formats/spwc/generator.ts';

const { values } = parseArgs({
  options: { mb: { type: 'string' }, 'max-spill-file-bytes': { type: 'string' } },
});
const mb = Number(values.mb ?? 1024);
const maxSpill = values['max-spill-file-bytes'] ?? '64M';
const bin = fileURLToPath(new URL('../bin/spillway', import.meta.url));
const TIME = '/usr/bin/time';

function vmHwm(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

const dir = await mkdtemp(join(tmpdir(), 'spillway-bench-'));
try {
  const checkpoint = join(dir, 'big.spwc');
  const root = join(dir, 'root');
  await mkdir(root);
  const made = await makeCheckpoint({ out: checkpoint, gates: 2, channels: 4, mb, seed: 1 });

  const useTime = existsSync(TIME);
  const cli = [bin, 'recover', checkpoint, '--out', join(dir, 'out'), '--spill-root', root];
  const args = [...cli, '--max-spill-file-bytes', maxSpill, '--json'];
  // Through `time -v` the CLI is time's child: `env` execs node in place, so ru_maxrss is node's.
  const child = useTime
    ? spawn(TIME, ['-v', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(args[0]!, args.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // Under `time` the pid is time's own, not node's: nothing to poll then.
  let polled = 0;
  const poll = useTime
    ? undefined
    : setInterval(() => {
        polled = Math.max(polled, vmHwm(child.pid!) ?? 0);
      }, 20);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (poll) clearInterval(poll);
  if (code !== 0) throw new Error(`recover exited ${code}: ${stderr}`);

  const report = JSON.parse(stdout) as { spillFiles: number; durationMs: number; bytes: number };
  const maxRss = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr);
  if (useTime && !maxRss) throw new Error(`no maximum RSS in ${TIME} output: ${stderr}`);
  const peak = maxRss ? Number(maxRss[1]) * 1024 : polled;
  process.stdout.write(
    `${JSON.stringify({
      checkpointMiB: Math.round(made.payloadBytes / 2 ** 20),
      peakRssMiB: Math.round((peak / 2 ** 20) * 10) / 10,
      method: useTime ? '/usr/bin/time -v (ru_maxrss)' : '/proc VmHWM polling',
      spillFiles: report.spillFiles,
      bytes: report.bytes,
      durationMs: report.durationMs,
    })}\n`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
