import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readdir } from 'node:fs/promises';
import { makeTempRoot } from '../helpers/temp.ts';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { seam, type FsHook } from '../helpers/fault-seam.ts';
import { SpillRoot } from '../../src/services/spill-root/spill-root.ts';
import { spillFileName } from '../../src/services/spill/segment-format.ts';
import type { SpillSample } from '../../src/pool/census.ts';
import { ABORT_PATHS, ALL_FAULTS, type FaultKind } from '../../src/pool/faults.ts';
import { TaskManager } from '../../src/pool/task-manager.ts';

const LIMITS = {
  maxSpillFileBytes: 64 * 1024,
  maxSegmentBytes: 16 * 1024,
  readChunkBytes: 64 * 1024,
  bufferBytes: 8 * 1024,
};

const open: Setup[] = [];

// Runs before the temp dirs are removed: a root deleted while its SpillRoot is still open would
// leave a stale instance behind for the next test (SpillRoot caches open roots by device and
// inode, and a fresh temp dir often gets the inode of the one just deleted).
afterEach(async () => {
  seam.resetFsSeam();
  while (open.length > 0) await teardown(open.pop()!).catch(() => undefined);
});

interface Setup {
  root: string;
  work: string;
  pool: TaskManager;
}

async function setup(
  options: { tasks?: number; faults?: FaultKind[]; seed?: number; fsHook?: FsHook } = {},
): Promise<Setup> {
  const root = await makeTempRoot();
  const work = await makeTempRoot();
  const made = await makeCheckpoint({
    out: join(work, 'state.spwc'),
    mb: 0.5,
    seed: 7,
    maxEntryBytes: 16 * 1024,
  });
  const pool = await TaskManager.create({
    spillRoot: root,
    checkpoint: made.path,
    workDir: work,
    tasks: options.tasks ?? 3,
    faults: options.faults ?? ALL_FAULTS,
    seed: options.seed ?? 1,
    limits: LIMITS,
    privateRoot: true,
    ...(options.fsHook ? { fsHook: options.fsHook } : {}),
  });
  const s = { root, work, pool };
  open.push(s);
  return s;
}

/** Closes the pool and the spill root; returns what the owner dir held just before. */
async function teardown(s: Setup): Promise<string[]> {
  const { root, pool } = s;
  if (open.includes(s)) open.splice(open.indexOf(s), 1);
  await pool.close();
  const spill = await SpillRoot.open(root);
  const held = await readdir(spill.ownerDir);
  await spill.close();
  return held;
}

