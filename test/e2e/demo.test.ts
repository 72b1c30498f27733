/**
 * `spillway demo` and `spillway soak` end to end: the real CLI as a child with its own TMPDIR,
 * so the demo's temp spill root lands where the test can see it (and check it is gone after).
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { runCli, spawnCli, type Finished } from './harness.ts';

/** Runs `spillway args` to its end with TMPDIR = `tmp`. */
function spillway(args: string[], tmp: string): Promise<Finished> {
  return runCli(args, { TMPDIR: tmp, NO_COLOR: '1' });
}

/** What the demo or soak left in TMPDIR (tsx's own cache dir is not ours). */
async function leftovers(tmp: string): Promise<string[]> {
  return (await readdir(tmp)).filter((name) => name.startsWith('spillway-'));
}

/** Some task dir under a demo's spill root in `tmp`, once one exists. */
async function someTaskDir(tmp: string): Promise<string | undefined> {
  for (const box of await leftovers(tmp)) {
    const owners = await readdir(join(tmp, box, 'spillway')).catch(() => []);
    for (const owner of owners) {
      const entries = await readdir(join(tmp, box, 'spillway', owner)).catch(() => []);
      const task = entries.find((e) => e.startsWith('task-'));
      if (task !== undefined) return join(tmp, box, 'spillway', owner, task);
    }
  }
  return undefined;
}

describe('spillway demo and soak (real CLI, child process)', () => {
  it('demo --json: every fault kind injected, 0 leaked files, 0 masked causes, spill root removed', async () => {
    const tmp = await makeTempRoot();
    const r = await spillway(
      ['demo', '--tasks', '2', '--loops', '24', '--state-mb', '1', '--seed', '5', '--json'],
      tmp,
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(out).toMatchObject({
      recoveries: 24,
      leakedFiles: 0,
      maskedCauses: 0,
      deliveryErrors: 0,
      faultsMissed: 0,
      spillRootClean: true,
      interrupted: false,
    });
    expect(Object.keys(out.faults as object).sort()).toEqual(
      [
        'cancel-after-failure',
        'cancel-drain',
        'cancel-fetch',
        'cancel-gap',
        'checkpoint',
        'close-error',
        'drain-error',
        'enospc',
        'executor-rejected',
        'fetch-error',
        'mail-dropped',
        'mail-rejected',
      ].sort(),
    );
    expect(out.bytesDelivered).toEqual(expect.any(Number));
    expect(out.spillFilesWritten as number).toBeGreaterThan(24);
    expect(out.durationMs).toEqual(expect.any(Number));
    expect(await leftovers(tmp)).toEqual([]);
  });

  it('soak --json: no leak of spill files, causes, heap or file descriptors', async () => {
    const tmp = await makeTempRoot();
    const r = await spillway(['soak', '--loops', '48', '--seed', '11', '--json'], tmp);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, number>;
    expect(out).toMatchObject({
      loops: 48,
      leakedFiles: 0,
      maskedCauses: 0,
      fdDelta: 0,
      fdsClosedByGc: 0,
    });
    expect(out.heapGrowthMiB).toBeLessThanOrEqual(5);
    expect(await leftovers(tmp)).toEqual([]);
  });

  it('SIGINT during the demo cancels every task, exits 130 and leaves no spill file', async () => {
    const tmp = await makeTempRoot();
    const child = spawnCli(['demo', '--loops', '1000000', '--json'], {
      TMPDIR: tmp,
      NO_COLOR: '1',
    });
    child.proc.stdin!.end();
    await waitFor('a task dir of the demo', () => someTaskDir(tmp), { child });
    child.proc.kill('SIGINT');
    await child.exited;
    const r = { code: child.proc.exitCode, stdout: child.stdout, stderr: child.stderr };
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/cancelled by SIGINT .* every task cleaned up, spill root removed/);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(out).toMatchObject({
      interrupted: true,
      leakedFiles: 0,
      maskedCauses: 0,
      spillRootClean: true,
    });
    expect(await leftovers(tmp)).toEqual([]);
  });

  it('usage errors exit 2 with one line; --help exits 0', async () => {
    const tmp = await makeTempRoot();
    const [badFault, badInspect, badLoops, help] = await Promise.all([
      spillway(['demo', '--faults', 'enospc,nope'], tmp),
      spillway(['--inspect=x'], tmp),
      spillway(['soak', '--loops', 'many'], tmp),
      spillway(['soak', '--help'], tmp),
    ]);
    for (const r of [badFault, badInspect, badLoops]) {
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    }
    expect(badFault.stderr).toMatch(/^spillway demo: unknown fault kind 'nope'/);
    expect(badInspect.stderr).toMatch(/^spillway demo: --inspect=PORT needs a port/);
    expect(badLoops.stderr).toMatch(/^spillway soak: --loops must be a whole number/);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: spillway soak \[--loops N\] \[--seed S\] \[--json\]/);
    expect(await leftovers(tmp)).toEqual([]);
  });
});
