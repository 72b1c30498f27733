/**
 * Every terminating signal — HUP, INT, QUIT, TERM, USR2, ALRM — cancels a running `spillway
 * recover` (docs/cli.md): the command exits 128 + n, the spill root holds nothing of it, the
 * output dir is as it was (here: gone, since the run created it), and the cleanup's
 * consequences (files vanishing under readers) never reach stderr as ENOENT noise. A second
 * signal waits for the cleanup; a third ends the process at once and says so, and even then
 * the exit hook leaves nothing behind.
 *
 * The moment of each signal is chosen by watching the file system, never by sleeping: the owner
 * dir appearing (right at start), a second spill file appearing (fetch still running, 64 MiB of
 * 256 in), and the first channel file appearing in the staging dir (drain running).
 */
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { waitFor, type Child } from '../helpers/processes.ts';
import { suiteCheckpoint } from '../helpers/checkpoints.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import {
  holders,
  listTree,
  ownerDirs,
  peakRss,
  spawnCli,
  spillFiles,
  spillLeftovers,
  stagedChannelFile,
} from './harness.ts';

const input = suiteCheckpoint((dir) =>
  makeCheckpoint({ out: join(dir, 'cp256.spwc'), gates: 2, channels: 4, mb: 256, seed: 3 }),
);

type Moment = 'start' | 'fetch' | 'drain';

/** Starts a recovery of the 256 MiB checkpoint and returns at `moment` (see the file doc). */
async function recoverUntil(
  moment: Moment,
): Promise<{ child: Child; root: string; out: string; seen: string }> {
  const dir = await makeTempRoot();
  const root = join(dir, 'root');
  const out = join(dir, 'out');
  await mkdir(root);
  const child = spawnCli(['recover', input.path, '--out', out, '--spill-root', root]);
  let seen: string;
  if (moment === 'start') {
    // The owner dir exists only once recover is running (its signal handlers come first).
    seen = await waitFor('the owner dir', async () => (await ownerDirs(root))[0], { child });
  } else if (moment === 'fetch') {
    seen = await waitFor(
      'a second spill file',
      async () => (await spillFiles(root)).find((p) => p.endsWith('spill-segment-1.bin')),
      { child },
    );
  } else {
    seen = await waitFor('the first staged channel file', () => stagedChannelFile(out), {
      child,
    });
  }
  return { child, root, out, seen };
}

/** The contract of every signal ending. */
async function expectCancelledCleanly(
  run: { child: Child; root: string; out: string },
  code: number,
  signal: string,
  { orKilledBy }: { orKilledBy?: NodeJS.Signals } = {},
): Promise<void> {
  const { code: exitCode, signal: killedBy } = await run.child.exited;
  if (orKilledBy === undefined || killedBy === null) {
    expect({ exitCode, killedBy }, run.child.stderr).toEqual({ exitCode: code, killedBy: null });
  } else {
    expect(killedBy).toBe(orKilledBy);
  }
  expect(run.child.stderr).toContain(`cancelled by ${signal}`);
  expect(run.child.stderr).not.toMatch(/ENOENT|no such file/i);
  expect(run.child.stderr).not.toContain('    at ');
  expect(await spillLeftovers(run.root)).toEqual([]);
  expect(await listTree(run.out)).toEqual([]);
  // A new output dir's holder beside it goes too (G10: the dir exactly as found).
  expect(await holders(dirname(run.out))).toEqual([]);
}

