/**
 * Flink's abort table (docs/flink.md §4), one named test per row, run through the
 * real task machine and real files. Faults come only from the fs seam and the TaskHooks. Every
 * test ends with the G1 leak check: no task dir and no spill segment left in the spill root.
 */
import { existsSync } from 'node:fs';
import { readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AbortedError,
  CancelledError,
  CleanupError,
  CorruptCheckpointError,
  RejectedError,
  SpillEOFError,
  suppressedOf,
} from '../../src/services/errors.ts';
import { readCheckpoint } from '../../src/services/formats/spwc/reader.ts';
import { fetchToSpill } from '../../src/services/spill/fetch-stage.ts';
import { type FsOp } from '../../src/services/fs.ts';
import { seam } from '../helpers/fault-seam.ts';
import { SpillReader } from '../../src/services/spill/spill-reader.ts';
import { SpillRoot } from '../../src/services/spill-root/spill-root.ts';
import type { TaskServices } from '../../src/machines/task-services.ts';
import { deferred, macrotasks, pauseOn, settle, until } from '../helpers/async.ts';
import { SMALL_LIMITS } from '../helpers/checkpoints.ts';
import { modeOptions } from '../helpers/spill-mode.ts';
import {
  codeOf,
  errorTree,
  expectNoLeak,
  fixture,
  leftovers,
  recorder,
  start,
  type Fixture,
} from './harness.ts';

/** How many spill files a clean run of `fx` makes (deterministic for a given input and limits). */
async function spillFileCount(fx: Fixture): Promise<number> {
  const { recovery } = start(fx, { taskId: 'count' });
  const report = await recovery.done;
  expect(report.spillFiles).toBeGreaterThan(3);
  return report.spillFiles;
}

/** Records every seam operation on a path containing `part`, from now on. */
function recordOps(part: string): { op: FsOp; path: string }[] {
  const ops: { op: FsOp; path: string }[] = [];
  seam.setFsHook((op, path) => {
    if (path.includes(part)) ops.push({ op, path });
  });
  return ops;
}

/** The payload offset of the last non-empty entry of a checkpoint, and its length. */
async function lastPayload(path: string): Promise<{ offset: number; length: number }> {
  let last = { offset: -1, length: 0 };
  let header = 16;
  await readCheckpoint(path, {
    onVersion: (version) => void (header = version === 2 ? 20 : 16),
    onEntry(_gate, _channel, length, offset) {
      if (length > 0) last = { offset: offset + header, length };
    },
    onPayload() {},
  });
  return last;
}

