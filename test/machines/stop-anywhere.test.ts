/**
 * G1 for a bare `actor.stop()`: XState runs no exit action then, so only the registry actor's
 * disposer stands between a stopped task and leaked spill files. Stopped in every reachable
 * state, the task leaves no file once `done` settles, and `done` rejects with
 * CancelledError('task actor stopped').
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AbortedError, CancelledError } from '../../src/services/errors.ts';
import type { TaskServices } from '../../src/machines/task-services.ts';
import { deferred, pauseOn, settle, until } from '../helpers/async.ts';
import { expectNoLeak, fixture, recorder, start, type Fixture, type Watched } from './harness.ts';

/** Stops the task, lets whatever was held go, and checks G1 and the reported cause. */
async function stopAndCheck(fx: Fixture, w: Watched, release: () => void): Promise<void> {
  const { registry } = w.recovery.actor.getSnapshot().context.ending;
  w.recovery.actor.stop();
  // The registry actor's disposer is the backstop: the close has begun before stop() returns,
  // not only when someone awaits `done`.
  expect(registry.isClosed).toBe(true);
  release();
  const error = await settle(w.recovery.done);
  expect(error).toBeInstanceOf(CancelledError);
  expect((error as Error).message).toBe('task actor stopped');
  expect(w.recovery.actor.getSnapshot().status).toBe('stopped');
  await expectNoLeak(fx, w.taskDir());
}

/**
 * Blocks the mailbox behind a mail that waits for `blocker`, at the moment chosen by `where`,
 * so the gap mail posted next stays queued.
 */
function blockGapMail(where: 'requestPartitions' | 'buildDrainer' | 'installTrigger') {
  const blocker = deferred();
  let services: TaskServices | undefined;
  let blocked = false;
  const block = () => {
    if (blocked) return;
    blocked = true;
    void services!.mailbox.execute('blocker', () => blocker.promise);
  };
  return {
    blocker,
    pending: () => services?.mailbox.pending ?? 0,
    hooks: {
      beforeStage: (stage: string, s: TaskServices) => {
        if (stage !== 'gap') return;
        services = s;
        if (where === 'requestPartitions') block();
      },
      afterDrainerBuilt: () => {
        if (where === 'installTrigger') block();
      },
    },
    // buildDrainer is posted when requestPartitions settles: block from inside that mail.
    wrap: (channels: ReturnType<typeof recorder>['channels']) =>
      where === 'buildDrainer'
        ? (info: Parameters<typeof channels>[0]) => {
            block();
            return channels(info);
          }
        : channels,
  };
}

describe('bare actor.stop() anywhere (G1)', () => {
  it('G1 stop while fetching, before the task dir exists (checkpoint read paused)', async () => {
    const fx = await fixture();
    const pause = pauseOn((op, path) => op === 'read' && path === fx.checkpoint);
    const w = start(fx, { taskId: 'stop-fetch0' });
    await pause.reached;
    expect(w.taskDir()).toBeUndefined();
    await stopAndCheck(fx, w, pause.release);
  });

  it('G1 stop while fetching, after the task dir exists (spill file creation paused)', async () => {
    const fx = await fixture();
    const pause = pauseOn((op, path) => op === 'open' && path.endsWith('spill-segment-2.bin'));
    const w = start(fx, { taskId: 'stop-fetch1' });
    await pause.reached;
    expect(w.recovery.actor.getSnapshot().context.ownership).toEqual({ taskDir: 'fetch' });
    await stopAndCheck(fx, w, pause.release);
  });

  it('G1 stop while fetching, mid segment write', async () => {
    const fx = await fixture();
    const pause = pauseOn((op, path) => op === 'write' && path.endsWith('spill-segment-3.bin'));
    const w = start(fx, { taskId: 'stop-fetch2' });
    await pause.reached;
    await stopAndCheck(fx, w, pause.release);
  });

  for (const mail of ['requestPartitions', 'buildDrainer', 'installTrigger'] as const) {
    it(`G1 stop in the gap while the ${mail} mail is queued behind a blocked mailbox`, async () => {
      const fx = await fixture();
      const gap = blockGapMail(mail);
      const rec = recorder();
      const w = start(fx, {
        taskId: `stop-${mail}`,
        hooks: gap.hooks,
        channels: gap.wrap(rec.channels),
      });
      await until(() => gap.pending() === 1, `${mail} queued`);
      expect(w.recovery.actor.getSnapshot().value).toEqual({ alive: { restoring: 'gap' } });
      await stopAndCheck(fx, w, () => gap.blocker.resolve());
    });
  }

  it('G1 stop while draining (a consumer holds a delivery)', async () => {
    const fx = await fixture();
    const hold = deferred();
    let delivered = 0;
    const rec = recorder((_i, _b, seen) => {
      delivered = seen;
      return seen === 12 ? hold.promise : undefined;
    });
    const w = start(fx, { taskId: 'stop-drain', channels: rec.channels });
    await until(() => delivered >= 12, 'buffer 12 delivered');
    await stopAndCheck(fx, w, () => hold.resolve());
  });

  it('G1 stop while draining, with the next spill file open paused', async () => {
    const fx = await fixture();
    let draining = false;
    const pause = pauseOn(
      (op, path) => draining && op === 'open' && path.endsWith('spill-segment-2.bin'),
    );
    const w = start(fx, {
      taskId: 'stop-drain-open',
      hooks: { beforeDrain: () => void (draining = true) },
    });
    await pause.reached;
    await stopAndCheck(fx, w, pause.release);
  });

  it('G1 stop while running with a checkpoint writer busy (its remainder write paused)', async () => {
    const fx = await fixture();
    const hold = deferred();
    let delivered = 0;
    const rec = recorder((_i, _b, seen) => {
      delivered = seen;
      return seen === 10 ? hold.promise : undefined;
    });
    const out = join(fx.dir, 'cp1.spwc');
    const pause = pauseOn((op, path) => op === 'write' && path.endsWith('cp1.spwc.partial'));
    const w = start(fx, { taskId: 'stop-running', channels: rec.channels });
    await until(() => delivered >= 10, 'buffer 10 delivered');
    const cp = settle(w.recovery.checkpoint(1, { out }));
    await pause.reached;
    hold.resolve();
    await until(() => w.recovery.actor.getSnapshot().matches({ alive: 'running' }), 'running');
    expect(w.recovery.actor.getSnapshot().context.ownership).toEqual({
      fetchedState: 'task',
      'snapshot-1': 'checkpoint-1',
    });
    await stopAndCheck(fx, w, pause.release);
    // The checkpoint of a stopped task is aborted and leaves no remainder file.
    expect(await cp).toBeInstanceOf(AbortedError);
    expect(existsSync(out)).toBe(false);
  });

  it('G1 stop after the task finished is harmless: done keeps the report', async () => {
    const fx = await fixture({ kib: 128 });
    const w = start(fx, { taskId: 'stop-after' });
    const report = await w.recovery.done;
    w.recovery.actor.stop();
    expect(report.bytesDelivered).toBe(fx.made.payloadBytes);
    await expectNoLeak(fx, w.taskDir());
  });
});