describe('signals cancel spillway recover and clean up', () => {
  it('SIGTERM right at start exits 143 with an empty spill root', async () => {
    const run = await recoverUntil('start');
    run.child.proc.kill('SIGTERM');
    await expectCancelledCleanly(run, 143, 'SIGTERM');
  });

  it('SIGINT right at start exits 130 with an empty spill root', async () => {
    const run = await recoverUntil('start');
    run.child.proc.kill('SIGINT');
    await expectCancelledCleanly(run, 130, 'SIGINT');
  });

  it('SIGTERM before fetch finishes exits 143; a storm of SIGINTs from then until exit still leaves nothing', async () => {
    const run = await recoverUntil('fetch');
    run.child.proc.kill('SIGTERM');
    // Not sent together: Linux delivers pending signals lowest number first, so SIGINT would win.
    // Once the spill files vanish SIGTERM has been handled and cleanup is running; from then on
    // SIGINTs rain until the process is gone, through cleanup, the command's end and exit. How
    // many land inside cleanup is a race (signal-scope.test.ts proves the counting with a
    // cleanup the test holds open); whatever the count, nothing may be left.
    await waitFor('cleanup to start', async () =>
      (await spillFiles(run.root)).length === 0 ? true : undefined,
    );
    let sent = 0;
    while (run.child.proc.exitCode === null && run.child.proc.signalCode === null) {
      run.child.proc.kill('SIGINT');
      sent++;
      await new Promise((r) => setImmediate(r));
    }
    expect(sent).toBeGreaterThan(0);
    const { code, signal } = await run.child.exited;
    // Node restores the default action while it tears down after the 'exit' hooks ran, so a
    // SIGINT landing there still kills it; by then the owner dir is gone, which is the point.
    if (signal === null) expect(code).toBe(143);
    else expect(signal).toBe('SIGINT');
    if (/a third time/.test(run.child.stderr)) {
      expect(run.child.stderr).toMatch(/SIGINT again; still cleaning up/);
    }
    expect(run.child.stderr).not.toContain('    at ');
    expect(await spillLeftovers(run.root)).toEqual([]);
    expect(await listTree(run.out)).toEqual([]);
  });

  it('SIGINT before fetch finishes exits 130; its spill files are removed', async () => {
    const run = await recoverUntil('fetch');
    run.child.proc.kill('SIGINT');
    await expectCancelledCleanly(run, 130, 'SIGINT');
  });

  it('SIGTERM during drain exits 143, removes spill and partial output files', async () => {
    const run = await recoverUntil('drain');
    // The drain is reading spill files while output is written: both must go.
    expect((await spillFiles(run.root)).length).toBeGreaterThan(0);
    // G8, loosely: a 256 MiB recovery in drain is far from holding its state in memory.
    const hwm = peakRss(run.child.proc.pid!);
    run.child.proc.kill('SIGTERM');
    await expectCancelledCleanly(run, 143, 'SIGTERM');
    expect(hwm).toBeDefined();
    expect(hwm!).toBeLessThan(300 * 1024 * 1024);
  });

  it('SIGINT during drain exits 130, removes spill and partial output files', async () => {
    const run = await recoverUntil('drain');
    run.child.proc.kill('SIGINT');
    await expectCancelledCleanly(run, 130, 'SIGINT');
  });

  // Each of the six, in each of the two long stages: 128 + n, nothing left.
  for (const [name, code] of [
    ['SIGHUP', 129],
    ['SIGINT', 130],
    ['SIGQUIT', 131],
    ['SIGTERM', 143],
    ['SIGUSR2', 140],
    ['SIGALRM', 142],
  ] as const) {
    for (const moment of ['fetch', 'drain'] as const) {
      it(`${name} mid-${moment} exits ${code}; no spill file, no output left`, async () => {
        const run = await recoverUntil(moment);
        run.child.proc.kill(name);
        await expectCancelledCleanly(run, code, name);
      });
    }
  }

  it('a second signal during cleanup waits for it: the first one decides the exit code', async () => {
    const run = await recoverUntil('drain');
    // Different signals sent at once are delivered lowest number first: HUP, then TERM.
    run.child.proc.kill('SIGTERM');
    run.child.proc.kill('SIGHUP');
    const { code } = await run.child.exited;
    expect([129, 143]).toContain(code);
    expect(run.child.stderr).toMatch(/again; still cleaning up/);
    expect(run.child.stderr).toMatch(/cancelled by SIG(HUP|TERM)/);
    expect(await spillLeftovers(run.root)).toEqual([]);
    expect(await listTree(run.out)).toEqual([]);
  });
});
