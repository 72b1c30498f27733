/**
 * The pool with every loop a rescaled recovery: every fault kind hits the filtering
 * handler, and the judge checks each delivery against the survivors' bytes (G6), every
 * checkpoint's remainder (G6 at a barrier), and that no spill file leaks and no cause is masked
 * (G1, G5).
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ALL_FAULTS } from '../../src/pool/faults.ts';
import { readShape } from '../../src/pool/shape.ts';
import { TaskManager } from '../../src/pool/task-manager.ts';
import { makeRecordCheckpoint } from '../../src/services/formats/spwc/record-generator.ts';
import { seam } from '../helpers/fault-seam.ts';
import { SpillRoot } from '../../src/services/spill-root/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { referenceFilter, type V2Entry } from '../helpers/rescale-reference.ts';
import { readCheckpoint } from '../../src/services/formats/spwc/reader.ts';

afterEach(() => seam.resetFsSeam());

const RESCALE = { subtask: 1, parallelism: 3 };

describe('TaskManager with rescaled recoveries', () => {
  it('G1/G5/G6: every fault kind through the filtering handler leaks no file, masks no cause, delivers exactly the survivors', async () => {
    const { root, work, made } = await v2Checkpoint();
    // The pool's idea of the survivors agrees with the independent reference.
    const entries: V2Entry[] = [];
    await readCheckpoint(made.path, {
      onEntry: (gate, channel, _l, _o, subtask) =>
        void entries.push({ subtask, gate, channel, payload: Buffer.alloc(0) }),
      onPayload: (c) =>
        void (entries.at(-1)!.payload = Buffer.concat([entries.at(-1)!.payload, c])),
    });
    const want = referenceFilter(entries, { i: 1, p: 3, m: 128, k: 8 });
    const shape = await readShape(made.path, RESCALE);
    expect(shape.payloadBytes).toBe([...want.values()].reduce((n, b) => n + b.length, 0));
    expect(shape.payloadBytes).toBeLessThan(made.payloadBytes / 2);

    await runPool(root, work, made.path, 3, 'all');
  });

  it('G1/G5/G6: a mixed pool (odd slots rescaled, even slots verbatim) judges each loop against its own bytes', async () => {
    const { root, work, made } = await v2Checkpoint();
    await runPool(root, work, made.path, 2, 'odd');
  });
});

async function v2Checkpoint() {
  const root = await makeTempRoot();
  const work = await makeTempRoot();
  const made = await makeRecordCheckpoint({
    out: join(work, 'state.spwc'),
    records: 1200,
    subtasks: 3,
    gates: 2,
    channels: 2,
    seed: 5,
    maxEntryBytes: 16 * 1024,
  });
  return { root, work, made };
}

/** One round of every fault kind (two in a mixed pool, so each kind meets both kinds of slot). */
async function runPool(
  root: string,
  work: string,
  checkpoint: string,
  tasks: number,
  rescaleSlots: 'all' | 'odd',
): Promise<void> {
  const pool = await TaskManager.create({
    spillRoot: root,
    checkpoint,
    workDir: work,
    tasks,
    faults: ALL_FAULTS,
    seed: 3,
    limits: {
      maxSpillFileBytes: 32 * 1024,
      maxSegmentBytes: 8 * 1024,
      readChunkBytes: 64 * 1024,
      bufferBytes: 4 * 1024,
    },
    privateRoot: true,
    rescale: RESCALE,
    rescaleSlots,
  });
  try {
    const rounds = rescaleSlots === 'odd' ? 2 : 1;
    const loops = rounds * (ALL_FAULTS.length + 1);
    const m = await pool.run(loops);
    expect(m.problems).toEqual([]);
    expect(m.loops).toBe(loops);
    expect(m.leakedFiles).toBe(0);
    expect(m.maskedCauses).toBe(0);
    expect(m.faultsMissed).toBe(0);
    expect(m.deliveryErrors).toBe(0);
    expect(m.checkpointsVerified).toBeGreaterThanOrEqual(1);
    for (const kind of ALL_FAULTS) {
      expect(m.byKind[kind], kind).toMatchObject({ asExpected: rounds });
    }
  } finally {
    await pool.close();
    const spill = await SpillRoot.open(root);
    expect(await readdir(spill.ownerDir)).toEqual(['owner.json']);
    await spill.close();
  }
}
