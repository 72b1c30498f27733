/**
 * Guarantee G5 across the lifecycle: the reported cause is always the first real one. The
 * consequences of an ending (AbortedError from fenced reads and stopped stages, RejectedError of
 * mails posted after cancel, ENOENT of files cleanup removed) appear only in `.suppressed`, or
 * nowhere, never as the cause.
 */
import { describe, expect, it } from 'vitest';
import {
  AbortedError,
  CancelledError,
  RejectedError,
  isAbortConsequence,
  suppressedOf,
} from '../../src/services/errors.ts';
import { seam } from '../helpers/fault-seam.ts';
import { deferred, pauseOn, settle, until } from '../helpers/async.ts';
import { codeOf, errorTree, expectNoLeak, fixture, recorder, start } from './harness.ts';

/** The cause is not a consequence, and no raw ENOENT hides anywhere in what is reported. */
function expectRealCause(error: unknown): void {
  expect(isAbortConsequence(error) && !(error instanceof RejectedError)).toBe(false);
  expect(errorTree(error).some((e) => codeOf(e) === 'ENOENT')).toBe(false);
}

describe('first cause wins (G5)', () => {
  it('G5 a gap mail posted after cancel into the quiesced mailbox is rejected: RejectedError is suppressed, CancelledError is the cause', async () => {
    const fx = await fixture();
    const reached = deferred();
    const go = deferred();
    const w = start(fx, {
      taskId: 'g5-mail',
      hooks: {
        beforeStage: async (stage, services) => {
          if (stage !== 'gap') return;
          // Shutting down, as Flink's prepareClose() does: quiesce first, close later.
          services.mailbox.quiesce();
          reached.resolve();
          await go.promise;
        },
      },
    });
    await reached.promise;
    w.recovery.cancel('test');
    go.resolve();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    expectRealCause(error);
    expect(suppressedOf(error).map((e) => [e.constructor, e.message])).toEqual([
      [RejectedError, "mail 'requestPartitions' rejected: mailbox is quiesced"],
    ]);
    await expectNoLeak(fx, w.taskDir());
  });

  it('G5 a gap mail posted after cancel into the open mailbox is dropped when it closes: nothing is reported but the cancel', async () => {
    const fx = await fixture();
    const reached = deferred();
    const go = deferred();
    const w = start(fx, {
      taskId: 'g5-drop',
      hooks: {
        beforeStage: async (stage) => {
          if (stage !== 'gap') return;
          reached.resolve();
          await go.promise;
        },
      },
    });
    await reached.promise;
    w.recovery.cancel('test');
    go.resolve();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    expectRealCause(error);
    for (const e of suppressedOf(error)) expect(isAbortConsequence(e)).toBe(true);
    await expectNoLeak(fx, w.taskDir());
  });

  it('G5 FAIL from outside during the drain: that error is the cause; the fenced drain AbortedError is only suppressed', async () => {
    const fx = await fixture();
    const hold = deferred();
    let delivered = 0;
    const rec = recorder((_i, _b, seen) => {
      delivered = seen;
      return seen === 15 ? hold.promise : undefined;
    });
    const w = start(fx, { taskId: 'g5-fail', channels: rec.channels });
    await until(() => delivered >= 15, 'buffer 15 delivered');
    const first = new Error('upstream task failed');
    w.recovery.actor.send({ type: 'FAIL', error: first });
    w.recovery.cancel('too late to matter');
    hold.resolve();
    const error = await settle(w.recovery.done);
    expect(error).toBe(first);
    expectRealCause(error);
    expect(suppressedOf(error).length).toBeGreaterThan(0);
    for (const e of suppressedOf(error)) expect(e).toBeInstanceOf(AbortedError);
    await expectNoLeak(fx, w.taskDir());
  });

  it('G5 a stage failure is kept when the cleanup after it fails too (consumer error first, delete EIO later)', async () => {
    const fx = await fixture();
    seam.injectFault({ op: 'rm', code: 'EIO', pathIncludes: 'task-g5-stage-' });
    const first = new Error('consumer failed first');
    const rec = recorder((_i, _b, seen) => {
      if (seen === 4) throw first;
    });
    const w = start(fx, { taskId: 'g5-stage', channels: rec.channels });
    const error = await settle(w.recovery.done);
    expect(error).toBe(first);
    expectRealCause(error);
    expect(suppressedOf(error).map(codeOf)).toEqual(['ERR_SPILLWAY_CLEANUP']); // the CleanupError, once
    expect(codeOf(suppressedOf(error)[0]!.cause)).toBe('EIO');
    await expectNoLeak(fx, w.taskDir());
  });

  it('G5 stop during the fetch: CancelledError is the cause, the aborted fetch error is suppressed, no ENOENT', async () => {
    const fx = await fixture();
    const pause = pauseOn((op, path) => op === 'write' && path.endsWith('spill-segment-2.bin'));
    const w = start(fx, { taskId: 'g5-stop' });
    await pause.reached;
    w.recovery.actor.stop();
    pause.release();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    expectRealCause(error);
    for (const e of suppressedOf(error)) expect(isAbortConsequence(e)).toBe(true);
    await expectNoLeak(fx, w.taskDir());
  });

  it('G5 a real I/O error that happens after the cancel (ENOSPC on a write paused across it) is suppressed, never the cause', async () => {
    const fx = await fixture();
    const pause = pauseOn((op, path) => op === 'write' && path.endsWith('spill-segment-2.bin'));
    seam.injectFault({ op: 'write', code: 'ENOSPC', pathIncludes: 'spill-segment-2.bin' });
    const w = start(fx, { taskId: 'g5-late' });
    await pause.reached;
    w.recovery.cancel('first');
    pause.release();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    expectRealCause(error);
    const late = suppressedOf(error);
    expect(late.length).toBe(1);
    expect(late[0]).toBeInstanceOf(AbortedError);
    expect(codeOf(late[0]!.cause)).toBe('ENOSPC');
    await expectNoLeak(fx, w.taskDir());
  });

  it('G5 a cancel arriving while the checkpoint file closes after an ENOSPC does not become the cause', async () => {
    const fx = await fixture();
    let w: ReturnType<typeof start> | undefined;
    // The failure is thrown inside the checkpoint read; the reader closes its file before the
    // error leaves it. A cancel landing in that close must find the failure already reported.
    seam.setFsHook((op, path) => {
      if (op === 'close' && path === fx.checkpoint) w?.recovery.cancel('during the close');
    });
    seam.injectFault({ op: 'write', code: 'ENOSPC', pathIncludes: 'spill-segment-1.bin' });
    w = start(fx, { taskId: 'g5-close' });
    const error = await settle(w.recovery.done);
    expect(codeOf(error)).toBe('ENOSPC');
    expectRealCause(error);
    expect(w.recovery.actor.getSnapshot().value).toBe('failed');
    await expectNoLeak(fx, w.taskDir());
  });
});