describe('abort table: fetch (F)', () => {
  it('F1 corrupt header: fails with CorruptCheckpointError before any file exists, nothing to delete', async () => {
    const fx = await fixture();
    const bytes = await readFile(fx.checkpoint);
    bytes.write('SPWX', 0, 'latin1');
    await writeFile(fx.checkpoint, bytes);
    const mkdirs = recordOps('task-');
    const w = start(fx, { taskId: 'f1' });
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CorruptCheckpointError);
    expect((error as CorruptCheckpointError).offset).toBe(0);
    expect(w.taskDir()).toBeUndefined(); // never acquired
    expect(mkdirs.filter((o) => o.op === 'mkdir')).toEqual([]);
    expect(w.recovery.actor.getSnapshot().value).toBe('failed');
    await expectNoLeak(fx);
  });

  it('F1 EIO on the first checkpoint read: the I/O error is the cause, no task dir created', async () => {
    const fx = await fixture();
    seam.injectFault({ op: 'read', code: 'EIO', pathIncludes: 'in.spwc' });
    const w = start(fx, { taskId: 'f1eio' });
    const error = await settle(w.recovery.done);
    expect(codeOf(error)).toBe('EIO');
    expect(suppressedOf(error)).toEqual([]);
    expect(w.taskDir()).toBeUndefined();
    await expectNoLeak(fx);
  });

  it('F2 ENOSPC on the 3rd spill write: the fetch stage reports the failure first, then deletes its own dir', async () => {
    const fx = await fixture();
    seam.injectFault({ op: 'write', code: 'ENOSPC', nth: 3, pathIncludes: 'spill-segment-' });
    const w = start(fx, { taskId: 'f2' });
    let reported: unknown;
    w.onEvent('FAIL', (e) => (reported = e.error));
    const error = await settle(w.recovery.done);
    expect(codeOf(error)).toBe('ENOSPC');
    expect(w.taskDir()).toBeDefined();
    expect(reported).toBe(error); // reported before the stage's cleanup awaited anything (G5)
    expect(w.events.map((e) => e.type)).not.toContain('FETCH.HANDOFF');
    await expectNoLeak(fx, w.taskDir());
  });

  it('F2 CRC mismatch late in the checkpoint after many spill files: CorruptCheckpointError with the offset, reported first, dir gone', async () => {
    const fx = await fixture({ kib: 1536 });
    const last = await lastPayload(fx.checkpoint);
    const bytes = await readFile(fx.checkpoint);
    bytes[last.offset + (last.length >> 1)]! ^= 0xff;
    await writeFile(fx.checkpoint, bytes);
    const ops = recordOps('spill-segment-');
    const w = start(fx, { taskId: 'f2crc' });
    let reported: unknown;
    w.onEvent('FAIL', (e) => (reported = e.error));
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CorruptCheckpointError);
    expect((error as CorruptCheckpointError).offset).toBe(last.offset - 4); // the crc field
    expect(ops.filter((o) => o.op === 'open').length).toBeGreaterThanOrEqual(10);
    expect(reported).toBe(error); // reported before the stage's cleanup awaited anything (G5)
    await expectNoLeak(fx, w.taskDir());
  });

  it('F2 the fetch stage alone cleans up its spill dir on failure: no owner, no registry', async () => {
    const fx = await fixture();
    const spill = await SpillRoot.open(fx.root);
    const taskDir = spill.taskDirPath('f2-alone');
    seam.injectFault({ op: 'write', code: 'ENOSPC', nth: 3, pathIncludes: 'spill-segment-' });
    let acquired = false;
    const error = await settle(
      fetchToSpill({
        checkpoint: fx.checkpoint,
        taskDir,
        limits: SMALL_LIMITS,
        signal: new AbortController().signal,
        onTaskDirAcquired: () => (acquired = true), // an owner that never cleans anything
        ...modeOptions(),
      }),
    );
    expect(codeOf(error)).toBe('ENOSPC');
    expect(acquired).toBe(true);
    expect(existsSync(taskDir)).toBe(false);
    await expectNoLeak(fx);
  });

  it('F3 close of the last spill file fails before the state exists: discardSpilledFiles removes the dir, the close error is the cause', async () => {
    const fx = await fixture();
    const n = await spillFileCount(fx);
    seam.injectFault({ op: 'close', code: 'EIO', pathIncludes: `spill-segment-${n - 1}.bin` });
    const w = start(fx, { taskId: 'f3' });
    let reported: unknown;
    w.onEvent('FAIL', (e) => (reported = e.error));
    const error = await settle(w.recovery.done);
    expect(codeOf(error)).toBe('EIO');
    expect((error as NodeJS.ErrnoException).syscall).toBe('close');
    expect(suppressedOf(error)).toEqual([]);
    expect(w.events.map((e) => e.type)).not.toContain('FETCH.HANDOFF'); // no state was built
    expect(reported).toBe(error); // reported before the stage's cleanup awaited anything (G5)
    await expectNoLeak(fx, w.taskDir());
  });

  it('F3 regression: failure before the fetched state exists → the fetch stage discards the dir with no owner at all', async () => {
    const fx = await fixture({ kib: 128 });
    const spill = await SpillRoot.open(fx.root);
    const taskDir = spill.taskDirPath('f3-alone');
    // One file only: its close is the writer's final close, before the state is built.
    seam.injectFault({ op: 'close', code: 'EIO', pathIncludes: 'spill-segment-0.bin' });
    const error = await settle(
      fetchToSpill({
        checkpoint: fx.checkpoint,
        taskDir,
        limits: { ...SMALL_LIMITS, maxSpillFileBytes: 1024 * 1024 },
        signal: new AbortController().signal,
        onTaskDirAcquired: () => {},
        ...modeOptions(),
      }),
    );
    expect(codeOf(error)).toBe('EIO');
    expect(existsSync(taskDir)).toBe(false);
    await expectNoLeak(fx);
  });

  it('F4 cancel while a spill file creation is paused: the late file deletes itself, nothing is created or written after abort', async () => {
    const fx = await fixture();
    const pause = pauseOn((op, path) => op === 'open' && path.endsWith('spill-segment-2.bin'));
    const w = start(fx, { taskId: 'f4open' });
    await pause.reached;
    w.recovery.cancel('test');
    pause.release();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    // The paused open was past its abort check; after it, no creation and no write at all.
    const spillOps = pause.after.filter((o) => o.path.includes('spill-segment-'));
    expect(spillOps.filter((o) => o.op === 'open' || o.op === 'write')).toEqual([]);
    expect(errorTree(error).some((e) => codeOf(e) === 'ENOENT')).toBe(false);
    await expectNoLeak(fx, w.taskDir());
  });

  it('F4/G3 cancel while a segment write is paused: the write that lost the race deletes its own file, no later file', async () => {
    const fx = await fixture();
    const pause = pauseOn((op, path) => op === 'write' && path.endsWith('spill-segment-1.bin'));
    const w = start(fx, { taskId: 'f4write' });
    await pause.reached;
    w.recovery.cancel('test');
    pause.release();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    const spillOps = pause.after.filter((o) => o.path.includes('spill-segment-'));
    expect(spillOps.filter((o) => o.op === 'open' || o.op === 'write')).toEqual([]);
    for (const e of suppressedOf(error)) expect(e).toBeInstanceOf(AbortedError);
    await expectNoLeak(fx, w.taskDir());
  });

  it('F4 cancel before the task dir exists (mkdir paused): the dir is created by nobody or deleted by its creator', async () => {
    const fx = await fixture();
    const pause = pauseOn((op, path) => op === 'mkdir' && path.includes('task-f4mkdir'));
    const w = start(fx, { taskId: 'f4mkdir' });
    await pause.reached;
    w.recovery.cancel('test');
    pause.release();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    expect(pause.after.filter((o) => o.op === 'open' && o.path.includes('spill-segment-'))).toEqual(
      [],
    );
    await expectNoLeak(fx, w.taskDir());
  });

  it('F5 fetch finishes after its task was cancelled (final close paused): the sealed state is discarded, never handed off', async () => {
    const fx = await fixture();
    const n = await spillFileCount(fx);
    const pause = pauseOn(
      (op, path) => op === 'close' && path.endsWith(`spill-segment-${n - 1}.bin`),
    );
    const w = start(fx, { taskId: 'f5' });
    await pause.reached;
    w.recovery.cancel('test');
    pause.release();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    expect(w.events.map((e) => e.type)).not.toContain('FETCH.HANDOFF');
    for (const e of suppressedOf(error)) expect(e).toBeInstanceOf(AbortedError);
    await expectNoLeak(fx, w.taskDir());
  });

  it('F5 fetch finishes after its actor was stopped: the state is discarded, done rejects with CancelledError', async () => {
    const fx = await fixture();
    const n = await spillFileCount(fx);
    const pause = pauseOn(
      (op, path) => op === 'close' && path.endsWith(`spill-segment-${n - 1}.bin`),
    );
    const w = start(fx, { taskId: 'f5stop' });
    await pause.reached;
    w.recovery.actor.stop();
    pause.release();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as Error).message).toBe('task actor stopped');
    await expectNoLeak(fx, w.taskDir());
  });
});

