/**
 * G6 under random timing: a checkpoint taken during recovery splits every channel into the
 * bytes delivered before its barrier and the snapshot remainder, with no gap and no overlap.
 * fast-check picks when checkpoints fire (from a hook, inside a delivery, a microtask or a
 * macrotask after it) and how consumers yield (sync, microtask, macrotask backpressure).
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CheckpointResult } from '../../src/recover.ts';
import { channelBytes } from '../helpers/checkpoints.ts';
import { expectNoLeak, fixture, recorder, start, type Fixture, type Recorder } from './harness.ts';

type When = 'sync' | 'microtask' | 'macrotask';
type Yield = 'none' | 'microtask' | 'macrotask';

interface Plan {
  /** Take a checkpoint in beforeDrain (nothing delivered yet). */
  atDrainStart: boolean;
  /** Take a checkpoint at these delivered-buffer counts, each fired the given way. */
  at: { buffer: number; when: When }[];
  /** How consumers return from onBuffer, cycled over deliveries. */
  yields: Yield[];
}

const planArb: fc.Arbitrary<Plan> = fc.record({
  atDrainStart: fc.boolean(),
  at: fc.array(
    fc.record({
      buffer: fc.integer({ min: 1, max: 70 }),
      when: fc.constantFrom<When>('sync', 'microtask', 'macrotask'),
    }),
    { minLength: 1, maxLength: 4 },
  ),
  yields: fc.array(fc.constantFrom<Yield>('none', 'microtask', 'macrotask'), {
    minLength: 1,
    maxLength: 8,
  }),
});

/**
 * Checks G6 for one checkpoint: per channel, delivered-before-barrier ++ remainder = original.
 * A channel without a barrier must have left recovery already, so it got all its bytes and has
 * no remainder.
 */
async function checkSplit(fx: Fixture, rec: Recorder, result: CheckpointResult): Promise<void> {
  const remainder = result.file ? await channelBytes(result.file) : new Map<string, Buffer>();
  for (const [key, original] of fx.original) {
    const before = rec.before(key, result.checkpointId);
    const rest = remainder.get(key) ?? Buffer.alloc(0);
    expect(before.length + rest.length, `${key} @ checkpoint ${result.checkpointId}`).toBe(
      original.length,
    );
    expect(Buffer.concat([before, rest]).equals(original), `${key} bytes`).toBe(true);
  }
  for (const c of result.channels) {
    expect(remainder.get(`gate-${c.gate}-channel-${c.channel}`)?.length ?? 0).toBe(c.bytes);
  }
}

async function runPlan(fx: Fixture, plan: Plan, run: number): Promise<void> {
  let nextId = 1;
  const requested: Promise<CheckpointResult>[] = [];
  let take: () => void = () => {};
  const rec = recorder((_info, _buffer, seen) => {
    for (const a of plan.at) {
      if (a.buffer !== seen) continue;
      if (a.when === 'sync') take();
      else if (a.when === 'microtask') queueMicrotask(take);
      else setImmediate(take);
    }
    const y = plan.yields[seen % plan.yields.length];
    if (y === 'microtask') return Promise.resolve();
    if (y === 'macrotask') return new Promise<void>((resolve) => setImmediate(resolve));
    return undefined;
  });
  const w = start(fx, {
    taskId: `g6-${run}`,
    channels: rec.channels,
    hooks: plan.atDrainStart ? { beforeDrain: () => take() } : {},
  });
  let active = true;
  take = () => {
    if (!active) return;
    const id = nextId++;
    requested.push(w.recovery.checkpoint(id, { out: join(fx.dir, `run${run}-cp${id}.spwc`) }));
  };
  const report = await w.recovery.done;
  active = false;
  expect(report.bytesDelivered).toBe(fx.made.payloadBytes);
  // Every checkpoint requested while the task was alive is taken: none is declined or lost.
  const results = await Promise.all(requested);
  for (const r of results) await checkSplit(fx, rec, r);
  // Every grant went back through its owner (drainer, each checkpoint writer): the registry
  // backstop had nothing left to force.
  expect(w.recovery.actor.getSnapshot().context.closedByRegistry).toEqual([]);
  await expectNoLeak(fx, w.taskDir());
}

describe('checkpoint during recovery (G6)', () => {
  it('G6 delivered-before-barrier + remainder file = original bytes for every channel, under random checkpoint moments', async () => {
    const fx = await fixture({ kib: 256, seed: 11 });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(planArb, async (plan) => runPlan(fx, plan, run++)),
      { numRuns: 50 },
    );
  });

  it('G6 a checkpoint before any delivery holds every byte in its remainder, in checkpoint order', async () => {
    const fx = await fixture({ kib: 128, seed: 5 });
    await runPlan(fx, { atDrainStart: true, at: [], yields: ['none'] }, 0);
  });
});
