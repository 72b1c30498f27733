import { open, readFile, stat, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AbortedError,
  MisuseError,
  SpillCorruptError,
  SpillEOFError,
} from '../../src/services/errors.ts';
import type { ChannelInfo } from '../../src/services/channel.ts';
import type { FetchedChannelState } from '../../src/services/spill/fetched-state.ts';
import { seam } from '../helpers/fault-seam.ts';
import {
  SpillReader,
  START_POSITION,
  type SpillSegment,
} from '../../src/services/spill/spill-reader.ts';
import { SEGMENT_HEADER_BYTES } from '../../src/services/spill/segment-format.ts';
import { SpillWriter } from '../../src/services/spill/spill-writer.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { exists, macrotasks, pauseOn, settle } from '../helpers/async.ts';
import { expectReadFenced, patternBytes, spill } from '../helpers/spill.ts';

afterEach(() => seam.resetFsSeam());

const C0: ChannelInfo = { gate: 0, channel: 0 };
const C1: ChannelInfo = { gate: 0, channel: 1 };
const MiB = 1024 * 1024;

const bytes = patternBytes;

interface Read {
  channel: number;
  length: number;
  body: Buffer;
}

/** Reads one whole body in reads of at most `max` bytes. */
async function readBody(segment: SpillSegment, max = 1 << 20): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (let b = await segment.read(max); b !== null; b = await segment.read(max)) parts.push(b);
  return Buffer.concat(parts);
}

/** Reads everything left, segment by segment. */
async function readAll(reader: SpillReader, max?: number): Promise<Read[]> {
  const out: Read[] = [];
  for (let s = await reader.nextSegment(); s !== null; s = await reader.nextSegment()) {
    out.push({ channel: s.channel, length: s.length, body: await readBody(s, max) });
  }
  return out;
}

/** Everything a reader yields per channel, concatenated. */
function perChannel(reads: Read[]): Map<number, Buffer> {
  const m = new Map<number, Buffer>();
  for (const r of reads)
    m.set(r.channel, Buffer.concat([m.get(r.channel) ?? Buffer.alloc(0), r.body]));
  return m;
}

/** Releases the hand-off, closes the reader (last grant) and checks the task dir is gone. */
async function finish(state: FetchedChannelState, taskDir: string, ...readers: SpillReader[]) {
  if (!state.isClosed && state.refCount > readers.filter((r) => !r.isClosed).length) {
    await state.release();
  }
  for (const r of readers) await r.close();
  expect(state.refCount).toBe(0);
  expect(await exists(taskDir)).toBe(false);
}

