/**
 * G2 one owner: `context.ownership` matches what exists on disk at every key point, and it
 * changes only on the typed hand-off events (or when the task leaves `alive`). Observed live
 * through the `inspect` option and the fs seam's hook, never by reaching into the machine.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { seam } from '../helpers/fault-seam.ts';
import type { TaskContext } from '../../src/machines/task.machine.ts';
import type { TaskServices } from '../../src/machines/task-services.ts';
import { deferred, settle, until } from '../helpers/async.ts';
import { expectNoLeak, fixture, recorder, start, type Watched } from './harness.ts';

type Ownership = TaskContext['ownership'];

/** The events allowed to move ownership (G2). */
const TYPED = new Set([
  'SPILL.OWNED',
  'FETCH.HANDOFF',
  'DRAINER.READY',
  'SNAPSHOT.OWNED',
  'SPILL.RELEASED',
  'xstate.done.actor.gap',
]);
const FINALS = new Set(['finished', 'failed', 'cancelled']);

interface Change {
  event: string;
  value: unknown;
  ownership: Ownership;
}

/** Records every change of the root's ownership with the event that caused it. */
function ownershipLog(): { inspect: (e: InspectionEvent) => void; changes: Change[] } {
  const changes: Change[] = [];
  let last = '{}';
  return {
    changes,
    inspect: (e) => {
      if (e.type !== '@xstate.snapshot' || e.actorRef.sessionId !== e.rootId) return;
      const snap = e.snapshot as unknown as { context: TaskContext; value: unknown };
      const now = JSON.stringify(snap.context.ownership);
      if (now === last) return;
      last = now;
      changes.push({ event: e.event.type, value: snap.value, ownership: snap.context.ownership });
    },
  };
}

/** Every change happened on a typed event, or by leaving `alive` (then nothing is owned). */
function expectTypedChanges(changes: Change[]): void {
  expect(changes.length).toBeGreaterThan(0);
  for (const c of changes) {
    if (TYPED.has(c.event)) continue;
    expect(FINALS.has(c.value as string), `ownership changed on ${c.event}`).toBe(true);
    expect(c.ownership).toEqual({});
  }
}

const ownershipOf = (w: Watched) => w.recovery.actor.getSnapshot().context.ownership;

