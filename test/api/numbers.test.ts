/**
 * The numbers a user reads are true: with rescaling `progress.payloadBytes` and
 * `ownership().drainer.bytes` count the kept (filtered) bytes the drain delivers; the final
 * `onProgress` reading arrives once, before `done` settles; `listSpillRoot()` takes the dir
 * `ownership()` shows as well as the spill root, and no argument is a typed error.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  listSpillRoot,
  recoverChannelState,
  type OwnershipReport,
  type RecoveryProgress,
} from '../../src/index.ts';
import { makeRecordCheckpoint } from '../../src/testing.ts';
import { makeSmallCheckpoint, SMALL_LIMITS } from '../helpers/checkpoints.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const sink = () => ({ onBuffer: () => undefined, onFinished: () => undefined });

describe('numbers tell the truth', () => {
  it('with rescaling, progress.payloadBytes and ownership().drainer.bytes count the kept bytes', async () => {
    const dir = await makeTempRoot();
    const out = join(dir, 'v2.spwc');
    await makeRecordCheckpoint({ out, records: 3000, subtasks: 3, gates: 1, channels: 2, seed: 5 });
    const readings: RecoveryProgress[] = [];
    const midDrain: { left: number | undefined; delivered: number; payload: number | undefined }[] =
      [];
    const recovery = recoverChannelState({
      checkpoint: out,
      spillRoot: dir,
      limits: SMALL_LIMITS,
      rescale: { subtask: 0, parallelism: 2 },
      progressIntervalMs: 1,
      onProgress: (p) => readings.push(p),
      channels: () => ({
        onBuffer: () => {
          const p = recovery.progress();
          const o: OwnershipReport = recovery.ownership();
          if (o.drainer !== undefined) {
            midDrain.push({
              left: o.drainer.bytes,
              delivered: p.bytesDelivered,
              payload: p.payloadBytes,
            });
          }
        },
        onFinished: () => undefined,
      }),
    });
    const report = await recovery.done;
    expect(report.records!.dropped).toBeGreaterThan(0); // something was filtered out
    const last = readings.at(-1)!;
    expect(last.payloadBytes).toBe(report.bytesDelivered); // the bar ends at 100 %
    expect(last.bytesDelivered).toBe(last.payloadBytes);
    expect(midDrain.length).toBeGreaterThan(0);
    for (const m of midDrain) {
      expect(m.payload).toBe(report.bytesDelivered);
      // Left + delivered = what will have been delivered, never more.
      expect(m.left! + m.delivered).toBe(report.bytesDelivered);
    }
  });

  it('the final onProgress reading arrives once, before done settles', async () => {
    const dir = await makeTempRoot();
    const { path } = await makeSmallCheckpoint(dir, { kib: 256 });
    const readings: { stage: string; afterDone: boolean }[] = [];
    let settled = false;
    const recovery = recoverChannelState({
      checkpoint: path,
      spillRoot: dir,
      limits: SMALL_LIMITS,
      progressIntervalMs: 1,
      onProgress: (p) => readings.push({ stage: p.stage, afterDone: settled }),
      channels: sink,
    });
    await recovery.done.finally(() => (settled = true));
    // Anything late would have arrived by now.
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(readings.filter((r) => r.stage === 'finished')).toEqual([
      { stage: 'finished', afterDone: false },
    ]);
    expect(readings.at(-1)).toEqual({ stage: 'finished', afterDone: false });
  });

  it('the final reading of a cancelled recovery also arrives once, before done rejects', async () => {
    const dir = await makeTempRoot();
    const { path } = await makeSmallCheckpoint(dir, { kib: 256 });
    const stages: string[] = [];
    let settled = false;
    let late = 0;
    const recovery = recoverChannelState({
      checkpoint: path,
      spillRoot: dir,
      limits: SMALL_LIMITS,
      onProgress: (p) => {
        if (settled) late++;
        stages.push(p.stage);
      },
      channels: () => ({ onBuffer: () => recovery.cancel('stop'), onFinished: () => undefined }),
    });
    await recovery.done.catch(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(late).toBe(0);
    expect(stages.filter((s) => s === 'cancelled')).toEqual(['cancelled']);
  });

  it('listSpillRoot accepts the task dir ownership() shows and the spill root alike; no argument is a typed error', async () => {
    const dir = await makeTempRoot();
    const { path } = await makeSmallCheckpoint(dir, { kib: 256 });
    let taskDir: string | undefined;
    let fromTaskDir: Awaited<ReturnType<typeof listSpillRoot>> | undefined;
    let fromRoot: Awaited<ReturnType<typeof listSpillRoot>> | undefined;
    const recovery = recoverChannelState({
      checkpoint: path,
      spillRoot: dir,
      limits: SMALL_LIMITS,
      channels: () => ({
        onBuffer: async () => {
          if (taskDir !== undefined) return;
          taskDir = recovery.ownership().drainer?.path;
          fromTaskDir = await listSpillRoot(taskDir!);
          fromRoot = await listSpillRoot(dir);
        },
        onFinished: () => undefined,
      }),
    });
    await recovery.done;
    expect(taskDir).toMatch(/\/spillway\/owner-[^/]+\/task-[^/]+$/);
    expect(fromRoot!.owners.length).toBe(1);
    expect(fromRoot!.owners[0]!.tasks.length).toBe(1);
    const tasksOf = (l: typeof fromRoot) => l!.owners.flatMap((o) => o.tasks.map((t) => t.path));
    expect(fromTaskDir!.dir).toBe(fromRoot!.dir);
    expect(tasksOf(fromTaskDir)).toEqual(tasksOf(fromRoot));
    expect(tasksOf(fromRoot)).toEqual([taskDir]);
    // The owner dir and the spillway dir name the same root too.
    const ownerDir = join(taskDir!, '..');
    expect((await listSpillRoot(ownerDir)).dir).toBe(fromRoot!.dir);
    expect((await listSpillRoot(join(ownerDir, '..'))).dir).toBe(fromRoot!.dir);
    await expect(listSpillRoot(undefined as unknown as string)).rejects.toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_ARG_TYPE',
    });
  });
});