/** Hooks that hand the test the task's services as the gap stage starts. */
function capture() {
  let services: TaskServices | undefined;
  return {
    get services() {
      return services!;
    },
    beforeStage(stage: string, s: TaskServices) {
      if (stage === 'gap') services = s;
    },
  };
}

describe('abort table: gap (GAP)', () => {
  it('GAP1 the channels() factory throws in requestPartitions: that error is the cause, the registry closes the state', async () => {
    const fx = await fixture();
    const boom = new Error('no such input gate');
    const w = start(fx, {
      taskId: 'g1',
      channels: () => {
        throw boom;
      },
    });
    const error = await settle(w.recovery.done);
    expect(error).toBe(boom);
    expect(suppressedOf(error)).toEqual([]);
    expect(w.recovery.actor.getSnapshot().context.closedByRegistry).toEqual(['fetchedState']);
    await expectNoLeak(fx, w.taskDir());
  });

  it('GAP2 a gap mail rejected by a quiesced mailbox: RejectedError is the cause, the state is closed', async () => {
    const fx = await fixture();
    const w = start(fx, {
      taskId: 'g2',
      hooks: { beforeStage: (stage, s) => void (stage === 'gap' && s.mailbox.quiesce()) },
    });
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(RejectedError);
    expect((error as Error).message).toContain('requestPartitions');
    await expectNoLeak(fx, w.taskDir());
  });

  it('GAP3 a gap mail dropped by the closing mailbox never settles; cancel still deletes everything', async () => {
    const fx = await fixture();
    const blocker = deferred();
    const w = start(fx, {
      taskId: 'g3',
      hooks: {
        beforeStage: (stage, s) => {
          if (stage === 'gap') void s.mailbox.execute('blocker', () => blocker.promise);
        },
      },
    });
    // The mail is posted behind the blocker; then the mailbox closes and drops it.
    await until(
      () => w.recovery.actor.getSnapshot().context.services.mailbox.pending === 1,
      'requestPartitions queued',
    );
    const { services, ending } = w.recovery.actor.getSnapshot().context;
    expect(services.mailbox.close().names).toEqual(['requestPartitions']);
    await macrotasks(5);
    expect(w.recovery.actor.getSnapshot().value).toEqual({ alive: { restoring: 'gap' } });
    expect(w.recovery.actor.getSnapshot().context.ownership).toEqual({ fetchedState: 'gap' });
    w.recovery.cancel('after drop');
    // Leaving `alive` runs the resourceCloser: the close has begun before cancel() returns.
    expect(ending.registry.isClosed).toBe(true);
    const error = await settle(w.recovery.done);
    blocker.resolve();
    expect(error).toBeInstanceOf(CancelledError);
    expect(suppressedOf(error)).toEqual([]); // a dropped mail raises nothing
    await expectNoLeak(fx, w.taskDir());
  });

  it('GAP4 afterDrainerBuilt throws: the drainer (main-reader grant) and the state are force-closed by the backstop', async () => {
    const fx = await fixture();
    const boom = new Error('G4 boom');
    const w = start(fx, {
      taskId: 'g4',
      hooks: {
        afterDrainerBuilt: () => {
          throw boom;
        },
      },
    });
    const error = await settle(w.recovery.done);
    expect(error).toBe(boom);
    expect(w.recovery.actor.getSnapshot().context.closedByRegistry.sort()).toEqual([
      'drainer',
      'fetchedState',
    ]);
    expect(w.recovery.actor.getSnapshot().context.state!.isClosed).toBe(true);
    await expectNoLeak(fx, w.taskDir());
  });

  it('GAP5 the installTrigger mail is rejected after the drainer exists: RejectedError is the cause, drainer and state closed', async () => {
    const fx = await fixture();
    const hooks = capture();
    const w = start(fx, {
      taskId: 'g5rej',
      hooks: {
        beforeStage: hooks.beforeStage,
        afterDrainerBuilt: () => hooks.services.mailbox.quiesce(),
      },
    });
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(RejectedError);
    expect((error as Error).message).toContain('installTrigger');
    expect(w.recovery.actor.getSnapshot().context.trigger).toBe('not-ready');
    await expectNoLeak(fx, w.taskDir());
  });

  it('GAP5 the installTrigger mail is dropped after the drainer exists: checkpoints are declined, cancel closes drainer and state', async () => {
    const fx = await fixture();
    const hooks = capture();
    const blocker = deferred();
    const w = start(fx, {
      taskId: 'g5drop',
      hooks: {
        beforeStage: hooks.beforeStage,
        afterDrainerBuilt: () =>
          void hooks.services.mailbox.execute('blocker', () => blocker.promise),
      },
    });
    await until(() => hooks.services?.mailbox.pending === 1, 'installTrigger queued');
    expect(hooks.services.mailbox.close().names).toEqual(['installTrigger']);
    await macrotasks(5);
    const declined = await settle(w.recovery.checkpoint(1, { out: join(fx.dir, 'cp1.spwc') }));
    expect((declined as Error).message).toContain('declined');
    expect(w.recovery.actor.getSnapshot().context.ownership).toEqual({
      fetchedState: 'gap',
      drainer: 'gap',
    });
    w.recovery.cancel('after drop');
    const error = await settle(w.recovery.done);
    blocker.resolve();
    expect(error).toBeInstanceOf(CancelledError);
    expect(w.recovery.actor.getSnapshot().context.closedByRegistry.sort()).toEqual([
      'drainer',
      'fetchedState',
    ]);
    await expectNoLeak(fx, w.taskDir());
  });
});

