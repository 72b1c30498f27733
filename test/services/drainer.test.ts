import { truncate, open } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { Drainer } from '../../src/services/spill/drainer.ts';
import { type ChannelConsumer } from '../../src/services/channel.ts';
import {
  AbortedError,
  MisuseError,
  SpillCorruptError,
  SpillEOFError,
  isAbortConsequence,
} from '../../src/services/errors.ts';
import { SerialExecutor } from '../../src/services/executor.ts';
import { FetchedChannelState } from '../../src/services/spill/fetched-state.ts';
import { channelId, channelKey, type ChannelInfo } from '../../src/services/channel.ts';
import { seam } from '../helpers/fault-seam.ts';
import type { SpillReader } from '../../src/services/spill/spill-reader.ts';
import { SEGMENT_HEADER_BYTES } from '../../src/services/spill/segment-format.ts';
import { SpillWriter } from '../../src/services/spill/spill-writer.ts';
import { READS_AHEAD } from '../../src/services/spill/read-ahead.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { deferred, exists, macrotasks, pauseOn, settle } from '../helpers/async.ts';

afterEach(() => seam.resetFsSeam());

const C0: ChannelInfo = { gate: 0, channel: 0 };
const C1: ChannelInfo = { gate: 0, channel: 1 };
const C2: ChannelInfo = { gate: 1, channel: 0 };

/**
 * Bytes `offset … offset+len` of channel `c`'s stream: a position-dependent pattern, so any gap,
 * overlap or reordering shows up as a byte mismatch.
 */
function pattern(c: number, offset: number, len: number): Buffer {
  const b = Buffer.alloc(len);
  for (let i = 0; i < len; i++) b[i] = (c * 97 + offset + i) % 251;
  return b;
}

/** Spills `appends` with the real writer; the state holds the hand-off grant. */
async function spill(
  appends: [ChannelInfo, number][],
  options: { maxSegmentBytes?: number; maxSpillFileBytes?: number; channels?: ChannelInfo[] } = {},
  root?: string,
  name = 'task-5-feed',
): Promise<{ state: FetchedChannelState; taskDir: string; original: Map<string, Buffer> }> {
  const taskDir = join(root ?? (await makeTempRoot()), name);
  const writer = new SpillWriter({ taskDir, ...options });
  for (const c of options.channels ?? []) writer.noteChannel(c);
  const original = new Map<string, Buffer>();
  for (const [info, len] of appends) {
    const key = channelKey(info);
    const before = original.get(key) ?? Buffer.alloc(0);
    const b = pattern(info.gate * 7 + info.channel, before.length, len);
    original.set(key, Buffer.concat([before, b]));
    await writer.append(info, b);
  }
  return { state: await writer.close(), taskDir, original };
}