describe('SpillReader (Flink FetchedChannelStateReaderTest)', () => {
  it('testIteratorEmptyWhenNoDataWritten', async () => {
    const { state, taskDir } = await spill([]);
    const reader = SpillReader.open(state);
    expect(await reader.nextSegment()).toBeNull();
    expect(await reader.nextSegment()).toBeNull();
    await finish(state, taskDir, reader);
  });

  it('testMultipleIteratorIteratedInOrder', async () => {
    const a = bytes(5, 1);
    const b = bytes(6, 2);
    const c = bytes(7, 3);
    const { state, taskDir } = await spill([
      [C0, a],
      [C1, b],
      [C0, c],
    ]);
    const reader = SpillReader.open(state, 4); // tiny read chunks: headers straddle them
    const reads = await readAll(reader, 3);
    expect(reads.map((r) => [r.channel, r.length])).toEqual([
      [0, 5],
      [1, 6],
      [0, 7],
    ]);
    expect(reads.map((r) => r.body)).toEqual([a, b, c]);
    await finish(state, taskDir, reader);
  });

  it('testBodyReturnsMinus1AtSegmentEnd: exactly length bytes, then null', async () => {
    const { state, taskDir } = await spill([
      [C0, bytes(10)],
      [C1, bytes(4)],
    ]);
    const reader = SpillReader.open(state);
    const s = (await reader.nextSegment())!;
    expect(s.length).toBe(10);
    expect((await s.read(1000))!.length).toBe(10); // never crosses into the next segment
    expect(s.remaining).toBe(0);
    expect(await s.read(1000)).toBeNull();
    expect(await s.read(1)).toBeNull();
    await finish(state, taskDir, reader);
  });

  it('testCrossFileTransparencyWhenRotationOccurs', async () => {
    const { state, taskDir } = await spill(
      [
        [C0, bytes(9)],
        [C1, bytes(8)],
      ],
      { maxSpillFileBytes: 1 },
    );
    expect(state.files).toHaveLength(2);
    const reader = SpillReader.open(state);
    expect((await readAll(reader)).map((r) => [r.channel, r.body])).toEqual([
      [0, bytes(9)],
      [1, bytes(8)],
    ]);
    await finish(state, taskDir, reader);
  });

  it('testSnapshotCoversAllIteratorWhenNothingConsumed (resume shape 1: the start)', async () => {
    const { state, taskDir } = await spill([
      [C0, bytes(5)],
      [C1, bytes(6)],
    ]);
    const reader = SpillReader.open(state);
    const s = (await reader.nextSegment())!;
    await s.read(3); // read but not committed
    const snapshot = reader.snapshot();
    expect(snapshot.position).toEqual(START_POSITION);
    const resumed = snapshot.reader();
    expect((await readAll(resumed)).map((r) => [r.channel, r.body])).toEqual([
      [0, bytes(5)],
      [1, bytes(6)],
    ]);
    await finish(state, taskDir, reader, resumed);
  });

  it('testSnapshotAfterFullSegmentConsumedSkipsThatSegment (resume shape 2: on a header)', async () => {
    const { state, taskDir } = await spill([
      [C0, bytes(5)],
      [C1, bytes(6)],
    ]);
    const reader = SpillReader.open(state);
    const s = (await reader.nextSegment())!;
    await readBody(s);
    s.commit();
    const snapshot = reader.snapshot();
    expect(snapshot.position).toMatchObject({
      fileIndex: 0,
      offset: SEGMENT_HEADER_BYTES + 5,
      channel: -1,
      remaining: 0,
    });
    const resumed = snapshot.reader();
    expect((await readAll(resumed)).map((r) => [r.channel, r.length, r.body])).toEqual([
      [1, 6, bytes(6)],
    ]);
    await finish(state, taskDir, reader, resumed);
  });

  it('testSnapshotFromMidSegmentStartsAtCommittedByteOffset', async () => {
    const { state, taskDir } = await spill([[C0, bytes(8)]]);
    const reader = SpillReader.open(state);
    const s = (await reader.nextSegment())!;
    await s.read(2);
    s.commit();
    await s.read(2); // uncommitted reads do not move the snapshot
    const mid = reader.snapshot().reader();
    expect((await readAll(mid)).map((r) => r.body)).toEqual([bytes(8).subarray(2)]);
    await readBody(s);
    s.commit();
    const end = reader.snapshot().reader();
    expect(await end.nextSegment()).toBeNull(); // after a full commit the snapshot is empty
    await finish(state, taskDir, reader, mid, end);
  });

  it('testSnapshotAfterPartialCommitReadsRemainingBodyTail (resume shape 3: mid-body)', async () => {
    const { state, taskDir } = await spill([
      [C0, bytes(8)],
      [C1, bytes(3, 4)],
    ]);
    const reader = SpillReader.open(state);
    const s = (await reader.nextSegment())!;
    expect((await s.read(3))!.length).toBe(3);
    s.commit();
    const snapshot = reader.snapshot();
    expect(snapshot.position).toMatchObject({ fileIndex: 0, channel: 0, remaining: 5 });
    const resumed = snapshot.reader();
    const first = (await resumed.nextSegment())!;
    expect([first.channel, first.length]).toEqual([0, 8 - 3]);
    expect(await readBody(first)).toEqual(bytes(8).subarray(3));
    expect((await readAll(resumed)).map((r) => [r.channel, r.body])).toEqual([[1, bytes(3, 4)]]);
    await finish(state, taskDir, reader, resumed);
  });

  it('testSnapshotResumesPartialSegmentAcrossFileBoundary', async () => {
    const { state, taskDir } = await spill(
      [
        [C0, bytes(10)],
        [C1, bytes(7, 2)],
        [C0, bytes(4, 3)],
      ],
      { maxSpillFileBytes: 1 },
    );
    expect(state.files).toHaveLength(3);
    const reader = SpillReader.open(state, 4);
    const s = (await reader.nextSegment())!;
    await s.read(6);
    s.commit();
    const resumed = reader.snapshot().reader();
    expect((await readAll(resumed, 5)).map((r) => [r.channel, r.length, r.body])).toEqual([
      [0, 4, bytes(10).subarray(6)],
      [1, 7, bytes(7, 2)],
      [0, 4, bytes(4, 3)],
    ]);
    await finish(state, taskDir, reader, resumed);
  });

  it('testRootDrainViaRepeatedCommitsTerminatesAndFinalSnapshotEmpty', async () => {
    const { state, taskDir } = await spill(
      [
        [C0, bytes(20)],
        [C1, bytes(9)],
        [C0, bytes(3)],
      ],
      { maxSegmentBytes: 24, maxSpillFileBytes: 30 },
    );
    const reader = SpillReader.open(state, 7);
    let total = 0;
    for (let s = await reader.nextSegment(); s !== null; s = await reader.nextSegment()) {
      for (let b = await s.read(3); b !== null; b = await s.read(3)) {
        total += b.length;
        s.commit();
      }
    }
    expect(total).toBe(32);
    const last = reader.snapshot().reader();
    expect(await last.nextSegment()).toBeNull();
    await finish(state, taskDir, reader, last);
  });

  it('testBodyThrowsEOFExceptionOnTruncatedFile: cut to the 16-byte header', async () => {
    const { state, taskDir } = await spill([[C0, bytes(10)]]);
    await truncate(state.files[0]!, SEGMENT_HEADER_BYTES);
    const reader = SpillReader.open(state);
    const s = (await reader.nextSegment())!;
    expect(s.length).toBe(10);
    await expect(s.read(10)).rejects.toBeInstanceOf(SpillEOFError);
    await finish(state, taskDir, reader);
  });

  it('testReaderAcquiresAndReleasesRefCount', async () => {
    const { state, taskDir } = await spill([[C0, bytes(3)]]);
    const reader = SpillReader.open(state);
    expect(state.refCount).toBe(2);
    await state.release(); // the hand-off
    expect(await exists(taskDir)).toBe(true); // the reader keeps the files alive
    await reader.close();
    await reader.close(); // idempotent: releases once
    expect(state.refCount).toBe(0);
    expect(await exists(taskDir)).toBe(false);
  });

  it('testSnapshotKeepsFilesAliveUntilSnapshotClosed', async () => {
    const { state, taskDir } = await spill([[C0, bytes(3)]]);
    const main = SpillReader.open(state);
    await state.release();
    const snap = main.snapshot().reader();
    await main.close();
    expect(await exists(taskDir)).toBe(true);
    expect((await readAll(snap)).map((r) => r.body)).toEqual([bytes(3)]);
    expect(await exists(taskDir)).toBe(true);
    await snap.close();
    expect(await exists(taskDir)).toBe(false);
  });

  it('testFirstNextSegmentCallDoesNotRequirePreviousBodyConsumed', async () => {
    const { state, taskDir } = await spill([[C0, bytes(3)]]);
    const reader = SpillReader.open(state);
    expect(await reader.nextSegment()).not.toBeNull();
    await finish(state, taskDir, reader);
  });

  it('testNextSegmentThrowsWhenPreviousBodyNotFullyConsumed', async () => {
    const { state, taskDir } = await spill([
      [C0, bytes(6)],
      [C1, bytes(2)],
    ]);
    const reader = SpillReader.open(state);
    const s = (await reader.nextSegment())!;
    await s.read(5);
    await expect(reader.nextSegment()).rejects.toBeInstanceOf(MisuseError);
    await s.read(5);
    expect((await reader.nextSegment())!.channel).toBe(1);
    await finish(state, taskDir, reader);
  });

  it('testEmptyReaderNextSegmentReturnsEmptyAndCloseIsClean', async () => {
    const reader = SpillReader.empty();
    expect(await reader.nextSegment()).toBeNull();
    const snap = reader.snapshot().reader();
    expect(await snap.nextSegment()).toBeNull();
    await reader.close();
    await snap.close();
    expect(seam.fsOpCounts().open).toBe(0);
  });

  it('testEmptyReaderHandsOutIndependentInstancesSoCloseDoesNotLeak', async () => {
    const a = SpillReader.empty();
    const b = SpillReader.empty();
    expect(a).not.toBe(b);
    await a.close();
    expect(b.isClosed).toBe(false);
    expect(await b.nextSegment()).toBeNull();
    await b.close();
  });

  it('testSnapshotCarriesResumeSegmentOnlyWhenBoundaryIsMidBody', async () => {
    const { state, taskDir } = await spill([[C0, bytes(4)]]);
    const reader = SpillReader.open(state);
    const s = (await reader.nextSegment())!;
    await s.read(1);
    s.commit();
    const mid = reader.snapshot();
    expect([mid.position.channel, mid.position.remaining]).toEqual([0, 3]);
    await readBody(s);
    s.commit();
    const onHeader = reader.snapshot();
    expect([onHeader.position.channel, onHeader.position.remaining]).toEqual([-1, 0]);
    await mid.close();
    await onHeader.close();
    await finish(state, taskDir, reader);
  });
});

