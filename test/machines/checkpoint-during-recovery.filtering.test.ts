/**
 * G6 in filtering mode: the random-timing suite of
 * ./checkpoint-during-recovery.test.ts through the filtering handler (byte terms, with the
 * harness's small 4 KiB buffers), then G6 in record terms with the rescaled defaults: a
 * checkpoint taken during a rescaled recovery cuts between records, and its remainder is a v2
 * file whose records are exactly the survivors not yet delivered.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CheckpointResult } from '../../src/recover.ts';
import { readCheckpoint } from '../../src/services/formats/spwc/reader.ts';
import { SMALL_LIMITS } from '../helpers/checkpoints.ts';
import { FILTERING_TARGET, useSpillMode } from '../helpers/spill-mode.ts';
import { parseRecords } from '../helpers/rescale-reference.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { recoverBytes } from '../helpers/v2-checkpoints.ts';

useSpillMode('filtering');
await import('./checkpoint-during-recovery.test.ts');
const { expectNoLeak, fixture, recorder, start } = await import('./harness.ts');

/** The records of a stream that must end exactly at a record boundary. */
function wholeRecords(stream: Buffer, what: string): Buffer[] {
  let at = 0;
  while (at + 4 <= stream.length) at += 4 + stream.readInt32BE(at);
  expect(at, `${what} ends inside a record`).toBe(stream.length);
  return parseRecords(stream);
}

/** The file's version and the subtasks its entries name. */
async function v2Shape(file: string): Promise<{ version: number; subtasks: Set<number> }> {
  let version = 0;
  const subtasks = new Set<number>();
  await readCheckpoint(file, {
    onVersion: (v) => void (version = v),
    onEntry: (_g, _c, _l, _o, subtask) => void subtasks.add(subtask),
    onPayload: () => undefined,
  });
  return { version, subtasks };
}

describe('checkpoint during a rescaled recovery (G6 in record terms)', () => {
  it('G6 every cut falls between records; the v2 remainder holds exactly the undelivered survivors, as subtask 0', async () => {
    const fx = await fixture({ kib: 256, seed: 3 });
    // The rescaled defaults: no bufferBytes, so a buffer is a whole (record-aligned) segment.
    const { bufferBytes: _small, ...limits } = SMALL_LIMITS;
    const requested: Promise<CheckpointResult>[] = [];
    let checkpoint: (id: number) => void = () => {};
    const rec = recorder((_info, _buffer, seen) => {
      if (seen % 3 === 1 && seen < 60) checkpoint(seen);
    });
    const w = start(fx, { taskId: 'g6-records', channels: rec.channels, limits });
    checkpoint = (id) =>
      void requested.push(w.recovery.checkpoint(id, { out: join(fx.dir, `cp-${id}.spwc`) }));
    const report = await w.recovery.done;
    expect(report.bytesDelivered).toBe(fx.made.payloadBytes);
    // Every delivery ends between records, so wherever a checkpoint falls it cuts between two.
    for (const [key, log] of rec.logs) {
      let delivered = Buffer.alloc(0);
      for (const entry of log) {
        if (!Buffer.isBuffer(entry)) continue;
        delivered = Buffer.concat([delivered, entry]);
        wholeRecords(delivered, `${key} after a delivery`);
      }
    }
    const results = await Promise.all(requested);
    expect(results.length).toBeGreaterThan(10);
    expect(results.filter((r) => r.file !== undefined).length).toBeGreaterThan(5);
    const root = await makeTempRoot();
    for (const result of results) {
      const at = `checkpoint ${result.checkpointId}`;
      if (result.file === undefined) {
        // Nothing remained: everything had been delivered before this barrier.
        for (const [key, original] of fx.original) {
          expect(rec.before(key, result.checkpointId).equals(original), `${key} @ ${at}`).toBe(
            true,
          );
        }
        continue;
      }
      expect(await v2Shape(result.file!)).toEqual({ version: 2, subtasks: new Set([0]) });
      const rest = (await recoverBytes(result.file!, root)).out;
      // Recovered again as 0/2 every record survives; as 1/2 none does: they are survivors.
      const again = await recoverBytes(result.file!, root, { rescale: FILTERING_TARGET });
      const other = await recoverBytes(result.file!, root, {
        rescale: { subtask: 1, parallelism: 2 },
      });
      expect(other.report.records?.kept, at).toBe(0);
      for (const [key, original] of fx.original) {
        const before = rec.before(key, result.checkpointId);
        const remainder = rest.get(key) ?? Buffer.alloc(0);
        const records = [
          ...wholeRecords(before, `${key} before ${at}`),
          ...wholeRecords(remainder, `${key} remainder of ${at}`),
        ];
        expect(Buffer.concat([before, remainder]).equals(original), `${key} @ ${at}`).toBe(true);
        expect(records.length).toBe(wholeRecords(original, key).length);
        expect((again.out.get(key) ?? Buffer.alloc(0)).equals(remainder), key).toBe(true);
      }
    }
    await expectNoLeak(fx, w.taskDir());
  });
});