describe('TaskManager', () => {
  it('G1/G5: every fault kind in a shared spill root leaks no file and masks no cause', async () => {
    const s = await setup();
    // Two rounds: every kind twice, each with both of its variants.
    const loops = 2 * (ALL_FAULTS.length + 1);
    const m = await s.pool.run(loops);

    expect(m.problems).toEqual([]);
    expect(m.loops).toBe(loops);
    expect(m.leakedFiles).toBe(0);
    expect(m.maskedCauses).toBe(0);
    expect(m.faultsMissed).toBe(0);
    expect(m.deliveryErrors).toBe(0);
    for (const kind of ALL_FAULTS) {
      expect(m.byKind[kind], kind).toMatchObject({ loops: 2, asExpected: 2 });
      expect(m.faults[kind], kind).toBe(2);
    }
    // Every abort path of the Flink table the pool can reach was taken.
    expect(Object.keys(m.abortPaths).sort()).toEqual(Object.keys(ABORT_PATHS).sort());
    expect(m.outcomes).toEqual({ finished: 4, failed: 14, cancelled: 8 });
    expect(m.checkpointsVerified).toBe(2);
    expect(m.spillFilesWritten).toBeGreaterThan(loops);
    expect(m.liveFiles).toBe(0);
    expect(m.outstandingGrants).toBe(0);

    expect(await teardown(s)).toEqual(['owner.json']);
    // The slot copies and checkpoint remainders are gone; only the input stays.
    expect(await readdir(s.work)).toEqual(['state.spwc']);
  });

  it('live spill files of running tasks are counted as live, never as leaked', async () => {
    const samples: SpillSample[] = [];
    let pool: TaskManager | undefined;
    // Pauses the writer as it opens its third spill file and samples the root right then.
    const fsHook: FsHook = async (op, path) => {
      if (op === 'open' && path.endsWith(`/${spillFileName(2)}`) && samples.length === 0) {
        samples.push(await pool!.sample());
      }
    };
    const s = await setup({ tasks: 1, faults: [], fsHook });
    pool = s.pool;
    const m = await s.pool.run(1);

    expect(samples).toHaveLength(1);
    expect(samples[0]).toMatchObject({ liveTasks: 1, leaked: [] });
    expect(samples[0]!.files).toBe(2);
    expect(samples[0]!.bytes).toBeGreaterThan(0);
    expect(samples[0]!.grants).toBe(0); // the fetched state does not exist yet
    expect(m.peakLiveFiles).toBeGreaterThanOrEqual(2);
    expect(m.leakedFiles).toBe(0);
    await teardown(s);
  });

  it('the leak check can fail: a task dir that survives its task is counted (row C1)', async () => {
    const s = await setup({ tasks: 1, faults: [] });
    // The delete fails twice, so the retry fails too and the dir outlives the task.
    seam.injectFault({ op: 'rm', code: 'EIO', pathIncludes: '/task-', times: 2 });
    const m = await s.pool.run(1);

    expect(m.leakedFiles).toBeGreaterThan(0);
    expect(m.problems.some((p) => p.includes('still there after done settled'))).toBe(true);
    // The task reported the delete failure instead of finishing: a cause the loop never planned.
    expect(m.maskedCauses).toBe(1);
    await teardown(s);
  });

  it('the cause check can fail: a failure the loop did not inject counts as masked', async () => {
    const s = await setup({ tasks: 1, faults: [] });
    seam.injectFault({ op: 'read', code: 'EIO', pathIncludes: 'slot-0.spwc' });
    const m = await s.pool.run(1);

    expect(m.outcomes.failed).toBe(1);
    expect(m.maskedCauses).toBe(1);
    expect(m.problems[0]).toMatch(/expected finished, got failed: IoError ERR_SPILLWAY_IO: EIO/);
    expect(m.leakedFiles).toBe(0);
    await teardown(s);
  });

  it('G6: checkpoints during drain split every channel into delivered + remainder exactly', async () => {
    const s = await setup({ tasks: 2, faults: ['checkpoint'] });
    // none, checkpoint × 2 rounds: one cut mid-drain, one before the first buffer.
    const m = await s.pool.run(4);

    expect(m.byKind.checkpoint).toMatchObject({ loops: 2, asExpected: 2 });
    expect(m.checkpointsVerified).toBe(2);
    expect(m.deliveryErrors).toBe(0);
    expect(m.outcomes.finished).toBe(4);
    await teardown(s);
  });

  it('a stop signal cancels every running task, starts no new loop and leaves nothing', async () => {
    const stop = new AbortController();
    let writes = 0;
    // Stops the run while tasks are spilling: their cancellation must clean up like any other.
    const fsHook: FsHook = (op, path) => {
      if (op === 'write' && path.includes('/task-') && ++writes === 3) stop.abort('SIGINT');
    };
    const s = await setup({ tasks: 3, faults: [], fsHook });
    const m = await s.pool.run(100, { signal: stop.signal });

    expect(m.loops).toBeLessThan(100);
    expect(m.loops).toBe(m.loopsStarted);
    expect(m.interrupted).toBeGreaterThanOrEqual(1);
    expect(m.outcomes.cancelled).toBe(m.interrupted);
    expect(m.leakedFiles).toBe(0);
    expect(m.maskedCauses).toBe(0);
    expect(await teardown(s)).toEqual(['owner.json']);
  });

  it('the fault schedule is seeded: the same seed gives the same faults and abort paths', async () => {
    const a = await setup({ tasks: 2, seed: 42 });
    const b = await setup({ tasks: 2, seed: 42 });
    const ma = await a.pool.run(12);
    const mb = await b.pool.run(12);
    expect(mb.faults).toEqual(ma.faults);
    expect(mb.abortPaths).toEqual(ma.abortPaths);
    expect(mb.outcomes).toEqual(ma.outcomes);
    await teardown(a);
    await teardown(b);
  });

  // Regression: fetch and drain used to delete their own files before reporting their failure,
  // so a cancel arriving in that window became the cause and the real failure was suppressed.
  it('G5: a cancel that arrives while a failure cleans up never becomes the cause', async () => {
    const s = await setup({ tasks: 2, faults: ['cancel-after-failure'] });
    const m = await s.pool.run(4);
    await teardown(s);
    expect(m.leakedFiles).toBe(0);
    expect(m.maskedCauses).toBe(0);
  });
});