describe('SpillReader integrity, laziness and fencing (ours)', () => {
  it('detects a CRC mismatch (one flipped body byte) with SpillCorruptError', async () => {
    const { state, taskDir } = await spill([
      [C0, bytes(40)],
      [C1, bytes(5)],
    ]);
    const handle = await open(state.files[0]!, 'r+');
    const at = SEGMENT_HEADER_BYTES + 17;
    const one = Buffer.alloc(1);
    await handle.read(one, 0, 1, at);
    one[0] = one[0]! ^ 0x01;
    await handle.write(one, 0, 1, at);
    await handle.close();
    const reader = SpillReader.open(state, 8);
    const s = (await reader.nextSegment())!;
    await expect(readBody(s, 8)).rejects.toBeInstanceOf(SpillCorruptError);
    await finish(state, taskDir, reader);
  });

  it('a snapshot resumed mid-body still verifies the segment CRC', async () => {
    const { state, taskDir } = await spill([[C0, bytes(30)]]);
    const reader = SpillReader.open(state);
    const s = (await reader.nextSegment())!;
    await s.read(10);
    s.commit();
    const snap = reader.snapshot().reader();
    const file = await readFile(state.files[0]!);
    file[SEGMENT_HEADER_BYTES + 25] ^= 0x80; // after the resume point
    const handle = await open(state.files[0]!, 'r+');
    await handle.write(file, 0, file.length, 0);
    await handle.close();
    const first = (await snap.nextSegment())!;
    expect(first.length).toBe(20);
    await expect(readBody(first)).rejects.toBeInstanceOf(SpillCorruptError);
    await finish(state, taskDir, reader, snap);
  });

  it('a truncated header is a SpillEOFError; an impossible header is a SpillCorruptError', async () => {
    const cut = await spill(
      [
        [C0, bytes(5)],
        [C1, bytes(5)],
      ],
      {},
    );
    await truncate(cut.state.files[0]!, SEGMENT_HEADER_BYTES + 5 + 10);
    const r1 = SpillReader.open(cut.state);
    await readBody((await r1.nextSegment())!);
    await expect(r1.nextSegment()).rejects.toBeInstanceOf(SpillEOFError);
    await finish(cut.state, cut.taskDir, r1);

    const bad = await spill([[C0, bytes(5)]]);
    const handle = await open(bad.state.files[0]!, 'r+');
    const negative = Buffer.alloc(4);
    negative.writeInt32BE(-5);
    await handle.write(negative, 0, 4, 8);
    await handle.close();
    const r2 = SpillReader.open(bad.state);
    await expect(r2.nextSegment()).rejects.toBeInstanceOf(SpillCorruptError);
    await finish(bad.state, bad.taskDir, r2);
  });

  it('opens files lazily, one at a time (open count grows file by file)', async () => {
    const { state, taskDir } = await spill(
      [
        [C0, bytes(5)],
        [C1, bytes(5)],
        [C0, bytes(5)],
      ],
      { maxSpillFileBytes: 1 },
    );
    seam.resetFsSeam();
    const reader = SpillReader.open(state);
    expect(seam.fsOpCounts().open).toBe(0);
    const opens: number[] = [];
    for (let s = await reader.nextSegment(); s !== null; s = await reader.nextSegment()) {
      opens.push(seam.fsOpCounts().open);
      await readBody(s);
      opens.push(seam.fsOpCounts().open);
    }
    expect(opens).toEqual([1, 1, 2, 2, 3, 3]);
    expect(seam.fsOpCounts().close).toBe(2); // the previous file is closed before the next opens
    await finish(state, taskDir, reader);
    expect(seam.fsOpCounts().close).toBe(3);
  });

  it('reads ≥ 1 MiB per disk read, whatever the consumer asks for', async () => {
    const data = bytes(3 * MiB + 12345);
    const { state, taskDir } = await spill([[C0, data]]);
    const size = (await stat(state.files[0]!)).size;
    seam.resetFsSeam();
    const reader = SpillReader.open(state);
    const reads = await readAll(reader, 64 * 1024);
    expect(Buffer.concat(reads.map((r) => r.body)).equals(data)).toBe(true);
    expect(reads.length).toBe(4); // 1 MiB segments, header included
    // 64 KiB reads would be ≥ 49 disk reads; 1 MiB chunks need ~one per MiB (+1 per refill).
    expect(seam.fsOpCounts().read).toBeLessThanOrEqual(Math.ceil(size / MiB) + reads.length);
    await finish(state, taskDir, reader);
  });

  it('G4 forced close fences an in-flight read with AbortedError', async () => {
    const { state, taskDir } = await spill([[C0, bytes(50)]], { maxSpillFileBytes: 1 });
    const reader = SpillReader.open(state, 8);
    const s = (await reader.nextSegment())!;
    const pause = pauseOn('read');
    const reading = settle(readBody(s, 8));
    await pause.reached;
    const closing = state.close();
    await macrotasks();
    await expectReadFenced({ taskDir, release: () => pause.release(), closing, reading, reader });
  });

  it('G4 after a forced close a reader that has not opened its file gets AbortedError, not ENOENT', async () => {
    const { state, taskDir } = await spill(
      [
        [C0, bytes(5)],
        [C1, bytes(5)],
      ],
      { maxSpillFileBytes: 1 },
    );
    const reader = SpillReader.open(state);
    await readBody((await reader.nextSegment())!);
    await state.close();
    expect(await exists(taskDir)).toBe(false);
    await expect(reader.nextSegment()).rejects.toBeInstanceOf(AbortedError);
    expect(() => reader.snapshot()).toThrow(AbortedError);
    expect(() => SpillReader.open(state)).toThrow(AbortedError);
    await reader.close();
  });

  it('G4 closing a reader during a paused read yields AbortedError, not EBADF', async () => {
    const { state, taskDir } = await spill([[C0, bytes(50)]]);
    const reader = SpillReader.open(state, 8);
    const s = (await reader.nextSegment())!;
    await s.read(8); // the file is open now
    const pause = pauseOn('read');
    const reading = settle(readBody(s, 8));
    await pause.reached;
    await reader.close(); // the hand-off still holds the files
    pause.release();
    expect(await reading).toBeInstanceOf(AbortedError);
    await finish(state, taskDir);
  });

  it('a closed reader refuses reads and snapshots', async () => {
    const { state, taskDir } = await spill([[C0, bytes(5)]]);
    const reader = SpillReader.open(state);
    const s = (await reader.nextSegment())!;
    await reader.close();
    await expect(s.read(1)).rejects.toBeInstanceOf(AbortedError);
    await expect(reader.nextSegment()).rejects.toBeInstanceOf(AbortedError);
    expect(() => reader.snapshot()).toThrow(MisuseError);
    await finish(state, taskDir);
  });

  it('a superseded segment can neither be read nor committed', async () => {
    const { state, taskDir } = await spill([
      [C0, bytes(2)],
      [C1, bytes(2)],
    ]);
    const reader = SpillReader.open(state);
    const first = (await reader.nextSegment())!;
    await readBody(first);
    await reader.nextSegment();
    expect(first.remaining).toBe(0);
    await expect(first.read(1)).rejects.toBeInstanceOf(MisuseError);
    expect(() => first.commit()).toThrow(MisuseError);
    await finish(state, taskDir, reader);
  });

  it('S3 a snapshot is one-shot; closing it without a reader returns its grant', async () => {
    const { state, taskDir } = await spill([[C0, bytes(5)]]);
    const reader = SpillReader.open(state);
    const opened = reader.snapshot();
    expect(state.refCount).toBe(3);
    const r = opened.reader();
    expect(() => opened.reader()).toThrow(MisuseError);
    await opened.close(); // no-op: the grant moved to r
    expect(state.refCount).toBe(3);

    const unopened = reader.snapshot();
    expect(state.refCount).toBe(4);
    await unopened.close();
    await unopened.close();
    expect(state.refCount).toBe(3);
    expect(() => unopened.reader()).toThrow(MisuseError);
    await finish(state, taskDir, reader, r);
  });

  it('rejects an inconsistent resume position', () => {
    expect(
      () => new SpillReader(undefined, { ...START_POSITION, channel: 2, remaining: 0 }, 1024),
    ).toThrow(MisuseError);
    expect(() => new SpillReader(undefined, { ...START_POSITION, remaining: 5 }, 1024)).toThrow(
      MisuseError,
    );
  });

  it('G6 any commit point: the snapshot yields exactly the uncommitted suffix per channel', async () => {
    const root = await makeTempRoot();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.tuple(fc.integer({ min: 0, max: 1 }), fc.uint8Array({ minLength: 1, maxLength: 30 })),
          {
            minLength: 1,
            maxLength: 8,
          },
        ),
        fc.integer({ min: 17, max: 40 }),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 20 }),
        fc.nat(),
        async (appends, maxSegmentBytes, maxSpillFileBytes, chunk, cutSeed) => {
          const taskDir = join(root, `task-${run++}`);
          const writer = new SpillWriter({ taskDir, maxSegmentBytes, maxSpillFileBytes });
          const original = new Map<number, Buffer>();
          for (const [ch, b] of appends) {
            await writer.append({ gate: 0, channel: ch }, Buffer.from(b));
            original.set(ch, Buffer.concat([original.get(ch) ?? Buffer.alloc(0), Buffer.from(b)]));
          }
          const state = await writer.close();
          const total = [...original.values()].reduce((n, b) => n + b.length, 0);
          const cut = cutSeed % (total + 1);
          const reader = SpillReader.open(state, chunk);
          const delivered = new Map<number, Buffer>();
          let n = 0;
          outer: for (let s = await reader.nextSegment(); s; s = await reader.nextSegment()) {
            for (;;) {
              if (n >= cut) break outer;
              const b = await s.read(Math.min(chunk, cut - n));
              if (b === null) break;
              delivered.set(
                s.channel,
                Buffer.concat([delivered.get(s.channel) ?? Buffer.alloc(0), b]),
              );
              n += b.length;
              s.commit();
            }
          }
          const snap = reader.snapshot().reader();
          const rest = perChannel(await readAll(snap, chunk));
          for (const [ch, all] of original) {
            const got = Buffer.concat([
              delivered.get(ch) ?? Buffer.alloc(0),
              rest.get(ch) ?? Buffer.alloc(0),
            ]);
            expect(got.equals(all)).toBe(true);
          }
          await finish(state, taskDir, reader, snap);
        },
      ),
      { numRuns: 40 },
    );
  });
});