/** A consumer per channel that records every call in one shared log. */
function recorder(
  channels: readonly ChannelInfo[],
  behave: Partial<Record<string, Partial<ChannelConsumer>>> = {},
) {
  const log: string[] = [];
  const waiters: { cond: () => boolean; resolve: () => void }[] = [];
  /** Re-checks the waiters after every consumer call: waiting is on events, never on time. */
  const note = (line: string) => {
    log.push(line);
    for (const w of [...waiters]) {
      if (w.cond()) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  /** Resolves once `cond` holds (checked now and after every consumer call). */
  const when = (cond: () => boolean): Promise<void> =>
    cond() ? Promise.resolve() : new Promise((resolve) => waiters.push({ cond, resolve }));
  const buffers = new Map<string, Buffer[]>();
  const barriers = new Map<string, number[]>();
  const finished = new Map<string, number>();
  const consumers = new Map<number, ChannelConsumer>();
  for (const info of channels) {
    const key = channelKey(info);
    buffers.set(key, []);
    barriers.set(key, []);
    finished.set(key, 0);
    const own = behave[key] ?? {};
    consumers.set(channelId(info), {
      onBuffer(b) {
        buffers.get(key)!.push(b);
        note(`buf ${key} ${b.length}`);
        return own.onBuffer?.(b);
      },
      onFinished() {
        finished.set(key, finished.get(key)! + 1);
        note(`fin ${key}`);
        return own.onFinished?.();
      },
      onBarrier(id) {
        barriers.get(key)!.push(id);
        note(`barrier ${key} ${id}`);
        own.onBarrier?.(id);
      },
    });
  }
  const bytesOf = (info: ChannelInfo) => Buffer.concat(buffers.get(channelKey(info))!);
  const sizes = (info: ChannelInfo) => buffers.get(channelKey(info))!.map((b) => b.length);
  return { log, buffers, barriers, finished, consumers, bytesOf, sizes, when };
}

/** Everything a reader yields, per channel key, concatenated; the reader is closed after. */
async function drainReader(reader: SpillReader): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  try {
    for (let s = await reader.nextSegment(); s !== null; s = await reader.nextSegment()) {
      const key = channelKey(s);
      for (let b = await s.read(1 << 20); b !== null; b = await s.read(1 << 20)) {
        out.set(key, Buffer.concat([out.get(key) ?? Buffer.alloc(0), b]));
      }
    }
  } finally {
    await reader.close();
  }
  return out;
}

/** Closes the drainer (and the hand-off, if still held) and checks every grant came back. */
async function finish(drainer: Drainer, state: FetchedChannelState, taskDir: string) {
  await drainer.close();
  if (!state.isClosed && state.refCount > 0) await state.release();
  expect(state.refCount).toBe(0);
  expect(state.isClosed).toBe(true);
  expect(await exists(taskDir)).toBe(false);
}

describe('Drainer (Flink FetchedChannelStateDrainerTest)', () => {
  it('testDrainEndToEnd', async () => {
    const { state, taskDir, original } = await spill([
      [C0, 30],
      [C1, 20],
    ]);
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers);
    expect(state.refCount).toBe(2);
    await state.release(); // the hand-off, as at drain start
    const report = await drainer.drain();
    expect(report).toEqual({ bytes: 50, buffers: 2, segments: 2, channels: 2 });
    expect(rec.bytesOf(C0)).toEqual(original.get(channelKey(C0)));
    expect(rec.bytesOf(C1)).toEqual(original.get(channelKey(C1)));
    expect([...rec.finished.values()]).toEqual([1, 1]);
    expect(drainer.phase).toBe('fully-consumed');
    await finish(drainer, state, taskDir);
  });

  it('testDrainSegmentLargerThanBufferSplitsIntoFullChunksThenPartialTail: 50 → 16,16,16,2', async () => {
    const { state, taskDir, original } = await spill([[C0, 50]]);
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16 });
    await drainer.drain();
    expect(rec.sizes(C0)).toEqual([16, 16, 16, 2]);
    expect(rec.bytesOf(C0)).toEqual(original.get(channelKey(C0)));
    await finish(drainer, state, taskDir);
  });

  it('testDrainSegmentExactMultipleOfBufferHasNoPartialTail: 48 → 3 full buffers', async () => {
    const { state, taskDir, original } = await spill([[C0, 48]]);
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16, readChunkBytes: 5 });
    await drainer.drain(); // read chunks of 5 are gathered into full 16-byte buffers
    expect(rec.sizes(C0)).toEqual([16, 16, 16]);
    expect(rec.bytesOf(C0)).toEqual(original.get(channelKey(C0)));
    await finish(drainer, state, taskDir);
  });

  it('testDrainDemuxByChannelInfo', async () => {
    const { state, taskDir, original } = await spill(
      [
        [C0, 10],
        [C2, 11],
        [C1, 12],
        [C0, 13],
        [C2, 14],
      ],
      { maxSpillFileBytes: 30 },
    );
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 8 });
    await drainer.drain();
    for (const c of [C0, C1, C2]) {
      expect(rec.bytesOf(c)).toEqual(original.get(channelKey(c)));
      expect(rec.finished.get(channelKey(c))).toBe(1);
    }
    await finish(drainer, state, taskDir);
  });

  it('testDrainCallsFinishAfterAllBufferDeliveries', async () => {
    const { state, taskDir } = await spill([
      [C0, 20],
      [C1, 20],
      [C0, 5],
    ]);
    // Asynchronous consumers: finish must still wait for the last delivery to settle.
    const slow = { onBuffer: () => macrotasks(1) };
    const rec = recorder(state.channels, { 'gate-0-channel-0': slow, 'gate-0-channel-1': slow });
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16 });
    await drainer.drain();
    const lastBuf = rec.log.map((l) => l.startsWith('buf')).lastIndexOf(true);
    const firstFin = rec.log.findIndex((l) => l.startsWith('fin'));
    expect(lastBuf).toBeLessThan(firstFin);
    expect(rec.log.filter((l) => l.startsWith('fin'))).toEqual([
      'fin gate-0-channel-0',
      'fin gate-0-channel-1',
    ]);
    await finish(drainer, state, taskDir);
  });

  it('testSnapshotCoversAllSegmentsBeforeDrain', async () => {
    const { state, taskDir, original } = await spill([
      [C0, 7],
      [C1, 9],
    ]);
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers);
    const rest = await drainReader(drainer.snapshotAndInsertBarriers(1));
    expect(rest).toEqual(original);
    await drainer.drain();
    await finish(drainer, state, taskDir);
  });

  it('testSnapshotInsertsBarrierPerChannel', async () => {
    const { state, taskDir } = await spill([
      [C0, 40],
      [C1, 40],
    ]);
    const gate = deferred();
    const rec = recorder(state.channels, { 'gate-0-channel-0': { onBuffer: () => gate.promise } });
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16 });
    const draining = drainer.drain();
    await rec.when(() => rec.log.length > 0); // mid-drain: one buffer of C0 delivered
    const reader = drainer.snapshotAndInsertBarriers(42);
    expect(rec.barriers.get('gate-0-channel-0')).toEqual([42]);
    expect(rec.barriers.get('gate-0-channel-1')).toEqual([42]);
    expect(rec.log).toEqual([
      'buf gate-0-channel-0 16',
      'barrier gate-0-channel-0 42',
      'barrier gate-0-channel-1 42',
    ]);
    gate.resolve();
    await draining;
    await drainReader(reader);
    await finish(drainer, state, taskDir);
  });

  it('testSnapshotInsertsBarrierWhenChannelInRecoveryEvenIfDiskSliceEmpty', async () => {
    const { state, taskDir } = await spill([
      [C0, 5],
      [C1, 5],
    ]);
    const finishing = deferred();
    const rec = recorder(state.channels, {
      'gate-0-channel-0': { onFinished: () => finishing.promise },
    });
    const drainer = new Drainer(state, rec.consumers);
    const draining = drainer.drain();
    await rec.when(() => rec.finished.get('gate-0-channel-0') === 1); // all data delivered
    expect(drainer.phase).toBe('drained');
    const reader = drainer.snapshotAndInsertBarriers(8);
    expect(rec.barriers.get('gate-0-channel-1')).toEqual([8]); // still in recovery
    expect(await reader.nextSegment()).toBeNull(); // nothing left on disk
    await reader.close();
    finishing.resolve();
    await draining;
    await finish(drainer, state, taskDir);
  });

  it('testSnapshotInsertsBarrierOnlyForChannelsStillInRecovery', async () => {
    const { state, taskDir } = await spill([
      [C0, 5],
      [C1, 5],
    ]);
    const finishing = deferred();
    const rec = recorder(state.channels, {
      'gate-0-channel-0': { onFinished: () => finishing.promise },
    });
    const drainer = new Drainer(state, rec.consumers);
    const draining = drainer.drain();
    await rec.when(() => rec.finished.get('gate-0-channel-0') === 1);
    await drainer.snapshotAndInsertBarriers(9).close();
    expect(rec.barriers.get('gate-0-channel-0')).toEqual([]); // finished: out of recovery
    expect(rec.barriers.get('gate-0-channel-1')).toEqual([9]);
    finishing.resolve();
    await draining;
    await finish(drainer, state, taskDir);
  });

  it('testSnapshotReturnsEmptyWhenDrainFinishedAndNotInRecovery', async () => {
    const { state, taskDir } = await spill([[C0, 5]]);
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers);
    await drainer.drain();
    const reader = drainer.snapshotAndInsertBarriers(3);
    expect(await reader.nextSegment()).toBeNull();
    await reader.close();
    expect(rec.barriers.get('gate-0-channel-0')).toEqual([]);
    expect(state.refCount).toBe(2); // the empty reader took no grant
    await finish(drainer, state, taskDir);
  });

  it('testSnapshotAfterDrainerClosedReturnsEmptyWithoutTouchingClosedRootReader', async () => {
    const { state, taskDir } = await spill([[C0, 5]]);
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers);
    await state.release();
    await drainer.drain();
    await finish(drainer, state, taskDir);
    const ops = seam.fsOpCounts();
    const late = drainer.snapshotAndInsertBarriers(11); // late checkpoint: safe
    expect(await late.nextSegment()).toBeNull();
    await late.close();
    expect(seam.fsOpCounts()).toEqual(ops);
    expect(rec.barriers.get('gate-0-channel-0')).toEqual([]);
  });

  it('testDrainOnExecutorThreadDeliversAndFinishes', async () => {
    const { state, taskDir, original } = await spill([
      [C0, 33],
      [C1, 3],
    ]);
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16 });
    const io = new SerialExecutor('channel-io');
    const report = await io.submit('drain', () => drainer.drain());
    await io.shutdown();
    expect(report.bytes).toBe(36);
    expect(rec.bytesOf(C0)).toEqual(original.get(channelKey(C0)));
    expect([...rec.finished.values()]).toEqual([1, 1]);
    await finish(drainer, state, taskDir);
  });

  it('testDrainOnExecutorThreadBubblesDeliveryException: "boom" surfaces from drain', async () => {
    const { state, taskDir } = await spill([
      [C0, 5],
      [C1, 5],
    ]);
    const boom = new Error('boom');
    const rec = recorder(state.channels, {
      'gate-0-channel-1': {
        onBuffer: () => {
          throw boom;
        },
      },
    });
    const drainer = new Drainer(state, rec.consumers);
    const io = new SerialExecutor('channel-io');
    await expect(io.submit('drain', () => drainer.drain())).rejects.toBe(boom);
    await io.shutdown();
    expect([...rec.finished.values()]).toEqual([0, 0]); // no finish after a failed delivery
    await finish(drainer, state, taskDir);
  });

  it('testDrainRecyclesInFlightBufferWhenBodyReadFails: truncated body → SpillEOFError', async () => {
    const { state, taskDir } = await spill([[C0, 64]]);
    const file = state.files[0]!;
    await truncate(file, SEGMENT_HEADER_BYTES + 64 - 24);
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16 });
    await expect(drainer.drain()).rejects.toBeInstanceOf(SpillEOFError);
    expect(rec.sizes(C0)).toEqual([16, 16]); // the partial third buffer is never delivered
    expect(rec.finished.get('gate-0-channel-0')).toBe(0);
    await finish(drainer, state, taskDir);
  });
});

