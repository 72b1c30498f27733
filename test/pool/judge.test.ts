/**
 * The judge on its own: which error counts as the injected first cause (G5), how an ending is
 * measured against its plan, and the G6 delivery check. Hand-made loop records, no recovery.
 */
import { describe, expect, it } from 'vitest';
import { CancelledError, CleanupError, RejectedError } from '../../src/services/errors.ts';
import { makeFsError } from '../helpers/fault-seam.ts';
import type { RecoveryReport } from '../../src/recover.ts';
import { InjectedFaultError, type FaultKind } from '../../src/pool/faults.ts';
import { classify, deliveryProblems, expectedCause, outcomeOf } from '../../src/pool/judge.ts';
import { newLoopState, type LoopState } from '../../src/pool/loop.ts';
import { makePlan, type OpCounts, type Variant } from '../../src/pool/plan.ts';
import type { ChannelShape } from '../../src/pool/shape.ts';

const OPS: OpCounts = {
  checkpointReads: 4,
  spillWrites: 8,
  spillCloses: 3,
  drainReads: 5,
  buffers: 6,
};
const ID = 'ab12.1.7';
const INPUT = 'slots/slot-1.spwc';
const OWN = `/spill/spillway/owner-x/task-${ID}-a1b2c3/spill-segment-0.bin`;
const OTHER = `/spill/spillway/owner-x/task-ab12.2.8-d4e5f6/spill-segment-0.bin`;

function loopOf(kind: FaultKind, variant?: Variant): LoopState {
  const plan = makePlan(kind, 0, 1, 7, OPS);
  return newLoopState(ID, { ...plan, variant: variant ?? plan.variant }, INPUT);
}

describe('expectedCause', () => {
  it('an errno error counts only on the loop’s own task dir, never another task’s', () => {
    expect(expectedCause(loopOf('enospc'), makeFsError('ENOSPC', 'write', OWN))).toBe(true);
    expect(expectedCause(loopOf('enospc'), makeFsError('ENOSPC', 'write', OTHER))).toBe(false);
    expect(expectedCause(loopOf('close-error'), makeFsError('EIO', 'close', OWN))).toBe(true);
    // The right path but the wrong operation: a cleanup's failure, not the injected one.
    expect(expectedCause(loopOf('close-error'), makeFsError('EIO', 'rm', OWN))).toBe(false);
  });

  it('fetch-error counts only an EIO reading this slot’s own checkpoint copy', () => {
    const loop = loopOf('fetch-error');
    expect(expectedCause(loop, makeFsError('EIO', 'read', INPUT))).toBe(true);
    expect(expectedCause(loop, makeFsError('EIO', 'read', 'slots/slot-2.spwc'))).toBe(false);
  });

  it('a throwing channel counts by identity: an equal message is not the injected error', () => {
    const loop = loopOf('drain-error', 'onBuffer');
    loop.injected = new InjectedFaultError('injected: channel 0/0 rejects buffer 2');
    expect(expectedCause(loop, loop.injected)).toBe(true);
    expect(expectedCause(loop, new InjectedFaultError(loop.injected.message))).toBe(false);
  });

  it('a cancel is the planned cause only once the fault fired', () => {
    const loop = loopOf('cancel-drain');
    const cancel = new CancelledError('injected: cancel in drain');
    expect(expectedCause(loop, cancel)).toBe(false);
    loop.fired = true;
    expect(expectedCause(loop, cancel)).toBe(true);
  });

  it('a rejected mail counts only if it is the mail the plan rejected', () => {
    const loop = loopOf('mail-rejected', 'installTrigger');
    expect(expectedCause(loop, new RejectedError(`mail 'installTrigger' rejected`))).toBe(true);
    expect(expectedCause(loop, new RejectedError(`mail 'requestPartitions' rejected`))).toBe(false);
  });
});

describe('classify', () => {
  it('G5: a failure with a cause the loop did not inject is masked', () => {
    const loop = loopOf('enospc');
    const verdict = classify(loop, new CleanupError('delete failed'), false);
    expect(verdict).toMatchObject({ outcome: 'failed', ending: 'masked' });
    expect(verdict.problem).toMatch(
      /expected failed, got failed: CleanupError ERR_SPILLWAY_CLEANUP: delete failed/,
    );
  });

  it('a cancel where a failure was planned is masked too', () => {
    const verdict = classify(loopOf('drain-error'), new CancelledError('too late'), false);
    expect(verdict).toMatchObject({ outcome: 'cancelled', ending: 'masked' });
  });

  it('a task that finished although a failure was planned is a miss, not a mask', () => {
    const verdict = classify(loopOf('close-error'), undefined, false);
    expect(verdict).toMatchObject({ outcome: 'finished', ending: 'missed' });
    expect(verdict.problem).toMatch(/fault did not fire/);
  });

  it('the run’s own stop signal makes a cancel interrupted, whatever was planned', () => {
    const verdict = classify(loopOf('enospc'), new CancelledError('SIGINT'), true);
    expect(verdict).toEqual({ outcome: 'cancelled', ending: 'interrupted', problem: undefined });
  });

  it('the injected cause in another stage than planned is as expected, with a problem line', () => {
    const loop = loopOf('enospc');
    loop.stage = 'drain';
    const verdict = classify(loop, makeFsError('ENOSPC', 'write', OWN), false);
    expect(verdict.ending).toBe('asExpected');
    expect(verdict.problem).toMatch(/ended in stage drain, planned fetch/);
    loop.stage = 'fetch';
    expect(classify(loop, makeFsError('ENOSPC', 'write', OWN), false).problem).toBeUndefined();
  });

  it('outcomeOf: resolved is finished, a CancelledError cancelled, anything else failed', () => {
    expect(outcomeOf(undefined)).toBe('finished');
    expect(outcomeOf(new CancelledError('x'))).toBe('cancelled');
    expect(outcomeOf(new Error('x'))).toBe('failed');
  });
});

describe('deliveryProblems', () => {
  const channels: ChannelShape[] = [
    { key: '0/0', gate: 0, channel: 0, bytes: 10, crc: 111 },
    { key: '0/1', gate: 0, channel: 1, bytes: 20, crc: 222 },
  ];
  const report = (bytesDelivered: number) => ({ bytesDelivered }) as RecoveryReport;
  const delivered = (): LoopState => {
    const loop = loopOf('none');
    loop.tracks.set('0/0', { crc: 111, bytes: 10, finished: 1, barriers: new Map() });
    loop.tracks.set('0/1', { crc: 222, bytes: 20, finished: 1, barriers: new Map() });
    return loop;
  };

  it('G6: every channel got exactly its bytes and was finished once: no problem', () => {
    expect(deliveryProblems(delivered(), channels, report(30))).toEqual([]);
  });

  it('G6: a channel finished twice, with wrong bytes or never fed is one error each', () => {
    const loop = delivered();
    loop.tracks.get('0/0')!.finished = 2;
    loop.tracks.delete('0/1');
    const problems = deliveryProblems(loop, channels, undefined);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/0\/0 got 10 of 10 bytes \(crc ok, finished 2×\)/);
    expect(problems[1]).toMatch(/0\/1 got 0 of 20 bytes/);
  });

  it('G6: a report that disagrees with what the channels got is an error', () => {
    expect(deliveryProblems(delivered(), channels, report(31))).toEqual([
      expect.stringMatching(/report says 31 bytes, channels got 30/),
    ]);
  });
});
