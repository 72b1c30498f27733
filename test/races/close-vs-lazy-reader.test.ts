/**
 * Race: the forced close of an ending task against the drain's lazy reader opening its next
 * spill file (abort row D3, G4). Once the drain has begun, fast-check's scheduler orders every
 * spill-file open, stat, read and close, each delivery, the task dir's removal, and the ending
 * (CANCEL, FAIL or a bare stop).
 */
import { describe, expect } from 'vitest';
import { fc, it } from '@fast-check/vitest';
import { startRecovery } from '../../src/recover.ts';
import { CancelledError, isAbortConsequence } from '../../src/services/errors.ts';
import { seam } from '../helpers/fault-seam.ts';
import { deferred, type Deferred, macrotasks } from '../helpers/async.ts';
import { listSpill, outcomeWithListing } from '../helpers/spill-root.ts';
import {
  RACE_LIMITS,
  allSuppressed,
  drainScheduler,
  raceParams,
  RACE_TIMEOUT_MS,
  vanished,
  raceSuite,
} from './harness.ts';
type Ending = 'cancel' | 'fail' | 'stop';

/** How often the ending landed while a lazy open of a spill file was waiting to run. */
const landed = { duringOpen: 0, otherwise: 0, afterEnd: 0 };

const suite = raceSuite(
  'forced close against a lazy reader opening the next file',
  () =>
    `ending landed: ${landed.duringOpen} while a spill file open was pending, ${landed.otherwise} elsewhere in the drain, ${landed.afterEnd} after the task ended`,
);

describe('race: forced close against a lazy reader opening the next file', () => {
  it.prop(
    [fc.scheduler(), fc.nat({ max: 30 }), fc.constantFrom<Ending>('cancel', 'fail', 'stop')],
    raceParams,
  )(
    'G1 G4 G5 D3: whenever the task ends during the drain, no reader sees a vanished file, nothing survives done, and the ending is the cause',
    async (s, endAfterOps, ending) => {
      const { fixture, spillRoot } = suite;
      let draining = false;
      let ops = 0;
      let pendingOpens = 0;
      let endedWhileOpen: boolean | undefined;
      const failure = new Error('injected: FAIL during the drain');
      let scheduleEnd = () => {};
      seam.setFsHook((op, path) => {
        if (!draining || !path.startsWith(spillRoot)) return undefined;
        if (ops++ === endAfterOps) scheduleEnd();
        const released = s.schedule(Promise.resolve(), `${op} ${path.split('/').at(-1)}`);
        if (op === 'open') {
          pendingOpens++;
          return released.finally(() => pendingOpens--);
        }
        return released;
      });
      const recovery = startRecovery({
        checkpoint: fixture.checkpoint.path,
        spillRoot,
        limits: RACE_LIMITS,
        hooks: {
          beforeDrain: () => {
            draining = true;
            if (endAfterOps === 0) scheduleEnd();
          },
        },
        // Deliveries wait for the scheduler too, so the drain can be anywhere when the end lands.
        channels: () => ({
          onBuffer: () => s.schedule(Promise.resolve(), 'deliver'),
          onFinished: () => {},
        }),
      });
      scheduleEnd = () =>
        void s.schedule(Promise.resolve(), ending).then(() => {
          if (recovery.actor.getSnapshot().status !== 'active') return;
          endedWhileOpen = pendingOpens > 0;
          if (ending === 'cancel') recovery.cancel('race');
          else if (ending === 'fail') recovery.actor.send({ type: 'FAIL', error: failure });
          else recovery.actor.stop();
        });
      const done = outcomeWithListing(recovery.done, spillRoot);
      try {
        const outcome = await s.waitFor(done);
        await drainScheduler(s);
        landed[
          endedWhileOpen === undefined ? 'afterEnd' : endedWhileOpen ? 'duringOpen' : 'otherwise'
        ]++;

        if (endedWhileOpen === undefined) {
          expect(outcome.error).toBeUndefined();
          expect(outcome.report?.bytesDelivered).toBe(fixture.checkpoint.payloadBytes);
        } else if (ending === 'fail') {
          expect(outcome.error).toBe(failure); // G5: the first real cause, itself
        } else {
          expect(outcome.error).toBeInstanceOf(CancelledError);
        }
        if (outcome.error !== undefined) {
          // G4: the reads the close cut short fail as abort consequences, never as a vanished file.
          const attached = allSuppressed(outcome.error);
          expect(attached.filter(vanished)).toEqual([]);
          expect(attached.filter((e) => !isAbortConsequence(e))).toEqual([]);
        }
        expect(outcome.atDone).toEqual({ taskDirs: [], spillFiles: [] }); // G1, at the instant
        expect(listSpill(spillRoot)).toEqual({ taskDirs: [], spillFiles: [] });
      } finally {
        seam.resetFsSeam();
      }
    },
    RACE_TIMEOUT_MS,
  );

  // Regression: the race above found this one (SpillReader.ensureFile did not re-check `closed`
  // after its stat, so fill() dereferenced the file close() had taken: a TypeError attached to
  // the cause instead of an AbortedError). Pinned here as one deterministic interleaving.
  it('G4 a reader force-closed while the stat of its next file is in flight fails with AbortedError, not TypeError', async () => {
    const { fixture, spillRoot } = suite;
    const pauses = new Map<string, { reached: Deferred; release: Deferred }>();
    const pause = (key: string) => {
      const p = { reached: deferred(), release: deferred() };
      pauses.set(key, p);
      return p;
    };
    const stat = pause('stat');
    const close = pause('close');
    let draining = false;
    seam.setFsHook(async (op, path) => {
      if (!draining || !/spill-segment-1\.bin$/.test(path)) return;
      const p = pauses.get(op);
      if (p === undefined || p.reached.settled) return;
      p.reached.resolve();
      await p.release.promise;
    });
    try {
      const recovery = startRecovery({
        checkpoint: fixture.checkpoint.path,
        spillRoot,
        limits: RACE_LIMITS,
        hooks: { beforeDrain: () => void (draining = true) },
        channels: () => ({ onBuffer: () => {}, onFinished: () => {} }),
      });
      await stat.reached.promise; // the lazy reader opened spill-segment-1 and stats it
      recovery.cancel('forced close during the stat'); // closes the reader: file close waits
      await close.reached.promise;
      stat.release.resolve(); // the stat succeeds on the still-open descriptor
      await macrotasks(3);
      close.release.resolve();
      const error = await recovery.done.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(CancelledError);
      expect(allSuppressed(error).filter((e) => !isAbortConsequence(e))).toEqual([]);
    } finally {
      seam.resetFsSeam();
    }
  });
});