describe('abort table: drain (D)', () => {
  it('D1 the drain job is rejected by a shut-down executor: RejectedError is the cause, drainer and state closed', async () => {
    const fx = await fixture();
    const w = start(fx, {
      taskId: 'd1',
      hooks: { beforeStage: (stage, s) => void (stage === 'drain' && s.executor.shutdown()) },
    });
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(RejectedError);
    expect((error as Error).message).toContain("job 'drain'");
    expect(w.recovery.actor.getSnapshot().context.closedByRegistry.sort()).toEqual([
      'drainer',
      'fetchedState',
    ]);
    await expectNoLeak(fx, w.taskDir());
  });

  it('D2 a consumer throws mid-drain: its error is the cause; the drain stage closes the drainer itself, deleting the files', async () => {
    const fx = await fixture();
    const boom = new Error('channel rejected a buffer');
    const rec = recorder((_info, _buf, seen) => {
      if (seen === 7) throw boom;
    });
    const w = start(fx, { taskId: 'd2', channels: rec.channels });
    let reported: unknown;
    w.onEvent('FAIL', (e) => (reported = e.error));
    const error = await settle(w.recovery.done);
    expect(error).toBe(boom);
    expect(suppressedOf(error)).toEqual([]);
    expect(reported).toBe(error); // reported before the stage's cleanup awaited anything (G5)
    expect(rec.finished.size).toBe(0); // no channel is finished after a failed drain
    await expectNoLeak(fx, w.taskDir());
  });

  it('D2 a spill file truncated before the drain: SpillEOFError names the file, and the dir is gone', async () => {
    const fx = await fixture();
    const w = start(fx, {
      taskId: 'd2eof',
      hooks: { beforeDrain: async (drainer) => truncate(drainer.state.files[1]!, 20) },
    });
    let reported: unknown;
    w.onEvent('FAIL', (e) => (reported = e.error));
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(SpillEOFError);
    expect((error as Error).message).toContain('spill-segment-1.bin');
    expect(reported).toBe(error); // reported before the stage's cleanup awaited anything (G5)
    await expectNoLeak(fx, w.taskDir());
  });

  it('D3 cancel while the drain waits on a consumer: the drain stops with AbortedError (suppressed), never ENOENT, files gone', async () => {
    const fx = await fixture();
    const hold = deferred();
    const rec = recorder((_i, _b, seen) => (seen === 20 ? hold.promise : undefined));
    const w = start(fx, { taskId: 'd3', channels: rec.channels });
    await until(() => rec.buffers() >= 20, 'buffer 20 delivered');
    w.recovery.cancel('test');
    // Cleanup runs while the drain still waits: the files go first, then the drain wakes up.
    await until(() => !existsSync(w.taskDir()!), 'task dir deleted');
    hold.resolve();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    const tree = errorTree(error);
    expect(tree.some((e) => codeOf(e) === 'ENOENT')).toBe(false);
    expect(suppressedOf(error).length).toBeGreaterThan(0);
    for (const e of suppressedOf(error)) expect(e).toBeInstanceOf(AbortedError);
    await expectNoLeak(fx, w.taskDir());
  });

  it('D3 forced close while the reader is about to lazily open the next file: AbortedError, suppressed, never ENOENT', async () => {
    const fx = await fixture();
    const n = await spillFileCount(fx);
    let draining = false;
    const pause = pauseOn(
      (op, path) => draining && op === 'open' && path.endsWith(`spill-segment-${n - 2}.bin`),
    );
    const w = start(fx, {
      taskId: 'd3open',
      hooks: { beforeDrain: () => void (draining = true) },
    });
    await pause.reached;
    w.recovery.cancel('test');
    await macrotasks(5);
    // G4: the delete waits for the open already in flight.
    expect(existsSync(w.taskDir()!)).toBe(true);
    pause.release();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    expect(errorTree(error).some((e) => codeOf(e) === 'ENOENT')).toBe(false);
    const aborted = suppressedOf(error).filter((e) => e instanceof AbortedError);
    expect(aborted.length).toBeGreaterThan(0);
    expect(suppressedOf(error).every((e) => e instanceof AbortedError)).toBe(true);
    // The delete came after the paused open, and no spill file was opened after it.
    const rm = pause.after.findIndex((o) => o.op === 'rm' && o.path === w.taskDir());
    expect(rm).toBeGreaterThanOrEqual(0);
    expect(pause.after.slice(rm).filter((o) => o.op === 'open')).toEqual([]);
    await expectNoLeak(fx, w.taskDir());
  });
});