describe('Drainer failures and aborts (ours)', () => {
  it('D2 a corrupt body (CRC mismatch) fails the drain with SpillCorruptError', async () => {
    const { state, taskDir } = await spill([[C0, 30]]);
    const handle = await open(state.files[0]!, 'r+');
    await handle.write(Buffer.from([0xff]), 0, 1, SEGMENT_HEADER_BYTES + 3);
    await handle.close();
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16 });
    await expect(drainer.drain()).rejects.toBeInstanceOf(SpillCorruptError);
    expect(rec.finished.get('gate-0-channel-0')).toBe(0);
    await finish(drainer, state, taskDir);
  });

  it('D2 a consumer rejecting asynchronously surfaces from drain', async () => {
    const { state, taskDir } = await spill([[C0, 40]]);
    const boom = new Error('boom');
    const rec = recorder(state.channels, {
      'gate-0-channel-0': { onBuffer: () => Promise.reject(boom) },
    });
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16 });
    await expect(drainer.drain()).rejects.toBe(boom);
    expect(rec.sizes(C0)).toEqual([16]);
    await finish(drainer, state, taskDir);
  });

  it('a missing consumer is an error at construction, before any grant is taken', async () => {
    const { state, taskDir } = await spill([
      [C0, 5],
      [C1, 5],
    ]);
    const rec = recorder([C0]);
    expect(() => new Drainer(state, rec.consumers)).toThrow(MisuseError);
    expect(state.refCount).toBe(1);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('a segment for a channel the state does not name fails the drain with MisuseError', async () => {
    const { state, taskDir } = await spill([
      [C0, 5],
      [C1, 5],
    ]);
    const partial = new FetchedChannelState(state.files, state.taskDir, [C0]);
    const rec = recorder(partial.channels);
    const drainer = new Drainer(partial, rec.consumers);
    await expect(drainer.drain()).rejects.toBeInstanceOf(MisuseError);
    await drainer.close();
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('drain() runs once', async () => {
    const { state, taskDir } = await spill([[C0, 5]]);
    const drainer = new Drainer(state, recorder(state.channels).consumers);
    await drainer.drain();
    await expect(drainer.drain()).rejects.toBeInstanceOf(MisuseError);
    await finish(drainer, state, taskDir);
  });

  it('a channel without spilled bytes is still finished exactly once', async () => {
    const { state, taskDir } = await spill([[C1, 5]], { channels: [C0, C1, C2] });
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers);
    await drainer.drain();
    expect([...rec.finished.values()]).toEqual([1, 1, 1]);
    expect(rec.sizes(C0)).toEqual([]);
    await finish(drainer, state, taskDir);
  });

  it('G4 close() during a delivery stops the drain with AbortedError and no later delivery', async () => {
    const { state, taskDir } = await spill([[C0, 64]]);
    const gate = deferred();
    const rec = recorder(state.channels, { 'gate-0-channel-0': { onBuffer: () => gate.promise } });
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16 });
    await state.release();
    const draining = settle(drainer.drain());
    await rec.when(() => rec.log.length === 1);
    await drainer.close(); // last grant: files go now (nothing is being read)
    expect(await exists(taskDir)).toBe(false);
    gate.resolve();
    expect(await draining).toBeInstanceOf(AbortedError);
    expect(rec.sizes(C0)).toEqual([16]);
    expect(rec.finished.get('gate-0-channel-0')).toBe(0);
    await finish(drainer, state, taskDir);
  });

  it('G4 close() during a paused read stops the drain with AbortedError, not EBADF', async () => {
    const { state, taskDir } = await spill([[C0, 64]]);
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16, readChunkBytes: 16 });
    const pause = pauseOn('read');
    const draining = settle(drainer.drain());
    await pause.reached;
    await drainer.close(); // the hand-off still keeps the files
    pause.release();
    const error = await draining;
    expect(error).toBeInstanceOf(AbortedError);
    expect(isAbortConsequence(error)).toBe(true);
    expect(rec.log).toEqual([]);
    await finish(drainer, state, taskDir);
  });

  it('stop() makes a running drain end at its next buffer with AbortedError', async () => {
    const { state, taskDir } = await spill([[C0, 64]]);
    const rec = recorder(state.channels, {
      'gate-0-channel-0': { onBuffer: () => drainer.stop() },
    });
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16 });
    await expect(drainer.drain()).rejects.toBeInstanceOf(AbortedError);
    expect(rec.sizes(C0)).toEqual([16]);
    await finish(drainer, state, taskDir);
  });

  it('D3 a forced close while the drain opens the next file gives AbortedError, not ENOENT', async () => {
    const { state, taskDir } = await spill(
      [
        [C0, 10],
        [C1, 10],
      ],
      { maxSpillFileBytes: 1 },
    );
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers);
    const pause = pauseOn('open', 'spill-segment-1.bin');
    const draining = settle(drainer.drain());
    await pause.reached;
    const closing = state.close(); // the task's backstop, grants outstanding
    await macrotasks();
    expect(await exists(taskDir)).toBe(true); // fenced: waits for the open in flight
    pause.release();
    await closing;
    expect(await exists(taskDir)).toBe(false);
    const error = await draining;
    expect(error).toBeInstanceOf(AbortedError);
    expect(isAbortConsequence(error)).toBe(true);
    expect(rec.sizes(C1)).toEqual([]);
    await finish(drainer, state, taskDir); // late releases are harmless
  });

  it('G6 a checkpoint after the spill state was closed mid-drain is declined, never silently empty', async () => {
    const { state, taskDir } = await spill([[C0, 64]]);
    const gate = deferred();
    const rec = recorder(state.channels, { 'gate-0-channel-0': { onBuffer: () => gate.promise } });
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16 });
    const draining = settle(drainer.drain());
    await rec.when(() => rec.log.length === 1);
    await state.close(); // 48 bytes never delivered and now unreadable
    expect(() => drainer.snapshotAndInsertBarriers(5)).toThrow(AbortedError);
    expect(rec.barriers.get('gate-0-channel-0')).toEqual([]); // no barrier for a declined checkpoint
    gate.resolve();
    expect(await draining).toBeInstanceOf(AbortedError);
    await finish(drainer, state, taskDir);
  });

  it('G6 a checkpoint after close() of an undrained drainer is declined, never silently empty', async () => {
    const { state, taskDir } = await spill([[C0, 8]]);
    const rec = recorder(state.channels);
    const drainer = new Drainer(state, rec.consumers);
    await drainer.close();
    expect(() => drainer.snapshotAndInsertBarriers(6)).toThrow(AbortedError);
    expect(rec.barriers.get('gate-0-channel-0')).toEqual([]);
    await finish(drainer, state, taskDir);
  });

  it('G6 a checkpoint taken synchronously inside onBuffer does not put that buffer in the remainder', async () => {
    const { state, taskDir, original } = await spill([
      [C0, 64],
      [C1, 48],
    ]);
    let reader: SpillReader | undefined;
    let drainer: Drainer | undefined;
    let seen = 0;
    const rec = recorder(state.channels, {
      'gate-0-channel-0': {
        onBuffer: () => {
          // Re-entrant: the cut happens while this very buffer is being handed over.
          if (++seen === 2) reader = drainer!.snapshotAndInsertBarriers(9);
        },
      },
    });
    drainer = new Drainer(state, rec.consumers, { bufferBytes: 16 });
    await drainer.drain();
    const remainder = await drainReader(reader!);
    // The buffer being delivered when the barrier came counts as delivered before it.
    const c0 = rec.log.filter((l) => l.includes('gate-0-channel-0') && !l.startsWith('fin'));
    expect(c0.slice(0, 3)).toEqual([
      'buf gate-0-channel-0 16',
      'buf gate-0-channel-0 16',
      'barrier gate-0-channel-0 9',
    ]);
    const before = Buffer.concat(rec.buffers.get('gate-0-channel-0')!.slice(0, 2));
    expect(Buffer.concat([before, remainder.get('gate-0-channel-0')!])).toEqual(
      original.get('gate-0-channel-0'),
    );
    expect(remainder.get('gate-0-channel-1')).toEqual(original.get('gate-0-channel-1'));
    await finish(drainer, state, taskDir);
  });

  it('G6 a consumer throwing from onBarrier declines the checkpoint and returns its grant', async () => {
    const { state, taskDir } = await spill([[C0, 64]]);
    const boom = new Error('barrier refused');
    const rec = recorder(state.channels, {
      'gate-0-channel-0': {
        onBarrier: () => {
          throw boom;
        },
      },
    });
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16 });
    const grants = state.refCount;
    expect(() => drainer.snapshotAndInsertBarriers(3)).toThrow(boom);
    await macrotasks();
    expect(state.refCount).toBe(grants); // the snapshot taken before the barriers was closed
    await drainer.drain();
    await finish(drainer, state, taskDir);
  });

  it('grant walk (docs §3.2): files go only when the last snapshot reader is closed', async () => {
    const { state, taskDir, original } = await spill([[C0, 40]]);
    expect(state.refCount).toBe(1); // hand-off
    const gate = deferred();
    const rec = recorder(state.channels, { 'gate-0-channel-0': { onBuffer: () => gate.promise } });
    const drainer = new Drainer(state, rec.consumers, { bufferBytes: 16 });
    expect(state.refCount).toBe(2); // + main reader
    await state.release();
    expect(state.refCount).toBe(1); // drain start
    const draining = drainer.drain();
    await rec.when(() => rec.log.length === 1);
    const snapshot = drainer.snapshotAndInsertBarriers(1);
    expect(state.refCount).toBe(2); // + snapshot reader
    gate.resolve();
    await draining;
    await drainer.close();
    expect(state.refCount).toBe(1);
    expect(await exists(taskDir)).toBe(true); // the snapshot still needs them
    const rest = await drainReader(snapshot);
    expect(Buffer.concat([rec.bytesOf(C0).subarray(0, 16), rest.get('gate-0-channel-0')!])).toEqual(
      original.get('gate-0-channel-0'),
    );
    expect(state.refCount).toBe(0);
    expect(await exists(taskDir)).toBe(false);
  });
});

