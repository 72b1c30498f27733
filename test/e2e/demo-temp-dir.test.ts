/**
 * `spillway demo` removes its temp dir (`spillway-demo-*`, the checkpoint's copies) on every
 * ending: its stdout and stderr closed under it (the summary write then fails with EPIPE), a
 * SIGHUP, and a closed terminal (a real pseudo-terminal whose master goes away: SIGHUP and EIO
 * on every later write). Each child gets a private TMPDIR, so what it leaves is plain to see.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { spawnTracked, waitFor } from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { demoDirs, spillwayBin, startDemo } from './harness.ts';

const haveScript = (() => {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe('demo temp dir removed on every ending', () => {
  it('stdout and stderr closed mid-run: the failing summary write does not crash, no spillway-demo-* dir left', async () => {
    const { tmp, child } = await startDemo(['--tasks', '2', '--loops', '40', '--state-mb', '1']);
    child.proc.stdout!.destroy();
    child.proc.stderr!.destroy();
    const { code, signal } = await child.exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(await demoDirs(tmp)).toEqual([]);
  });

  it('SIGHUP mid-run: exit 129, no spillway-demo-* dir left', async () => {
    const { tmp, child } = await startDemo([
      '--tasks',
      '2',
      '--loops',
      '100000',
      '--state-mb',
      '1',
    ]);
    child.proc.kill('SIGHUP');
    const { code } = await child.exited;
    expect(code).toBe(129);
    expect(await demoDirs(tmp)).toEqual([]);
  });

  it.skipIf(!haveScript)(
    'terminal closed mid-run (pty master gone: SIGHUP, then EIO on writes): no spillway-demo-* dir left',
    async () => {
      const tmp = await makeTempRoot();
      const cmd = `'${process.execPath}' '${spillwayBin}' demo --tasks 2 --loops 100000 --state-mb 1`;
      const term = spawnTracked('script', ['-qfc', cmd, '/dev/null'], {
        env: { TMPDIR: tmp, SPILLWAY_SPILL_ROOT: '' },
      });
      // The demo draws its progress bar on the terminal: it is running and writing to it.
      await waitFor(
        'the progress bar on the terminal',
        () => (term.stdout.includes('/100000') ? true : undefined),
        {
          child: term,
        },
      );
      expect(await demoDirs(tmp)).toHaveLength(1);
      const demoPids = execFileSync('pgrep', ['-P', String(term.proc.pid)])
        .toString()
        .trim()
        .split(/\s+/)
        .map(Number);
      term.proc.kill('SIGKILL');
      try {
        await waitFor(
          'the demo to remove its temp dir',
          async () => ((await demoDirs(tmp)).length === 0 ? true : undefined),
          { timeoutMs: 60_000 },
        );
        await waitFor('the demo to exit', () =>
          demoPids.every((pid) => {
            try {
              process.kill(pid, 0);
              return false;
            } catch {
              return true;
            }
          })
            ? true
            : undefined,
        );
      } finally {
        for (const pid of demoPids) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      }
    },
    90_000,
  );
});
