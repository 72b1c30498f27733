/**
 * Race: a checkpoint taken during recovery against the drain's deliveries (G6). fast-check's
 * scheduler orders every spill-file operation and every delivery of the drain, and the moment
 * the checkpoint is requested; sometimes the request comes from inside a consumer's `onBuffer`,
 * between a delivery and its commit. Every channel must come out split exactly: bytes delivered
 * before the barrier, then the remainder file's bytes, with no gap and no overlap.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { fc, it } from '@fast-check/vitest';
import { startRecovery } from '../../src/recover.ts';
import type { CheckpointResult } from '../../src/machines/events.ts';
import { channelKey } from '../../src/services/channel.ts';
import { channelBytes } from '../helpers/checkpoints.ts';
import { seam } from '../helpers/fault-seam.ts';
import { listSpill, outcomeWithListing } from '../helpers/spill-root.ts';
import { removeDir, tempDir } from '../helpers/temp.ts';
import { RACE_LIMITS, drainScheduler, raceParams, RACE_TIMEOUT_MS, raceSuite } from './harness.ts';

interface Channel {
  before: Buffer[];
  after: Buffer[];
  barrier: number | undefined;
}

let outDir = '';
let run = 0;
const cuts = { midDrain: 0, afterRecovery: 0, declined: 0, inline: 0 };

const suite = raceSuite(
  'checkpoint snapshot against delivery',
  () =>
    `checkpoints: ${cuts.midDrain} cut the drain (${cuts.inline} requested inside onBuffer), ${cuts.afterRecovery} after every channel was recovered, ${cuts.declined} after the task ended`,
);

beforeAll(async () => {
  outDir = await tempDir();
});

afterAll(async () => {
  await removeDir(outDir);
});

describe('race: checkpoint snapshot against delivery', () => {
  it.prop([fc.scheduler(), fc.nat({ max: 60 }), fc.boolean()], raceParams)(
    'G6: wherever the checkpoint cuts the drain, delivered-before-barrier + remainder is each channel exactly, in order',
    async (s, cutAfter, inline) => {
      const { fixture, spillRoot } = suite;
      const out = join(outDir, `cp-${run++}.spwc`);
      const channels = new Map<string, Channel>();
      let draining = false;
      let steps = 0;
      let checkpoint: Promise<{ result?: CheckpointResult; error?: unknown }> | undefined;
      let endedBeforeRequest = false;
      let requestCheckpoint = (_fromOnBuffer = false) => {};
      const step = (fromOnBuffer: boolean) => {
        if (steps++ !== cutAfter) return;
        if (inline && fromOnBuffer) requestCheckpoint(true);
        else void s.schedule(Promise.resolve(), 'CHECKPOINT').then(() => requestCheckpoint());
      };
      seam.setFsHook((op, path) => {
        if (!draining || !path.startsWith(spillRoot)) return undefined;
        step(false);
        return s.schedule(Promise.resolve(), `${op} ${path.split('/').at(-1)}`);
      });
      const recovery = startRecovery({
        checkpoint: fixture.checkpoint.path,
        spillRoot,
        limits: RACE_LIMITS,
        hooks: { beforeDrain: () => void (draining = true) },
        channels: (info) => {
          const c: Channel = { before: [], after: [], barrier: undefined };
          channels.set(channelKey(info), c);
          return {
            onBuffer: (b) => {
              (c.barrier === undefined ? c.before : c.after).push(Buffer.from(b));
              step(true);
              return s.schedule(Promise.resolve(), 'deliver');
            },
            onFinished: () => {},
            onBarrier: (id) => {
              expect(c.barrier).toBeUndefined();
              c.barrier = id;
            },
          };
        },
      });
      requestCheckpoint = (fromOnBuffer = false) => {
        if (checkpoint !== undefined) return;
        endedBeforeRequest = recovery.actor.getSnapshot().status !== 'active';
        if (fromOnBuffer) cuts.inline++;
        checkpoint = recovery.checkpoint(7, { out }).then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        );
      };
      const done = outcomeWithListing(recovery.done, spillRoot);
      try {
        const outcome = await s.waitFor(done);
        await drainScheduler(s);
        // A cut point past the last step: take the checkpoint now, after recovery.
        requestCheckpoint();
        const cp = await checkpoint!;

        expect(outcome.error).toBeUndefined();
        expect(outcome.report?.bytesDelivered).toBe(fixture.checkpoint.payloadBytes);
        if (cp.error !== undefined) {
          // Only a checkpoint requested after the task ended may fail.
          expect(endedBeforeRequest).toBe(true);
          cuts.declined++;
        } else {
          const file = cp.result!.file;
          const remainder =
            file === undefined ? new Map<string, Buffer>() : await channelBytes(file);
          let cutAny = false;
          for (const [key, bytes] of fixture.expected) {
            const c = channels.get(key)!;
            const before = Buffer.concat(c.before);
            const after = Buffer.concat(c.after);
            // Every byte exactly once, in order, on exactly one side of the barrier.
            expect(Buffer.concat([before, after]).equals(bytes)).toBe(true);
            // The remainder is exactly what was delivered after the barrier.
            expect((remainder.get(key) ?? Buffer.alloc(0)).equals(after)).toBe(true);
            if (c.barrier === undefined) expect(after.length).toBe(0);
            if (after.length > 0) cutAny = true;
          }
          cuts[cutAny ? 'midDrain' : 'afterRecovery']++;
        }
        expect(outcome.atDone).toEqual({ taskDirs: [], spillFiles: [] }); // G1
        expect(listSpill(spillRoot)).toEqual({ taskDirs: [], spillFiles: [] });
      } finally {
        seam.resetFsSeam();
      }
    },
    RACE_TIMEOUT_MS,
  );
});