interface Limits {
  maxSegmentBytes: number;
  maxSpillFileBytes: number;
  bufferBytes: number;
  readChunkBytes: number;
}

/**
 * One seeded interleaving: the drain's reads, file opens, deliveries and finishes and
 * `checkpoints` calls of snapshotAndInsertBarriers are all released by the fast-check scheduler
 * in the order it picks. Then checks G6 per checkpoint and channel, and G1 at the end.
 */
async function interleave(
  s: fc.Scheduler,
  root: string,
  name: string,
  appends: [number, number][],
  limits: Limits,
  checkpoints: number,
  borrows = false,
): Promise<{ barriers: number[][] }> {
  const channels = [C0, C1, C2];
  const { state, taskDir, original } = await spill(
    appends.map(([c, len]) => [channels[c]!, len]),
    { ...limits, channels },
    root,
    name,
  );
  const want = channels.map((c) => original.get(channelKey(c)) ?? Buffer.alloc(0));
  const delivered = channels.map(() => [] as Buffer[]);
  const deliveredLen = channels.map(() => 0);
  const finished = channels.map(() => 0);
  const barrierAt = channels.map(() => new Map<number, number>());
  const consumers = new Map<number, ChannelConsumer>(
    channels.map((info, c) => [
      channelId(info),
      {
        borrows,
        onBuffer(b) {
          expect(finished[c]).toBe(0);
          // A borrower copies before returning: the reused read buffer is refilled later.
          delivered[c]!.push(borrows ? Buffer.from(b) : b);
          deliveredLen[c]! += b.length;
          return s.schedule(Promise.resolve(), `deliver ${c}`);
        },
        onFinished() {
          finished[c]!++;
          return s.schedule(Promise.resolve(), `finish ${c}`);
        },
        onBarrier(id) {
          expect(barrierAt[c]!.has(id)).toBe(false);
          barrierAt[c]!.set(id, deliveredLen[c]!);
        },
      },
    ]),
  );
  const drainer = new Drainer(state, consumers, {
    bufferBytes: limits.bufferBytes,
    readChunkBytes: limits.readChunkBytes,
  });
  expect(drainer.reusesBuffers).toBe(borrows);
  await state.release(); // the hand-off, at drain start

  const taken: { id: number; at: number[]; finishedAt: number[]; reader: SpillReader }[] = [];
  const errors: unknown[] = [];
  let scheduling = true;
  seam.setFsHook(async (op) => {
    if (scheduling && (op === 'read' || op === 'open')) await s.schedule(Promise.resolve(), op);
  });
  for (let id = 1; id <= checkpoints; id++) {
    void s.schedule(Promise.resolve(id), `checkpoint ${id}`).then((cp) => {
      try {
        const at = [...deliveredLen];
        const finishedAt = [...finished];
        taken.push({ id: cp, at, finishedAt, reader: drainer.snapshotAndInsertBarriers(cp) });
      } catch (e) {
        errors.push(e);
      }
    });
  }
  try {
    await s.waitFor(drainer.drain());
    await s.waitIdle();
  } finally {
    scheduling = false;
    seam.setFsHook(undefined);
  }
  expect(errors).toEqual([]);
  expect(taken).toHaveLength(checkpoints);
  channels.forEach((_, c) => {
    expect(Buffer.concat(delivered[c]!).equals(want[c]!)).toBe(true);
    expect(finished[c]).toBe(1);
  });
  for (const t of taken) {
    // The remainder writer keeps slices across awaits: a snapshot reader never reuses.
    expect(t.reader.reusesBuffers).toBe(false);
    const rest = await drainReader(t.reader);
    channels.forEach((info, c) => {
      const cut = barrierAt[c]!.get(t.id);
      // A channel gets the barrier iff it is still in recovery (not finished) at that moment.
      expect(cut === undefined).toBe(t.finishedAt[c] === 1);
      if (cut !== undefined) expect(cut).toBe(t.at[c]);
      const before = Buffer.concat(delivered[c]!).subarray(0, t.at[c]);
      const after = rest.get(channelKey(info)) ?? Buffer.alloc(0);
      expect(Buffer.concat([before, after]).equals(want[c]!)).toBe(true);
    });
  }
  await drainer.close();
  expect(state.refCount).toBe(0);
  expect(state.isClosed).toBe(true);
  expect(await exists(taskDir)).toBe(false);
  return { barriers: barrierAt.map((m) => [...m.keys()]) };
}

