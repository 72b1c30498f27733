/**
 * Race: CANCEL against spill-file creation (abort row F4, G3). fast-check's scheduler decides
 * when the cancel lands relative to every checkpoint read, task-dir creation, spill-file
 * creation, segment write and close of a real recovery.
 */
import { existsSync } from 'node:fs';
import { describe, expect } from 'vitest';
import { fc, it } from '@fast-check/vitest';
import { startRecovery } from '../../src/recover.ts';
import { CancelledError } from '../../src/services/errors.ts';
import { seam } from '../helpers/fault-seam.ts';
import { listSpill, outcomeWithListing } from '../helpers/spill-root.ts';
import {
  RACE_LIMITS,
  allSuppressed,
  drainScheduler,
  gateFs,
  raceParams,
  RACE_TIMEOUT_MS,
  vanished,
  raceSuite,
} from './harness.ts';

/** Where the cancels landed, to show the schedules cover the whole recovery. */
const landed = { beforeFiles: 0, withFiles: 0, afterEnd: 0 };

const suite = raceSuite(
  'cancel against spill-file creation',
  () =>
    `cancel landed: ${landed.beforeFiles} before the task dir existed, ${landed.withFiles} with spill files on disk, ${landed.afterEnd} after the task ended`,
);

describe('race: cancel against spill-file creation', () => {
  it.prop([fc.scheduler(), fc.nat({ max: 70 })], raceParams)(
    'G1 G3 G5 F4: whenever the cancel lands, nothing is created after it, nothing survives done, and the cause is the cancel',
    async (s, cancelAfterOps) => {
      const { fixture, spillRoot } = suite;
      let cancelled = false;
      let dirAtCancel = false;
      let ops = 0;
      const afterCancel: string[] = [];
      let scheduleCancel = () => {};
      const stopGating = gateFs(
        s,
        (_op, path) => path.startsWith(spillRoot) || path === fixture.checkpoint.path,
        (op, path) => {
          // The cancel competes with the operations from the n-th one on, so its landing point
          // is spread over the whole recovery rather than bunched at the start.
          if (ops++ === cancelAfterOps) scheduleCancel();
          // The writer checks its abort flag right before requesting these: after the cancel
          // it must request none (G3). Readers open existing files; those are not creations.
          if (!cancelled || !path.startsWith(spillRoot)) return;
          const creates =
            (op === 'mkdir' && /\/task-[^/]+$/.test(path)) ||
            (op === 'open' && /spill-segment-\d+\.bin$/.test(path) && !existsSync(path)) ||
            (op === 'write' && /spill-segment-\d+\.bin$/.test(path));
          if (creates) afterCancel.push(`${op} ${path}`);
        },
      );
      const recovery = startRecovery({
        checkpoint: fixture.checkpoint.path,
        spillRoot,
        limits: RACE_LIMITS,
        channels: () => ({ onBuffer: () => {}, onFinished: () => {} }),
      });
      scheduleCancel = () =>
        void s.schedule(Promise.resolve(), 'CANCEL').then(() => {
          cancelled = recovery.actor.getSnapshot().status === 'active';
          dirAtCancel = listSpill(spillRoot).taskDirs.length > 0;
          recovery.cancel('race');
        });
      // Operations requested before this line (none today) would have missed the cancel.
      if (ops > cancelAfterOps) scheduleCancel();
      const done = outcomeWithListing(recovery.done, spillRoot);
      try {
        const outcome = await s.waitFor(done);
        stopGating();
        await drainScheduler(s);

        // G5: a cancel that lands before the end is the cause; one after it changes nothing.
        landed[!cancelled ? 'afterEnd' : dirAtCancel ? 'withFiles' : 'beforeFiles']++;
        if (cancelled) {
          expect(outcome.error).toBeInstanceOf(CancelledError);
          // G4/G5: consequences only, never a file that vanished under someone.
          expect(allSuppressed(outcome.error).filter(vanished)).toEqual([]);
        } else {
          expect(outcome.error).toBeUndefined();
          expect(outcome.report?.bytesDelivered).toBe(fixture.checkpoint.payloadBytes);
        }
        expect(outcome.atDone).toEqual({ taskDirs: [], spillFiles: [] }); // G1, at the instant
        expect(afterCancel).toEqual([]); // G3
        expect(listSpill(spillRoot)).toEqual({ taskDirs: [], spillFiles: [] }); // nothing late
      } finally {
        seam.resetFsSeam();
      }
    },
    RACE_TIMEOUT_MS,
  );
});