describe('abort table: snapshots (S)', () => {
  it('S1 checkpoint start fails (a barrier throws): the checkpoint rejects with it, nothing is held, the task finishes', async () => {
    const fx = await fixture();
    const hold = deferred();
    const barrierError = new Error('barrier refused');
    let refuse = true;
    const rec = recorder((_i, _b, seen) => (seen === 10 ? hold.promise : undefined));
    const channels: typeof rec.channels = (info) => {
      const c = rec.channels(info);
      return {
        ...c,
        onBarrier: (id) => {
          if (refuse) throw barrierError;
          c.onBarrier!(id);
        },
      };
    };
    const w = start(fx, { taskId: 's1', channels });
    await until(() => rec.buffers() >= 10, 'buffer 10 delivered');
    const state = w.recovery.actor.getSnapshot().context.state!;
    const grants = state.refCount;
    expect(await settle(w.recovery.checkpoint(1, { out: join(fx.dir, 'cp1.spwc') }))).toBe(
      barrierError,
    );
    expect(state.refCount).toBe(grants);
    expect(w.recovery.actor.getSnapshot().context.ownership).not.toHaveProperty('snapshot-1');
    refuse = false;
    hold.resolve();
    const report = await w.recovery.done;
    expect(report.bytesDelivered).toBe(fx.made.payloadBytes);
    expect(existsSync(join(fx.dir, 'cp1.spwc'))).toBe(false);
    await expectNoLeak(fx, w.taskDir());
  });

  it('S1 a checkpoint after the state was closed gets an empty remainder, never touching the closed reader', async () => {
    const fx = await fixture();
    const w = start(fx, { taskId: 's1late', autoFinish: false });
    await until(
      () => w.recovery.actor.getSnapshot().matches({ alive: 'running' }),
      'recovery done',
    );
    expect(w.recovery.actor.getSnapshot().context.state!.isClosed).toBe(true);
    const result = await w.recovery.checkpoint(2, { out: join(fx.dir, 'cp2.spwc') });
    expect(result).toEqual({ checkpointId: 2, file: undefined, channels: [] });
    w.recovery.actor.send({ type: 'FINISH' });
    await w.recovery.done;
    await expectNoLeak(fx, w.taskDir());
  });

  it('S2 the task is stopped right after a checkpoint request: the writer starts aborted, cuts nothing, the checkpoint rejects with AbortedError', async () => {
    const fx = await fixture();
    const hold = deferred();
    const rec = recorder((_i, _b, seen) => (seen === 10 ? hold.promise : undefined));
    const w = start(fx, { taskId: 's2', channels: rec.channels });
    await until(() => rec.buffers() >= 10, 'buffer 10 delivered');
    const cp = settle(w.recovery.checkpoint(1, { out: join(fx.dir, 'cp1.spwc') }));
    w.recovery.actor.stop();
    expect(await cp).toBeInstanceOf(AbortedError);
    hold.resolve();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    // Nothing was cut: no barrier reached any channel, and no reader was ever owned.
    for (const log of rec.logs.values()) expect(log.every((e) => e instanceof Buffer)).toBe(true);
    expect(w.events.map((e) => e.type)).not.toContain('SNAPSHOT.OWNED');
    expect(existsSync(join(fx.dir, 'cp1.spwc'))).toBe(false);
    await expectNoLeak(fx, w.taskDir());
  });

  it('S2 the checkpoint request is cancelled with its task: the writer starts aborted, cuts nothing, rejects with AbortedError', async () => {
    const fx = await fixture();
    const hold = deferred();
    const rec = recorder((_i, _b, seen) => (seen === 10 ? hold.promise : undefined));
    const w = start(fx, { taskId: 's2c', channels: rec.channels });
    await until(() => rec.buffers() >= 10, 'buffer 10 delivered');
    const cp = settle(w.recovery.checkpoint(1, { out: join(fx.dir, 'cp1.spwc') }));
    w.recovery.cancel('right after the request');
    hold.resolve();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    expect(await cp).toBeInstanceOf(AbortedError);
    for (const log of rec.logs.values()) expect(log.every((e) => e instanceof Buffer)).toBe(true);
    expect(existsSync(join(fx.dir, 'cp1.spwc'))).toBe(false);
    await expectNoLeak(fx, w.taskDir());
  });

  it('S2 stopped while an earlier checkpoint is still being written (the drainer closes late): the new writer still cuts nothing, no barrier after the end', async () => {
    const fx = await fixture();
    const hold = deferred();
    const rec = recorder((_i, _b, seen) => (seen === 10 ? hold.promise : undefined));
    const w = start(fx, { taskId: 's2late', channels: rec.channels });
    await until(() => rec.buffers() >= 10, 'buffer 10 delivered');
    const out1 = join(fx.dir, 'cp1.spwc');
    const pause = pauseOn((op, path) => op === 'write' && path.endsWith('cp1.spwc.partial'));
    const cp1 = settle(w.recovery.checkpoint(1, { out: out1 }));
    await pause.reached;
    // The registry closes snapshot-1's reader first (registered last) and awaits it, so the
    // drainer is still open when checkpoint 2's writer runs: only the writer's own abort check
    // keeps it from cutting after the end.
    const cp2 = settle(w.recovery.checkpoint(2, { out: join(fx.dir, 'cp2.spwc') }));
    w.recovery.actor.stop();
    expect(await cp2).toBeInstanceOf(AbortedError);
    pause.release();
    hold.resolve();
    expect(await settle(w.recovery.done)).toBeInstanceOf(CancelledError);
    expect(await cp1).toBeInstanceOf(Error);
    for (const log of rec.logs.values()) {
      expect(log.some((e) => !Buffer.isBuffer(e) && e.barrier === 2)).toBe(false);
    }
    await expectNoLeak(fx, w.taskDir());
  });

  it('S3 a snapshot whose reader is never opened releases its grant on close (inside a running drain)', async () => {
    const fx = await fixture();
    const counts: number[] = [];
    const w = start(fx, {
      taskId: 's3',
      hooks: {
        beforeDrain: async (drainer) => {
          const state = drainer.state;
          counts.push(state.refCount);
          const reader = SpillReader.open(state);
          const snapshot = reader.snapshot();
          counts.push(state.refCount);
          await snapshot.close();
          await snapshot.close(); // idempotent
          counts.push(state.refCount);
          await reader.close();
          counts.push(state.refCount);
        },
      },
    });
    const report = await w.recovery.done;
    expect(counts).toEqual([1, 3, 2, 1]);
    expect(report.bytesDelivered).toBe(fx.made.payloadBytes);
    // The last grant (the drainer's) deleted the files; the registry had nothing left to force.
    expect(w.recovery.actor.getSnapshot().context.closedByRegistry).toEqual([]);
    await expectNoLeak(fx, w.taskDir());
  });

  it('S4 writing the remainder hits EIO: the checkpoint rejects, its grant comes back, the task still finishes and the files go', async () => {
    const fx = await fixture();
    const hold = deferred();
    const rec = recorder((_i, _b, seen) => (seen === 10 ? hold.promise : undefined));
    const w = start(fx, { taskId: 's4', channels: rec.channels });
    await until(() => rec.buffers() >= 10, 'buffer 10 delivered');
    const out = join(fx.dir, 'cp1.spwc');
    seam.injectFault({ op: 'write', code: 'EIO', pathIncludes: 'cp1.spwc.partial' });
    const state = w.recovery.actor.getSnapshot().context.state!;
    const grants = state.refCount;
    const error = await settle(w.recovery.checkpoint(1, { out }));
    expect(codeOf(error)).toBe('EIO');
    expect(state.refCount).toBe(grants); // the writer closed its reader
    expect(w.recovery.actor.getSnapshot().context.ownership).not.toHaveProperty('snapshot-1');
    expect(existsSync(out)).toBe(false);
    hold.resolve();
    const report = await w.recovery.done;
    expect(report.bytesDelivered).toBe(fx.made.payloadBytes);
    expect(report.checkpoints).toBe(1);
    expect(w.recovery.actor.getSnapshot().context.closedByRegistry).toEqual([]);
    await expectNoLeak(fx, w.taskDir());
  });
});