describe('Drainer concurrency (Flink FetchedChannelStateDrainerConcurrencyTest)', () => {
  it('G6 every byte lands exactly once on one side of each barrier', async () => {
    const root = await makeTempRoot();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 1, max: 40 })), {
          minLength: 1,
          maxLength: 10,
        }),
        fc.record({
          maxSegmentBytes: fc.integer({ min: 17, max: 48 }),
          maxSpillFileBytes: fc.integer({ min: 1, max: 120 }),
          bufferBytes: fc.integer({ min: 1, max: 24 }),
          readChunkBytes: fc.integer({ min: 1, max: 64 }),
        }),
        fc.integer({ min: 1, max: 12 }),
        async (s, appends, limits, checkpoints) => {
          await interleave(s, root, `task-${run++}`, appends, limits, checkpoints);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('testDrainAndSnapshotConcurrentAtomicity: 500 records over 2 channels, 50 checkpoints (3 seeds)', async () => {
    const root = await makeTempRoot();
    let run = 0;
    const appends: [number, number][] = [];
    for (let i = 0; i < 500; i++) appends.push([i % 2, 4 + (i % 13)]);
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), async (s) => {
        const { barriers } = await interleave(
          s,
          root,
          `task-${run++}`,
          appends,
          { maxSegmentBytes: 256, maxSpillFileBytes: 2048, bufferBytes: 64, readChunkBytes: 512 },
          50,
        );
        // Both data channels saw every checkpoint taken while they were in recovery; the
        // third channel (no data) is finished last, so it saw at least as many.
        expect(barriers[2]!.length).toBeGreaterThanOrEqual(barriers[0]!.length);
      }),
      { numRuns: 3 },
    );
  });
});