describe('ownership (G2)', () => {
  it('G2 ownership matches reality at every stage of a recovery with a checkpoint, and moves only on typed events', async () => {
    const fx = await fixture();
    const log = ownershipLog();
    const hold = deferred();
    const rec = recorder((_i, _b, seen) => (seen === 10 ? hold.promise : undefined));
    const seen: { at: string; ownership: Ownership }[] = [];
    let w: Watched | undefined;
    let phase: 'fetch' | 'drain' = 'fetch';
    const out = join(fx.dir, 'cp1.spwc');
    const writerPaused = deferred();
    const writerGo = deferred();
    seam.setFsHook(async (op, path) => {
      if (w === undefined) return;
      if (op === 'mkdir' && path.includes('task-own-')) {
        seen.push({ at: 'mkdir task dir', ownership: ownershipOf(w) });
      } else if (op === 'open' && path.includes('spill-segment-') && phase === 'fetch') {
        seen.push({ at: 'create spill file', ownership: ownershipOf(w) });
      } else if (op === 'read' && path.includes('spill-segment-') && phase === 'drain') {
        seen.push({ at: 'drain read', ownership: ownershipOf(w) });
      } else if (op === 'write' && path.endsWith('cp1.spwc.partial')) {
        seen.push({ at: 'checkpoint write', ownership: ownershipOf(w) });
        writerPaused.resolve();
        await writerGo.promise;
      }
    });
    w = start(fx, {
      taskId: 'own',
      channels: rec.channels,
      inspectAlso: log.inspect,
      hooks: { beforeDrain: () => void (phase = 'drain') },
    });
    await until(() => rec.buffers() >= 10, 'buffer 10 delivered');
    expect(ownershipOf(w)).toEqual({ fetchedState: 'drain', drainer: 'drain' });
    const cp = w.recovery.checkpoint(1, { out });
    await writerPaused.promise;
    expect(ownershipOf(w)).toEqual({
      fetchedState: 'drain',
      drainer: 'drain',
      'snapshot-1': 'checkpoint-1',
    });
    hold.resolve();
    // The drain ends while the writer still holds its snapshot: the files stay; the state's
    // backstop owner is now the task (its registry), the snapshot's is the writer.
    await until(() => w!.recovery.actor.getSnapshot().matches({ alive: 'running' }), 'drained');
    expect(ownershipOf(w)).toEqual({ fetchedState: 'task', 'snapshot-1': 'checkpoint-1' });
    expect(existsSync(w.taskDir()!)).toBe(true);
    writerGo.resolve();
    await cp;
    const report = await w.recovery.done;
    expect(report.checkpoints).toBe(1);
    expect(ownershipOf(w)).toEqual({});
    expect(w.recovery.actor.getSnapshot().context.closedByRegistry).toEqual([]);

    // The dir is owned by the fetch stage from before it exists until the hand-off.
    const at = (name: string) => seen.filter((s) => s.at === name).map((s) => s.ownership);
    expect(at('mkdir task dir')).toEqual([{ taskDir: 'fetch' }]);
    expect(at('create spill file').length).toBeGreaterThan(3);
    for (const o of at('create spill file')) expect(o).toEqual({ taskDir: 'fetch' });
    expect(at('drain read').length).toBeGreaterThan(0);
    for (const o of at('drain read')) expect(o).toMatchObject({ fetchedState: 'drain' });
    expect(at('checkpoint write')[0]).toMatchObject({ 'snapshot-1': 'checkpoint-1' });

    // The full story, one typed event per step.
    expect(log.changes.map((c) => [c.event, c.ownership])).toEqual([
      ['SPILL.OWNED', { taskDir: 'fetch' }],
      ['FETCH.HANDOFF', { fetchedState: 'gap' }],
      ['DRAINER.READY', { fetchedState: 'gap', drainer: 'gap' }],
      ['xstate.done.actor.gap', { fetchedState: 'drain', drainer: 'drain' }],
      ['SNAPSHOT.OWNED', { fetchedState: 'drain', drainer: 'drain', 'snapshot-1': 'checkpoint-1' }],
      ['SPILL.RELEASED', { fetchedState: 'task', 'snapshot-1': 'checkpoint-1' }],
      ['SPILL.RELEASED', {}],
    ]);
    expectTypedChanges(log.changes);
    await expectNoLeak(fx, w.taskDir());
  });

  it('G2 on cancel in the gap, leaving alive hands everything to the registry: ownership empties, closedByRegistry names it', async () => {
    const fx = await fixture();
    const log = ownershipLog();
    const blocker = deferred();
    let services: TaskServices | undefined;
    const w = start(fx, {
      taskId: 'owncancel',
      inspectAlso: log.inspect,
      hooks: {
        beforeStage: (stage, s) => {
          if (stage !== 'gap') return;
          services = s;
          void s.mailbox.execute('blocker', () => blocker.promise);
        },
      },
    });
    await until(() => services?.mailbox.pending === 1, 'requestPartitions queued');
    expect(ownershipOf(w)).toEqual({ fetchedState: 'gap' });
    w.recovery.cancel('test');
    await settle(w.recovery.done);
    blocker.resolve();
    expect(ownershipOf(w)).toEqual({});
    expect(w.recovery.actor.getSnapshot().context.closedByRegistry).toEqual(['fetchedState']);
    expect(log.changes.at(-1)).toMatchObject({ event: 'CANCEL', value: 'cancelled' });
    expectTypedChanges(log.changes);
    await expectNoLeak(fx, w.taskDir());
  });

  it('G2 a failing stage: ownership stays with the last typed owner until the task leaves alive', async () => {
    const fx = await fixture();
    const log = ownershipLog();
    const boom = new Error('consumer boom');
    const rec = recorder((_i, _b, seen) => {
      if (seen === 3) throw boom;
    });
    const w = start(fx, { taskId: 'ownfail', channels: rec.channels, inspectAlso: log.inspect });
    expect(await settle(w.recovery.done)).toBe(boom);
    expect(log.changes.at(-1)).toMatchObject({
      // The drain stage reports its failure (FAIL) before it cleans up, so no cancel can
      // overtake it (G5).
      event: 'FAIL',
      value: 'failed',
      ownership: {},
    });
    expectTypedChanges(log.changes);
    await expectNoLeak(fx, w.taskDir());
  });
});