describe('abort table: cleanup (C)', () => {
  it('C1 deleting the task dir fails once on an otherwise successful task: CleanupError is the failure, the backstop retries, nothing leaks', async () => {
    const fx = await fixture();
    seam.injectFault({ op: 'rm', code: 'EIO', pathIncludes: 'task-c1ok-' });
    const rec = recorder();
    const w = start(fx, { taskId: 'c1ok', channels: rec.channels });
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CleanupError);
    expect(codeOf((error as Error).cause)).toBe('EIO');
    expect(rec.finished.size).toBe(fx.made.channels.length); // all data was delivered
    expect(seam.fsOpCounts().rm).toBeGreaterThanOrEqual(2); // the failed delete and the retry
    await expectNoLeak(fx, w.taskDir());
  });

  it('C1 deleting the task dir fails under a consumer failure: the consumer error stays the cause, CleanupError suppressed, retried', async () => {
    const fx = await fixture();
    seam.injectFault({ op: 'rm', code: 'EIO', pathIncludes: 'task-c1fail-' });
    const boom = new Error('consumer boom');
    const rec = recorder((_i, _b, seen) => {
      if (seen === 5) throw boom;
    });
    const w = start(fx, { taskId: 'c1fail', channels: rec.channels });
    const error = await settle(w.recovery.done);
    expect(error).toBe(boom);
    expect(suppressedOf(error).map((e) => e.constructor)).toEqual([CleanupError]);
    await expectNoLeak(fx, w.taskDir());
  });

  it('C1 deleting the task dir fails after a fetch failure: the fetch error stays the cause, the delete error is suppressed, and the backstop retries', async () => {
    const fx = await fixture();
    seam.injectFault({ op: 'write', code: 'ENOSPC', nth: 3, pathIncludes: 'spill-segment-' });
    seam.injectFault({ op: 'rm', code: 'EIO', pathIncludes: 'task-c1fetch-' });
    const w = start(fx, { taskId: 'c1fetch' });
    const error = await settle(w.recovery.done);
    expect(codeOf(error)).toBe('ENOSPC');
    expect(suppressedOf(error).map(codeOf)).toContain('EIO');
    await expectNoLeak(fx, w.taskDir());
  });

  it('C1 the last grant is a checkpoint reader and its delete fails: checkpoint and task report it, the task keeps owning the state and its backstop retries', async () => {
    const fx = await fixture();
    const hold = deferred();
    const rec = recorder((_i, _b, seen) => (seen === 10 ? hold.promise : undefined));
    const w = start(fx, { taskId: 'c1snap', channels: rec.channels });
    await until(() => rec.buffers() >= 10, 'buffer 10 delivered');
    const out = join(fx.dir, 'cp1.spwc');
    const pause = pauseOn((op, path) => op === 'write' && path.endsWith('cp1.spwc.partial'));
    const cp = settle(w.recovery.checkpoint(1, { out }));
    await pause.reached;
    hold.resolve();
    await until(
      () => w.recovery.actor.getSnapshot().context.ownership.drainer === undefined,
      'drainer released',
    );
    seam.injectFault({ op: 'rm', code: 'EIO', pathIncludes: 'task-c1snap-' });
    pause.release();
    const cpError = await cp;
    expect(cpError).toBeInstanceOf(CleanupError);
    expect(existsSync(out)).toBe(false); // a failed checkpoint leaves no file
    // The task itself finished (all data delivered), so the delete failure is its failure,
    // as in the C1 case above; the registry's retry removed the files.
    expect(await settle(w.recovery.done)).toBe(cpError);
    expect(w.recovery.actor.getSnapshot().value).toBe('finished');
    expect(rec.finished.size).toBe(fx.made.channels.length);
    // The files outlived the release, so the state stayed owned (by the task) until the
    // registry's close deleted it.
    expect(w.recovery.actor.getSnapshot().context.closedByRegistry).toEqual(['fetchedState']);
    await expectNoLeak(fx, w.taskDir());
  });

  it('C2 cancel with failing registry entries (reader close EIO, first delete EIO): every entry is still closed, failures suppressed in order, cancel stays the cause', async () => {
    const fx = await fixture();
    const hold = deferred();
    const rec = recorder((_i, _b, seen) => (seen === 10 ? hold.promise : undefined));
    const w = start(fx, { taskId: 'c2', channels: rec.channels });
    await until(() => rec.buffers() >= 10, 'buffer 10 delivered');
    seam.injectFault({ op: 'close', code: 'EIO', pathIncludes: 'spill-segment-' });
    seam.injectFault({ op: 'rm', code: 'EIO', pathIncludes: 'task-c2-' });
    const services = w.recovery.actor.getSnapshot().context.services;
    w.recovery.cancel('test');
    hold.resolve();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    const suppressed = suppressedOf(error);
    const closeIdx = suppressed.findIndex((e) => codeOf(e) === 'EIO');
    expect(closeIdx).toBeGreaterThanOrEqual(0);
    expect(errorTree(error).some((e) => e instanceof CleanupError)).toBe(true);
    expect(errorTree(error).some((e) => codeOf(e) === 'ENOENT')).toBe(false);
    expect(services.mailbox.state).toBe('closed');
    expect(services.executor.isShutdown).toBe(true);
    await expectNoLeak(fx, w.taskDir());
  });

  it('C3 FINISH while a checkpoint writer holds its snapshot, entries failing: first registry error is the failure, later ones suppressed, all closed', async () => {
    const fx = await fixture();
    const hold = deferred();
    const rec = recorder((_i, _b, seen) => (seen === 10 ? hold.promise : undefined));
    const w = start(fx, { taskId: 'c3', channels: rec.channels, autoFinish: false });
    await until(() => rec.buffers() >= 10, 'buffer 10 delivered');
    const out = join(fx.dir, 'cp1.spwc');
    const pause = pauseOn((op, path) => op === 'write' && path.endsWith('cp1.spwc.partial'));
    const cp = settle(w.recovery.checkpoint(1, { out }));
    await pause.reached;
    hold.resolve();
    await until(
      () => w.recovery.actor.getSnapshot().matches({ alive: 'running' }),
      'recovery done',
    );
    expect(w.recovery.actor.getSnapshot().context.ownership).toEqual({
      fetchedState: 'task',
      'snapshot-1': 'checkpoint-1',
    });
    seam.injectFault({ op: 'close', code: 'EIO', pathIncludes: 'spill-segment-' });
    seam.injectFault({ op: 'rm', code: 'EIO', pathIncludes: 'task-c3-' });
    const services = w.recovery.actor.getSnapshot().context.services;
    w.recovery.actor.send({ type: 'FINISH' });
    const error = await settle(w.recovery.done);
    pause.release();
    expect(codeOf(error)).toBe('EIO');
    expect((error as NodeJS.ErrnoException).syscall).toBe('close');
    expect(suppressedOf(error).map((e) => e.constructor)).toContain(CleanupError);
    expect(services.mailbox.state).toBe('closed');
    expect(services.executor.isShutdown).toBe(true);
    // Its reader was closed under it: the checkpoint fails and leaves no file.
    expect(await cp).toBeInstanceOf(Error);
    expect(existsSync(out)).toBe(false);
    await expectNoLeak(fx, w.taskDir());
  });
});

describe('leftover check itself', () => {
  it('leftovers() sees a task dir and a spill segment (the G1 oracle can fail)', async () => {
    const fx = await fixture({ kib: 64 });
    const spill = await SpillRoot.open(fx.root);
    const dir = spill.taskDirPath('oracle');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(dir);
    await writeFile(join(dir, 'spill-segment-0.bin'), 'x');
    expect((await leftovers(fx.root)).length).toBe(2);
  });
});