describe('Drainer with borrowing consumers (reused read buffer)', () => {
  /**
   * Consumers that borrow: each copies its buffer at once (the copy is what is checked) and
   * notes which ArrayBuffer it was lent. `keeper` names a channel that does NOT borrow.
   */
  function borrowers(channels: readonly ChannelInfo[], keeper?: ChannelInfo) {
    const copies = new Map<string, Buffer[]>();
    const memory = new Set<ArrayBufferLike>();
    const consumers = new Map<number, ChannelConsumer>();
    for (const info of channels) {
      const key = channelKey(info);
      copies.set(key, []);
      const consumer: ChannelConsumer = {
        onBuffer(b) {
          memory.add(b.buffer);
          copies.get(key)!.push(Buffer.from(b));
        },
        onFinished() {},
      };
      const borrows = keeper === undefined || channelKey(keeper) !== key;
      consumers.set(channelId(info), borrows ? { ...consumer, borrows: true } : consumer);
    }
    const bytesOf = (info: ChannelInfo) => Buffer.concat(copies.get(channelKey(info))!);
    return { consumers, memory, bytesOf };
  }

  /** Counts disk reads through the seam. */
  function countReads(): { readonly n: number } {
    const counter = { n: 0 };
    seam.setFsHook((op) => void (op === 'read' && counter.n++));
    return counter;
  }

  /** ~200 KiB over two channels, many files, segments of an odd size. */
  const manyFills = (): Promise<Awaited<ReturnType<typeof spill>>> =>
    spill(
      Array.from({ length: 40 }, (_, i) => [i % 2 === 0 ? C0 : C1, 4001 + 97 * i]),
      { maxSegmentBytes: 5003, maxSpillFileBytes: 64 * 1024 },
    );

  it('every byte arrives exactly once and in order across fills, file rotations and header straddles (property)', async () => {
    const root = await makeTempRoot();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 1, max: 300 })), {
          minLength: 1,
          maxLength: 12,
        }),
        fc.record({
          maxSegmentBytes: fc.integer({ min: 17, max: 101 }),
          maxSpillFileBytes: fc.integer({ min: 1, max: 400 }),
          bufferBytes: fc.integer({ min: 1, max: 80 }),
          readChunkBytes: fc.integer({ min: 1, max: 70 }),
        }),
        async (appends, limits) => {
          const channels = [C0, C1, C2];
          const { state, taskDir, original } = await spill(
            appends.map(([c, len]) => [channels[c]!, len]),
            { ...limits, channels },
            root,
            `task-${run++}`,
          );
          const b = borrowers(state.channels);
          const drainer = new Drainer(state, b.consumers, limits);
          expect(drainer.reusesBuffers).toBe(true);
          await state.release();
          await drainer.drain();
          for (const c of channels) {
            expect(b.bytesOf(c)).toEqual(original.get(channelKey(c)) ?? Buffer.alloc(0));
          }
          await finish(drainer, state, taskDir);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('readChunkBytes 64, odd segments: headers straddling fills still deliver every byte once, in order', async () => {
    const appends: [ChannelInfo, number][] = [];
    for (let i = 0; i < 60; i++) appends.push([[C0, C1, C2][i % 3]!, 1 + ((i * 37) % 113)]);
    const { state, taskDir, original } = await spill(appends, {
      maxSegmentBytes: 53,
      maxSpillFileBytes: 333,
    });
    const b = borrowers(state.channels);
    const reads = countReads();
    const drainer = new Drainer(state, b.consumers, { bufferBytes: 24, readChunkBytes: 64 });
    await drainer.drain();
    expect(reads.n).toBeGreaterThan(50);
    for (const c of [C0, C1, C2]) expect(b.bytesOf(c)).toEqual(original.get(channelKey(c)));
    // The window's buffer and the read-aheads' (grown at most once), whatever the number of fills.
    expect(b.memory.size).toBeLessThanOrEqual(READS_AHEAD + 2);
    await finish(drainer, state, taskDir);
  });

  it('G8 when every consumer borrows, the drain lends at most READS_AHEAD + 1 distinct ArrayBuffers over many fills', async () => {
    const { state, taskDir, original } = await manyFills();
    const b = borrowers(state.channels);
    const reads = countReads();
    const drainer = new Drainer(state, b.consumers, { bufferBytes: 3000, readChunkBytes: 8192 });
    await drainer.drain();
    expect(reads.n).toBeGreaterThan(20);
    expect(b.memory.size).toBeLessThanOrEqual(READS_AHEAD + 1);
    expect(b.bytesOf(C0)).toEqual(original.get(channelKey(C0)));
    expect(b.bytesOf(C1)).toEqual(original.get(channelKey(C1)));
    await finish(drainer, state, taskDir);
  });

  it('one consumer that does not borrow disables reuse: every fill is fresh memory', async () => {
    const { state, taskDir, original } = await manyFills();
    const b = borrowers(state.channels, C1);
    const reads = countReads();
    const drainer = new Drainer(state, b.consumers, { bufferBytes: 3000, readChunkBytes: 8192 });
    expect(drainer.reusesBuffers).toBe(false);
    await drainer.drain();
    expect(reads.n).toBeGreaterThan(20);
    expect(b.memory.size).toBeGreaterThan(reads.n / 2);
    expect(b.bytesOf(C0)).toEqual(original.get(channelKey(C0)));
    expect(b.bytesOf(C1)).toEqual(original.get(channelKey(C1)));
    await finish(drainer, state, taskDir);
  });

  it('G6 a checkpoint during a borrowing drain: delivered before the barrier + remainder == original; the remainder reader lends fresh buffers', async () => {
    const appends: [ChannelInfo, number][] = [];
    for (let i = 0; i < 30; i++) appends.push([i % 2 === 0 ? C0 : C1, 50 + ((i * 29) % 71)]);
    const { state, taskDir, original } = await spill(appends, {
      maxSegmentBytes: 61,
      maxSpillFileBytes: 500,
    });
    const copies = new Map<string, Buffer[]>([
      ['gate-0-channel-0', []],
      ['gate-0-channel-1', []],
    ]);
    const atBarrier = new Map<string, number>();
    let drainer: Drainer | undefined;
    let remainderReader: SpillReader | undefined;
    let n = 0;
    const consumers = new Map<number, ChannelConsumer>(
      [C0, C1].map((info) => {
        const key = channelKey(info);
        const consumer: ChannelConsumer = {
          borrows: true,
          onBuffer(b) {
            copies.get(key)!.push(Buffer.from(b));
            if (++n === 25) remainderReader = drainer!.snapshotAndInsertBarriers(4);
          },
          onFinished() {},
          onBarrier: () => void atBarrier.set(key, copies.get(key)!.length),
        };
        return [channelId(info), consumer];
      }),
    );
    drainer = new Drainer(state, consumers, { bufferBytes: 20, readChunkBytes: 64 });
    await drainer.drain();
    expect(remainderReader!.reusesBuffers).toBe(false);
    // Keep the remainder's slices uncopied until the end, as the remainder writer may: a reused
    // buffer would have overwritten the earlier ones by then.
    const kept = new Map<string, Buffer[]>();
    try {
      for (
        let s = await remainderReader!.nextSegment();
        s;
        s = await remainderReader!.nextSegment()
      ) {
        const list = kept.get(channelKey(s)) ?? [];
        kept.set(channelKey(s), list);
        for (let b = await s.read(20); b !== null; b = await s.read(20)) list.push(b);
      }
    } finally {
      await remainderReader!.close();
    }
    for (const info of [C0, C1]) {
      const key = channelKey(info);
      const before = Buffer.concat(copies.get(key)!.slice(0, atBarrier.get(key)));
      const after = Buffer.concat(kept.get(key) ?? []);
      expect(Buffer.concat([before, after])).toEqual(original.get(key));
      expect(Buffer.concat(copies.get(key)!)).toEqual(original.get(key));
    }
    await finish(drainer, state, taskDir);
  });

  it('G6 every byte lands exactly once on one side of each barrier, with borrowing consumers (property)', async () => {
    const root = await makeTempRoot();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 1, max: 40 })), {
          minLength: 1,
          maxLength: 10,
        }),
        fc.record({
          maxSegmentBytes: fc.integer({ min: 17, max: 48 }),
          maxSpillFileBytes: fc.integer({ min: 1, max: 120 }),
          bufferBytes: fc.integer({ min: 1, max: 24 }),
          readChunkBytes: fc.integer({ min: 1, max: 64 }),
        }),
        fc.integer({ min: 1, max: 8 }),
        async (s, appends, limits, checkpoints) => {
          await interleave(s, root, `task-${run++}`, appends, limits, checkpoints, true);
        },
      ),
      { numRuns: 30 },
    );
  });

  it('a borrowing consumer returning a promise holds the next fill until it settles; its buffer stays intact meanwhile', async () => {
    const { state, taskDir, original } = await spill([[C0, 640]], { maxSegmentBytes: 1000 });
    const held = deferred();
    const delivered = deferred();
    let first: { lent: Buffer; copy: Buffer } | undefined;
    const copies: Buffer[] = [];
    const consumer: ChannelConsumer = {
      borrows: true,
      onBuffer(b) {
        copies.push(Buffer.from(b));
        if (first !== undefined) return undefined;
        first = { lent: b, copy: Buffer.from(b) };
        delivered.resolve();
        return held.promise;
      },
      onFinished() {},
    };
    const reads = countReads();
    // Chunks of 64 bytes, buffers of 64: every delivery after the first needs a new fill.
    const drainer = new Drainer(state, new Map([[channelId(C0), consumer]]), {
      bufferBytes: 64,
      readChunkBytes: 64,
    });
    const draining = drainer.drain();
    await delivered.promise;
    const readsAtDelivery = reads.n;
    await macrotasks(10);
    expect(reads.n).toBe(readsAtDelivery);
    expect(first!.lent.equals(first!.copy)).toBe(true);
    held.resolve();
    await draining;
    expect(reads.n).toBeGreaterThan(readsAtDelivery);
    // The memory it was lent was reused by a later fill: the wait above was what protected it.
    expect(first!.lent.equals(first!.copy)).toBe(false);
    expect(Buffer.concat(copies)).toEqual(original.get(channelKey(C0)));
    await finish(drainer, state, taskDir);
  });
});

