/**
 * The signal scope's counting contract (docs/cli.md), with real signals to a real child whose
 * cleanup lasts exactly as long as the test keeps its stdin open: the first signal cancels, the
 * second is noted and waits for cleanup, the third exits at once saying so, and once the scope
 * is disposed a signal still ends the process through its `'exit'` hooks, never the default
 * action.
 */
import { describe, expect, it } from 'vitest';
import { spawnFixture, waitFor, type Child } from '../helpers/processes.ts';

function start(mode?: string): Child {
  return spawnFixture('signal-scope-child.ts', mode === undefined ? [] : [mode]);
}

function said(child: Child, stream: 'stdout' | 'stderr', text: string | RegExp): Promise<true> {
  const seen = () =>
    typeof text === 'string' ? child[stream].includes(text) : text.test(child[stream]);
  return waitFor(`${String(text)} on ${stream}`, () => (seen() ? true : undefined), { child });
}

/** A child whose cleanup runs after `first` and which has noted `second` as still cleaning up. */
async function inCleanupAfter(first: NodeJS.Signals, second: NodeJS.Signals): Promise<Child> {
  const child = start();
  await said(child, 'stdout', 'ready');
  child.proc.kill(first);
  await said(child, 'stdout', 'cleaning');
  child.proc.kill(second);
  await said(child, 'stderr', new RegExp(`${second} again; still cleaning up`));
  return child;
}

describe('signal scope: the first signal cancels, the second waits, the third exits', () => {
  it('a second signal during cleanup is noted and waits; the exit code is the first signal’s', async () => {
    const child = await inCleanupAfter('SIGTERM', 'SIGINT');
    expect(child.ended).toBe(false);
    child.proc.stdin!.end();
    expect(await child.exited).toEqual({ code: 143, signal: null });
    expect(child.stderr).not.toMatch(/third time/);
    expect(child.stdout).toContain('exit hook ran');
  });

  it('a third signal exits at once, says so, and the exit hook still runs', async () => {
    const child = await inCleanupAfter('SIGHUP', 'SIGINT');
    // stdin is still open: only the third signal can end it.
    child.proc.kill('SIGQUIT');
    expect(await child.exited).toEqual({ code: 129, signal: null });
    expect(child.stderr).toMatch(/SIGQUIT a third time; exiting before cleanup finished/);
    expect(child.stdout).toContain('exit hook ran');
  });

  it('after the scope is disposed a signal exits through the exit hooks, not the default action', async () => {
    const child = start('after');
    await said(child, 'stdout', 'disposed');
    child.proc.kill('SIGUSR2');
    expect(await child.exited).toEqual({ code: 128 + 12, signal: null });
    expect(child.stdout).toContain('exit hook ran');
  });
});
