/**
 * Race: a gap mail dropped by the mailbox's close against the task's end (abort rows GAP2, GAP3).
 * A blocker mail holds the mailbox when the gap stage starts; fast-check's scheduler decides when
 * the blocker finishes, when the mailbox closes (rejecting new mails, dropping queued ones), when
 * the task ends (CANCEL, FAIL or a bare stop), and the order of every file operation from then on.
 */
import { describe, expect } from 'vitest';
import { fc, it } from '@fast-check/vitest';
import { startRecovery } from '../../src/recover.ts';
import { AbortedError, CancelledError, RejectedError } from '../../src/services/errors.ts';
import { seam } from '../helpers/fault-seam.ts';
import { withHangGuard } from '../helpers/async.ts';
import { listSpill, outcomeWithListing } from '../helpers/spill-root.ts';
import { RACE_LIMITS, drainScheduler, raceParams, RACE_TIMEOUT_MS, raceSuite } from './harness.ts';
type Ending = 'cancel' | 'fail' | 'stop';

const seen = { dropped: 0, rejected: 0, endedFirst: 0, finished: 0 };

const suite = raceSuite(
  'dropped mail against task end',
  () =>
    `dropped-mail race: ${seen.dropped} schedules dropped a mail, ${seen.rejected} failed on a rejected mail, ${seen.endedFirst} were ended by the ending event (with a mail queued, dropped or running), ${seen.finished} finished first`,
);

describe('race: a dropped mail against task end', () => {
  it.prop(
    [
      fc.scheduler(),
      fc.constantFrom<Ending>('cancel', 'fail', 'stop'),
      fc.boolean(),
      fc.nat({ max: 8 }),
      fc.nat({ max: 8 }),
    ],
    raceParams,
  )(
    'G1 G2 G3 G5: a dropped or rejected gap mail never leaks the fetched state nor hides the first cause, whenever the task ends',
    async (s, ending, holdGap, closeAfterTicks, endAfterTicks) => {
      const { fixture, spillRoot } = suite;
      let gapStarted = false;
      let endedByEvent = false;
      let dropped = 0;
      const failure = new Error('injected: FAIL while a gap mail is queued');
      seam.setFsHook((op, path) =>
        gapStarted && path.startsWith(spillRoot)
          ? s.schedule(Promise.resolve(), `${op} ${path.split('/').at(-1)}`)
          : undefined,
      );
      /**
       * Runs `fn` after `n` scheduler ticks: it always comes (a stalled task gets its end), but
       * early or late among the task's own steps, so it may also find the task finished.
       */
      const afterTicks = async (n: number, label: string, fn: () => void) => {
        for (let i = 0; i < n; i++)
          await s.schedule(Promise.resolve(), `${label} (wait ${i + 1}/${n})`);
        await s.schedule(Promise.resolve(), label);
        fn();
      };
      const recovery = startRecovery({
        checkpoint: fixture.checkpoint.path,
        spillRoot,
        limits: RACE_LIMITS,
        channels: () => ({ onBuffer: () => {}, onFinished: () => {} }),
        hooks: {
          beforeStage: (stage, services) => {
            if (stage !== 'gap') return;
            gapStarted = true;
            // Runs ahead of the gap's mails until the scheduler lets it finish.
            services.mailbox
              .execute('blocker', () => s.schedule(Promise.resolve(), 'blocker finishes'))
              .catch(() => undefined);
            void afterTicks(closeAfterTicks, 'mailbox.close', () => {
              dropped = services.mailbox.close().dropped;
            });
            void afterTicks(endAfterTicks, ending, () => {
              if (recovery.actor.getSnapshot().status !== 'active') return;
              endedByEvent = true;
              if (ending === 'cancel') recovery.cancel('race');
              else if (ending === 'fail') recovery.actor.send({ type: 'FAIL', error: failure });
              else recovery.actor.stop();
            });
            // Holding the gap lets the close come before its first mail is even posted (G2).
            return holdGap ? s.schedule(Promise.resolve(), 'gap posts its first mail') : undefined;
          },
        },
      });
      const done = outcomeWithListing(recovery.done, spillRoot);
      try {
        // A dropped mail never settles: only the ending may end such a task, and it must.
        const outcome = await withHangGuard(s.waitFor(done), 'done after a dropped mail');
        await drainScheduler(s);
        if (dropped > 0) seen.dropped++;

        if (endedByEvent) {
          seen.endedFirst++;
          if (ending === 'fail') expect(outcome.error).toBe(failure);
          else expect(outcome.error).toBeInstanceOf(CancelledError);
        } else if (outcome.error !== undefined) {
          // The mailbox closed before a gap mail was posted: row GAP2, the rejection is the cause.
          seen.rejected++;
          expect(outcome.error).toBeInstanceOf(RejectedError);
        } else {
          seen.finished++;
          expect(outcome.report?.bytesDelivered).toBe(fixture.checkpoint.payloadBytes);
        }
        expect(outcome.error).not.toBeInstanceOf(AbortedError);
        expect(outcome.atDone).toEqual({ taskDirs: [], spillFiles: [] }); // G1
        expect(listSpill(spillRoot)).toEqual({ taskDirs: [], spillFiles: [] });
        const snapshot = recovery.actor.getSnapshot();
        if (snapshot.status === 'done') expect(snapshot.context.ownership).toEqual({}); // G2
        expect(snapshot.context.ending.registry.isClosed).toBe(true);
      } finally {
        seam.resetFsSeam();
      }
    },
    RACE_TIMEOUT_MS,
  );
});