describe('Drainer read size by what its consumers do', () => {
  it('G8 a drain whose consumers keep what they are given reads 1 MiB at a time (a kept slice keeps its whole read), one whose consumers all borrow 2 MiB, and its checkpoint remainder 1 MiB', async () => {
    const MIB = 1024 * 1024;
    const { state, taskDir, original } = await spill([
      [C0, 3 * MIB],
      [C1, 3 * MIB],
    ]);
    // Keeping consumers: every buffer handed on is a slice of a read of at most 1 MiB (and the
    // header's room), whatever the drain keeps in flight.
    const rec = recorder(state.channels);
    const keeping = new Drainer(state, rec.consumers);
    await keeping.drain();
    expect(keeping.reusesBuffers).toBe(false);
    expect(rec.bytesOf(C0)).toEqual(original.get(channelKey(C0)));
    expect(rec.bytesOf(C1)).toEqual(original.get(channelKey(C1)));
    const kept = [...rec.buffers.values()].flat();
    expect(Math.max(...kept.map((b) => b.buffer.byteLength))).toBeLessThanOrEqual(
      MIB + SEGMENT_HEADER_BYTES,
    );
    await keeping.close();
    // Borrowing consumers: the reused buffers are 2 MiB reads (and a delivered piece's room).
    const sizes = new Set<number>();
    const got = new Map<string, Buffer[]>();
    const borrowing = new Map<number, ChannelConsumer>();
    for (const info of state.channels) {
      borrowing.set(channelId(info), {
        borrows: true,
        onBuffer(b) {
          sizes.add(b.buffer.byteLength);
          got.set(channelKey(info), [...(got.get(channelKey(info)) ?? []), Buffer.from(b)]);
        },
        onFinished() {},
      });
    }
    const reusing = new Drainer(state, borrowing);
    expect(reusing.reusesBuffers).toBe(true);
    // A checkpoint's remainder is read by a reader whose slices are kept: 1 MiB reads again.
    const remainder = reusing.snapshotAndInsertBarriers(1);
    const first = (await remainder.nextSegment())!;
    const slice = (await first.read(MIB))!;
    expect(slice.buffer.byteLength).toBeLessThanOrEqual(MIB + SEGMENT_HEADER_BYTES);
    await remainder.close();
    await state.release(); // the hand-off
    await reusing.drain();
    expect(Buffer.concat(got.get(channelKey(C0))!)).toEqual(original.get(channelKey(C0)));
    expect(Math.max(...sizes)).toBeGreaterThan(MIB + 32 * 1024);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(2 * MIB + 32 * 1024);
    await finish(reusing, state, taskDir);
  });
});
