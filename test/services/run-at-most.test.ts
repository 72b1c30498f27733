/**
 * runAtMost (recover --all's sides, two at a time): jobs start in order with never more than
 * the limit in flight; after the first failure nothing new starts, the jobs in flight are
 * awaited before it throws, the first cause wins and later ones are in its `.suppressed`; a
 * throw before a job (a cancel) stops the run the same way.
 */
import { describe, expect, it } from 'vitest';
import { runAtMost } from '../../src/services/outputs/run-at-most.ts';

/** A job that starts, then waits until the test releases it. */
function gate() {
  let release!: (e?: Error) => void;
  const done = new Promise<void>((resolve, reject) => {
    release = (e) => (e === undefined ? resolve() : reject(e));
  });
  return { done, release };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('runAtMost', () => {
  it('starts jobs in order, never more than the limit at once, and runs them all', async () => {
    const gates = [gate(), gate(), gate(), gate()];
    const started: number[] = [];
    const run = runAtMost(
      2,
      gates.map((g, k) => async () => {
        started.push(k);
        await g.done;
      }),
      () => undefined,
    );
    await tick();
    expect(started).toEqual([0, 1]);
    gates[1]!.release();
    await tick();
    expect(started).toEqual([0, 1, 2]);
    gates[0]!.release();
    await tick();
    expect(started).toEqual([0, 1, 2, 3]);
    gates[2]!.release();
    gates[3]!.release();
    await expect(run).resolves.toBeUndefined();
  });

  it('after a failure starts nothing new, awaits the job in flight, throws the first cause with the later one suppressed', async () => {
    const gates = [gate(), gate(), gate()];
    const started: number[] = [];
    let settled = false;
    const run = runAtMost(
      2,
      gates.map((g, k) => async () => {
        started.push(k);
        await g.done;
      }),
      () => undefined,
    ).finally(() => (settled = true));
    await tick();
    const first = new Error('first');
    const later = new Error('later');
    gates[0]!.release(first);
    await tick();
    expect(settled).toBe(false); // job 1 is still in flight
    gates[1]!.release(later);
    const error = await run.catch((e: unknown) => e);
    expect(error).toBe(first);
    expect((first as Error & { suppressed?: unknown[] }).suppressed).toEqual([later]);
    expect(started).toEqual([0, 1]);
  });

  it('a throw before a job (a cancel) starts nothing more and is what the run throws', async () => {
    const started: number[] = [];
    const cancelled = new Error('cancelled');
    let checks = 0;
    const jobs = [0, 1, 2].map((k) => async () => void started.push(k));
    await expect(
      runAtMost(1, jobs, () => {
        if (++checks === 2) throw cancelled;
      }),
    ).rejects.toBe(cancelled);
    expect(started).toEqual([0]);
  });
});
