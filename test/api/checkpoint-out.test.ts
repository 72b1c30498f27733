/**
 * DESIGN §5: `checkpoint(id, { out, signal })` refuses an existing `out` (and a missing dir)
 * with a typed error before anything is written, takes an AbortSignal, and leaves nothing
 * behind when it fails or is cancelled; without `out` the remainder lives in the task's spill
 * dir and goes with it unless the caller moves it away first.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CancelledError,
  CheckpointOutError,
  recoverChannelState,
  type CheckpointOptions,
  type CheckpointResult,
} from '../../src/index.ts';
import { readCheckpoint } from '../../src/testing.ts';
import { seam } from '../helpers/fault-seam.ts';
import { makeSmallCheckpoint, SMALL_LIMITS } from '../helpers/checkpoints.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

afterEach(() => seam.resetFsSeam());

/** A recovery that takes checkpoint 7 with `options` once 16 KiB were delivered. */
async function recoverWithCheckpoint(options: CheckpointOptions, extra = {}) {
  const dir = await makeTempRoot();
  const { path } = await makeSmallCheckpoint(dir, { kib: 512 });
  const partials: string[] = [];
  seam.setFsHook((op, p) => {
    if (op === 'open' && p.endsWith('.partial')) partials.push(p);
  });
  let delivered = 0;
  let checkpoint: Promise<CheckpointResult> | undefined;
  // Boxed: a promise resolved with a promise would adopt it.
  let onCheckpoint: ((box: { p: Promise<CheckpointResult> }) => void) | undefined;
  const requested = new Promise<{ p: Promise<CheckpointResult> }>((r) => (onCheckpoint = r));
  const recovery = recoverChannelState({
    checkpoint: path,
    spillRoot: dir,
    limits: SMALL_LIMITS,
    ...extra,
    channels: () => ({
      onBuffer: (buffer) => {
        delivered += buffer.length;
        if (checkpoint === undefined && delivered >= 16 * 1024) {
          checkpoint = recovery.checkpoint(7, options);
          onCheckpoint!({ p: checkpoint });
        }
      },
      onFinished: () => undefined,
    }),
  });
  return { dir, recovery, checkpoint: (await requested).p, partials };
}

/** Ends an `autoFinish: false` recovery once it has recovered. */
async function finish(recovery: ReturnType<typeof recoverChannelState>): Promise<void> {
  await new Promise<void>((resolve) => {
    if (recovery.actor.getSnapshot().hasTag('running')) resolve();
    else recovery.actor.subscribe((s) => s.hasTag('running') && resolve());
  });
  recovery.actor.send({ type: 'FINISH' });
}

describe('checkpoint out', () => {
  it('an existing out is refused with CheckpointOutError before anything is written', async () => {
    const dir = await makeTempRoot();
    const out = join(dir, 'cp-7.spwc');
    writeFileSync(out, 'keep me');
    const r = await recoverWithCheckpoint({ out });
    const error = await r.checkpoint.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CheckpointOutError);
    expect(error).toMatchObject({ code: 'ERR_SPILLWAY_CHECKPOINT_OUT', errno: 'EEXIST', out });
    expect((error as Error).message).not.toMatch(/\.partial/);
    expect(r.partials).toEqual([]); // refused before a byte was written
    expect(readFileSync(out, 'utf8')).toBe('keep me');
    await r.recovery.done; // the recovery itself goes on
    expect(listSpill(r.dir).taskDirs).toEqual([]);
  });

  it('a missing directory is refused with CheckpointOutError ENOENT, nothing is created', async () => {
    const dir = await makeTempRoot();
    const out = join(dir, 'no-such-dir', 'cp-7.spwc');
    const r = await recoverWithCheckpoint({ out });
    await expect(r.checkpoint).rejects.toMatchObject({
      code: 'ERR_SPILLWAY_CHECKPOINT_OUT',
      errno: 'ENOENT',
    });
    expect(r.partials).toEqual([]);
    await r.recovery.done;
    expect(existsSync(join(dir, 'no-such-dir'))).toBe(false);
  });

  it('an aborted checkpoint signal cancels the checkpoint only and leaves nothing behind', async () => {
    const dir = await makeTempRoot();
    const out = join(dir, 'cp-7.spwc');
    const controller = new AbortController();
    const reason = new Error('checkpoint timed out');
    const r = await recoverWithCheckpoint({ out, signal: controller.signal });
    seam.setFsHook((op, p) => {
      if (op === 'write' && p.endsWith('.partial')) controller.abort(reason);
    });
    const error = await r.checkpoint.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as Error).cause).toBe(reason);
    const report = await r.recovery.done;
    expect(report.bytesDelivered).toBe(512 * 1024);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(dir).filter((n) => n.includes('cp-7'))).toEqual([]);
    expect(listSpill(r.dir).taskDirs).toEqual([]);
  });

  it('without out the remainder lives in the task dir and is removed with it', async () => {
    const before = readdirSync(tmpdir()).filter((n) => n.startsWith('spillway-checkpoint-'));
    const r = await recoverWithCheckpoint({}, { autoFinish: false });
    const { file } = await r.checkpoint;
    expect(file).toMatch(/\/spillway\/owner-[^/]+\/task-[^/]+-checkpoint-7\.spwc$/);
    expect(existsSync(file!)).toBe(true);
    await finish(r.recovery);
    await r.recovery.done;
    expect(existsSync(file!)).toBe(false);
    expect(readdirSync(tmpdir()).filter((n) => n.startsWith('spillway-checkpoint-'))).toEqual(
      before,
    );
  });

  it('the caller takes the default remainder by moving it before the task ends', async () => {
    const r = await recoverWithCheckpoint({}, { autoFinish: false });
    const { file } = await r.checkpoint;
    const kept = join(r.dir, 'kept-7.spwc');
    await rename(file!, kept);
    await finish(r.recovery);
    const report = await r.recovery.done;
    const summary = await readCheckpoint(kept, {
      onEntry: () => undefined,
      onPayload: () => undefined,
    });
    expect(summary.payloadBytes).toBeGreaterThan(0);
    expect(summary.payloadBytes).toBeLessThan(report.bytesDelivered);
    expect(listSpill(r.dir).taskDirs).toEqual([]);
  });
});
