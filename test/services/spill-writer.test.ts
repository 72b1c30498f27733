import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { AbortedError } from '../../src/services/errors.ts';
import type { ChannelInfo } from '../../src/services/channel.ts';
import { seam } from '../helpers/fault-seam.ts';
import { SEGMENT_HEADER_BYTES } from '../../src/services/spill/segment-format.ts';
import { SpillWriter } from '../../src/services/spill/spill-writer.ts';
import { ioBuffers } from '../../src/services/buffer-pool.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { deferred, exists, macrotasks, pauseOn, settle, until } from '../helpers/async.ts';

afterEach(() => seam.resetFsSeam());

const C0: ChannelInfo = { gate: 0, channel: 0 };
const C1: ChannelInfo = { gate: 0, channel: 1 };
const C2: ChannelInfo = { gate: 1, channel: 0 };

interface ParsedSegment {
  gate: number;
  channel: number;
  length: number;
  crc: number;
  body: Buffer;
}

/** Parses a spill file by the DESIGN §3 format; fails on any trailing or missing byte. */
function parseSegments(bytes: Buffer): ParsedSegment[] {
  const out: ParsedSegment[] = [];
  let off = 0;
  while (off < bytes.length) {
    expect(bytes.length - off).toBeGreaterThanOrEqual(SEGMENT_HEADER_BYTES);
    const length = bytes.readInt32BE(off + 8);
    const body = bytes.subarray(off + SEGMENT_HEADER_BYTES, off + SEGMENT_HEADER_BYTES + length);
    expect(body.length).toBe(length);
    out.push({
      gate: bytes.readInt32BE(off),
      channel: bytes.readInt32BE(off + 4),
      length,
      crc: bytes.readUInt32BE(off + 12),
      body,
    });
    off += SEGMENT_HEADER_BYTES + length;
  }
  return out;
}

async function segmentsOf(files: readonly string[]): Promise<ParsedSegment[][]> {
  return Promise.all(files.map(async (f) => parseSegments(await readFile(f))));
}

function bytes(n: number, seed = 1): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (seed * 31 + i * 7) & 0xff;
  return b;
}

/** A framed record as the filtering handler writes it: int32 BE length, then the bytes. */
function record(payload: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeInt32BE(payload.length);
  return Buffer.concat([len, payload]);
}

async function newWriter(options: {
  maxSegmentBytes?: number;
  maxSpillFileBytes?: number;
  onFirstAcquire?: (w: SpillWriter) => void;
}): Promise<{ writer: SpillWriter; taskDir: string; root: string }> {
  const root = await makeTempRoot();
  const taskDir = join(root, 'task-1-abcd');
  return { writer: new SpillWriter({ taskDir, ...options }), taskDir, root };
}

describe('SpillWriter (Flink AbstractSpillingHandlerTest)', () => {
  it('testChannelSwitchProducesTwoSegmentsInOneFile', async () => {
    const { writer, taskDir } = await newWriter({});
    await writer.append(C0, bytes(10));
    await writer.append(C1, bytes(7, 2));
    const state = await writer.close();
    expect(state.files).toEqual([join(taskDir, 'spill-segment-0.bin')]);
    expect((await stat(state.files[0]!)).size).toBe(2 * SEGMENT_HEADER_BYTES + 10 + 7);
    const [segs] = await segmentsOf(state.files);
    expect(segs!.map((s) => [s.gate, s.channel, s.length])).toEqual([
      [0, 0, 10],
      [0, 1, 7],
    ]);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('testSameChannelContinuousRecordsMergeIntoOneSegment', async () => {
    const { writer, taskDir } = await newWriter({});
    const records = [record(bytes(3)), record(bytes(5, 2)), record(bytes(1, 3))];
    for (const r of records) await writer.append(C2, r);
    const state = await writer.close();
    const [segs] = await segmentsOf(state.files);
    expect(segs).toHaveLength(1);
    expect(segs![0]!.body).toEqual(Buffer.concat(records));
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('testPassThroughBytesAreWrittenVerbatim', async () => {
    const { writer, taskDir } = await newWriter({});
    const raw = bytes(100, 9); // cut mid-record: the writer never parses bodies
    await writer.append(C0, raw.subarray(0, 33));
    await writer.append(C0, raw.subarray(33));
    const state = await writer.close();
    const file = await readFile(state.files[0]!);
    expect(file.length).toBe(SEGMENT_HEADER_BYTES + raw.length);
    expect(file.subarray(SEGMENT_HEADER_BYTES)).toEqual(raw);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('testOpenSegmentWithoutBodyProducesNoFile: no file and no task dir, channel still known', async () => {
    const { writer, taskDir, root } = await newWriter({});
    await writer.append(C1, Buffer.alloc(0));
    const state = await writer.close();
    expect(state.files).toEqual([]);
    expect(state.taskDir).toBeUndefined();
    expect(state.channels).toEqual([C1]);
    expect(seam.fsOpCounts().mkdir + seam.fsOpCounts().open).toBe(0);
    expect(await readdir(root)).toEqual([]);
    expect(state.refCount).toBe(1); // the hand-off grant
    await state.release();
    expect(state.isClosed).toBe(true);
    expect(await exists(taskDir)).toBe(false);
  });

  it('testEmptySegmentsAroundANonEmptyOneProduceExactlyTheNonEmptyFile', async () => {
    const { writer, taskDir } = await newWriter({});
    await writer.append(C0, Buffer.alloc(0));
    await writer.append(C1, bytes(12));
    await writer.append(C2, Buffer.alloc(0));
    const state = await writer.close();
    expect(state.files).toHaveLength(1);
    const [segs] = await segmentsOf(state.files);
    expect(segs!.map((s) => [s.gate, s.channel, s.length])).toEqual([[0, 1, 12]]);
    expect(state.channels).toEqual([C0, C1, C2]);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('testRotationProducesOneFilePerSegmentWhenBoundIsTiny', async () => {
    const { writer, taskDir } = await newWriter({ maxSpillFileBytes: 1 });
    await writer.append(C0, bytes(5));
    await writer.append(C1, bytes(6));
    await writer.append(C0, bytes(7));
    const state = await writer.close();
    expect(state.files).toEqual([0, 1, 2].map((n) => join(taskDir, `spill-segment-${n}.bin`)));
    const perFile = await segmentsOf(state.files);
    expect(perFile.map((segs) => segs.map((s) => [s.channel, s.length]))).toEqual([
      [[0, 5]],
      [[1, 6]],
      [[0, 7]],
    ]);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('testDiskFormatMatchesSpec: 16-byte header (gate, channel, length, crc32), then the body', async () => {
    const { writer, taskDir } = await newWriter({});
    const body = record(Buffer.from([0xab, 0xcd, 0xef]));
    await writer.append({ gate: 7, channel: 3 }, body);
    const state = await writer.close();
    const file = await readFile(state.files[0]!);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    expect(file.toString('hex')).toBe(
      '00000007' + '00000003' + '00000007' + crc.toString('hex') + '00000003' + 'abcdef',
    );
    expect(file.length).toBe(SEGMENT_HEADER_BYTES + 7); // and nothing after it (EOF)
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('testSameChannelIsSplitIntoSegmentsWhenSizeBoundIsExceeded: header + body never exceed the bound', async () => {
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: SEGMENT_HEADER_BYTES + 8 });
    const data = bytes(20);
    await writer.append(C0, data.subarray(0, 3));
    await writer.append(C0, data.subarray(3, 11));
    await writer.append(C0, data.subarray(11));
    const state = await writer.close();
    const [segs] = await segmentsOf(state.files);
    expect(segs!.map((s) => s.length)).toEqual([8, 8, 4]);
    expect(Buffer.concat(segs!.map((s) => s.body))).toEqual(data);
    for (const s of segs!) {
      expect(SEGMENT_HEADER_BYTES + s.length).toBeLessThanOrEqual(SEGMENT_HEADER_BYTES + 8);
    }
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });
});

describe('SpillWriter format and layout', () => {
  it('every segment carries the CRC-32 of its own body', async () => {
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: 40 });
    await writer.append(C0, bytes(100));
    await writer.append(C1, bytes(30, 5));
    const state = await writer.close();
    const segs = (await segmentsOf(state.files)).flat();
    expect(segs.length).toBeGreaterThan(3);
    for (const s of segs) expect(s.crc).toBe(crc32(s.body));
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('a segment of pieces with and without a known CRC (hashed at the seal) carries the CRC-32 of its whole body', async () => {
    // A filtering spill appends kept records without a CRC (hashed later, in one pass over the
    // segment's body); a verbatim append hands the reader's. Mixed in one segment, split
    // across segments, and a known-CRC piece first: every segment's CRC is its body's.
    const { writer } = await newWriter({ maxSegmentBytes: 64 });
    const known = (info: ChannelInfo, b: Buffer) => writer.append(info, b, crc32(b));
    await writer.append(C0, bytes(10, 1));
    await known(C0, bytes(7, 2));
    await writer.append(C0, bytes(12, 3));
    await writer.append(C0, bytes(50, 4)); // crosses into the next segment
    await known(C0, bytes(30, 5)); // crosses too: its CRC is split
    await writer.append(C1, bytes(5, 6));
    await known(C1, bytes(9, 7));
    const state = await writer.close();
    const segs = (await segmentsOf(state.files)).flat();
    expect(segs.length).toBeGreaterThan(3);
    for (const s of segs) expect(s.crc).toBe(crc32(s.body));
    const c0 = Buffer.concat(segs.filter((s) => s.channel === 0).map((s) => s.body));
    expect(c0).toEqual(
      Buffer.concat([bytes(10, 1), bytes(7, 2), bytes(12, 3), bytes(50, 4), bytes(30, 5)]),
    );
    const c1 = Buffer.concat(segs.filter((s) => s.channel === 1).map((s) => s.body));
    expect(c1).toEqual(Buffer.concat([bytes(5, 6), bytes(9, 7)]));
    await state.release();
  });

  it('rotates between segments once the file holds ≥ maxSpillFileBytes (soft bound, never split)', async () => {
    // Segments of 16 + 10 = 26 bytes; bound 40: the first file takes two (52 > 40), never three.
    const { writer, taskDir } = await newWriter({ maxSpillFileBytes: 40 });
    for (const c of [C0, C1, C0, C1, C0]) await writer.append(c, bytes(10, c.channel));
    const state = await writer.close();
    const sizes = await Promise.all(state.files.map(async (f) => (await stat(f)).size));
    expect(sizes).toEqual([52, 52, 26]);
    for (const segs of await segmentsOf(state.files)) expect(segs.length).toBeGreaterThan(0);
    expect(writer.spilledBytes).toBe(52 + 52 + 26);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('never writes an empty file, whatever the bounds', async () => {
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: 17, maxSpillFileBytes: 1 });
    await writer.append(C0, bytes(3));
    await writer.append(C1, Buffer.alloc(0));
    await writer.append(C0, Buffer.alloc(0));
    await writer.append(C2, bytes(1));
    const state = await writer.close();
    expect(state.files).toHaveLength(4);
    for (const f of state.files) expect((await stat(f)).size).toBe(SEGMENT_HEADER_BYTES + 1);
    expect(await readdir(taskDir)).toHaveLength(4);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('G3 the task dir is created lazily with mode 0700, files with 0600', async () => {
    const { writer, taskDir } = await newWriter({});
    await writer.append(C0, bytes(10)); // still in memory: one open segment
    expect(await exists(taskDir)).toBe(false);
    const state = await writer.close();
    expect((await stat(taskDir)).mode & 0o777).toBe(0o700);
    expect((await stat(state.files[0]!)).mode & 0o777).toBe(0o600);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('G2 onFirstAcquire fires once, synchronously, before the task dir exists', async () => {
    const seen: boolean[] = [];
    const root = await makeTempRoot();
    const taskDir = join(root, 'task-2-beef');
    let mkdirsAtHook = -1;
    const writer = new SpillWriter({
      taskDir,
      maxSpillFileBytes: 1,
      onFirstAcquire: (w) => {
        expect(w).toBe(writer);
        mkdirsAtHook = seam.fsOpCounts().mkdir;
        seen.push(true);
      },
    });
    await writer.append(C0, bytes(4));
    await writer.append(C1, bytes(4));
    await writer.append(C0, bytes(4));
    const state = await writer.close();
    expect(seen).toEqual([true]);
    expect(mkdirsAtHook).toBe(0);
    expect(state.files).toHaveLength(3);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('G9 an existing task dir is never adopted: mkdir is exclusive and discard leaves it alone', async () => {
    const { writer, taskDir } = await newWriter({});
    await mkdir(taskDir, { mode: 0o700 });
    await writeFile(join(taskDir, 'someone-else.bin'), 'x');
    await writer.append(C0, bytes(5));
    const closed = await settle(writer.close());
    expect((closed as NodeJS.ErrnoException).code).toBe('EEXIST');
    await writer.discardSpilledFiles();
    expect(await readdir(taskDir)).toEqual(['someone-else.bin']);
  });

  it('append and close after close are refused', async () => {
    const { writer, taskDir } = await newWriter({});
    await writer.append(C0, bytes(3));
    const state = await writer.close();
    await expect(writer.append(C0, bytes(1))).rejects.toBeInstanceOf(AbortedError);
    await expect(writer.close()).rejects.toBeInstanceOf(AbortedError);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('rejects bounds that cannot hold a header and a body byte', () => {
    expect(() => new SpillWriter({ taskDir: '/nonexistent/x', maxSegmentBytes: 16 })).toThrow(
      RangeError,
    );
    expect(() => new SpillWriter({ taskDir: '/nonexistent/x', maxSpillFileBytes: 0 })).toThrow(
      RangeError,
    );
  });
});

describe('SpillWriter abort flag (G3) and discard (F2, F3)', () => {
  it('G3 abort before the first file creates no task dir', async () => {
    const { writer, taskDir, root } = await newWriter({ maxSegmentBytes: 20 });
    await writer.append(C0, bytes(4)); // fills one segment in memory, nothing on disk yet
    writer.abort();
    expect(writer.isAborted).toBe(true);
    await expect(writer.append(C0, bytes(10))).rejects.toBeInstanceOf(AbortedError);
    await expect(writer.close()).rejects.toBeInstanceOf(AbortedError);
    expect(seam.fsOpCounts().mkdir).toBe(0);
    expect(await exists(taskDir)).toBe(false);
    await writer.discardSpilledFiles();
    expect(await readdir(root)).toEqual([]);
  });

  it('G3 abort from onFirstAcquire (the owner decided first) creates no task dir', async () => {
    const { writer, taskDir } = await newWriter({
      maxSegmentBytes: 20,
      onFirstAcquire: (w) => w.abort(),
    });
    await expect(writer.append(C0, bytes(10))).rejects.toBeInstanceOf(AbortedError);
    expect(seam.fsOpCounts().mkdir).toBe(0);
    expect(await exists(taskDir)).toBe(false);
  });

  it('G3 a task dir creation that loses the race with abort removes the dir itself', async () => {
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: 20 });
    const pause = pauseOn('mkdir');
    const appending = settle(Promise.resolve(writer.append(C0, bytes(10))));
    await pause.reached;
    writer.abort();
    pause.release();
    expect(await appending).toBeInstanceOf(AbortedError);
    expect(await exists(taskDir)).toBe(false);
    expect(seam.fsOpCounts().open).toBe(0);
  });

  it('G3 a file creation that loses the race with abort deletes its own file', async () => {
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: 20, maxSpillFileBytes: 1 });
    await writer.append(C0, bytes(8)); // seals segment 0 → spill-segment-0.bin
    const pause = pauseOn('open', 'spill-segment-1.bin');
    const appending = settle(Promise.resolve(writer.append(C1, bytes(8)))); // rotation: creates file 1
    await pause.reached;
    writer.abort();
    pause.release();
    expect(await appending).toBeInstanceOf(AbortedError);
    expect(await readdir(taskDir)).toEqual(['spill-segment-0.bin']);
    // No further file appears, whatever the writer is asked to do.
    await expect(writer.append(C2, bytes(40))).rejects.toBeInstanceOf(AbortedError);
    await expect(writer.close()).rejects.toBeInstanceOf(AbortedError);
    expect(await readdir(taskDir)).toEqual(['spill-segment-0.bin']);
    await writer.discardSpilledFiles();
    expect(await exists(taskDir)).toBe(false);
  });

  it('G3 a write that loses the race with abort deletes its own file', async () => {
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: 32 });
    const pause = pauseOn('write');
    // 40 bytes with a 16-byte body bound: the second loop seals segment 0 and writes it.
    const appending = settle(Promise.resolve(writer.append(C0, bytes(40))));
    await pause.reached;
    writer.abort();
    pause.release();
    const error = await appending;
    expect(error).toBeInstanceOf(AbortedError);
    expect(await readdir(taskDir)).toEqual([]);
    const opensBefore = seam.fsOpCounts().open;
    await expect(writer.append(C0, bytes(40))).rejects.toBeInstanceOf(AbortedError);
    expect(seam.fsOpCounts().open).toBe(opensBefore);
    expect(await readdir(taskDir)).toEqual([]);
    await writer.discardSpilledFiles();
    expect(await exists(taskDir)).toBe(false);
  });

  it('G3 discardSpilledFiles waits for a paused write, then removes the task dir', async () => {
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: 32 });
    await writer.append(C0, bytes(16));
    const pause = pauseOn('write');
    const closing = settle(writer.close());
    await pause.reached;
    const discarding = writer.discardSpilledFiles();
    const joined = writer.discardSpilledFiles(); // joins the running discard
    await macrotasks();
    expect(await exists(join(taskDir, 'spill-segment-0.bin'))).toBe(true); // not under the write
    pause.release();
    await Promise.all([discarding, joined]);
    expect(await closing).toBeInstanceOf(AbortedError);
    expect(await exists(taskDir)).toBe(false);
  });

  it('G3 the segment buffers go back to the pool only once the write in flight settled', async () => {
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: 32 });
    await writer.append(C0, bytes(16));
    const pause = pauseOn('write');
    const closing = settle(writer.close());
    await pause.reached;
    const kept = ioBuffers.keptBytes;
    const discarding = writer.discardSpilledFiles();
    await macrotasks();
    // The paused write has yet to read one of them: another writer must not get it.
    expect(ioBuffers.keptBytes).toBe(kept);
    pause.release();
    await discarding;
    expect(await closing).toBeInstanceOf(AbortedError);
    expect(ioBuffers.keptBytes).toBe(kept + 2 * 2 * 32);
    expect(await exists(taskDir)).toBe(false);
  });

  it('a writer after another one that closed spills its own bytes into the kept buffers', async () => {
    const first = await newWriter({ maxSegmentBytes: 32 });
    await first.writer.append(C0, bytes(40, 1));
    const firstState = await first.writer.close();
    const second = await newWriter({ maxSegmentBytes: 32 });
    await second.writer.append(C1, bytes(40, 2));
    const secondState = await second.writer.close();
    const bodies = async (files: readonly string[]) =>
      Buffer.concat((await segmentsOf(files)).flat().map((s) => s.body));
    expect(await bodies(firstState.files)).toEqual(bytes(40, 1));
    expect(await bodies(secondState.files)).toEqual(bytes(40, 2));
    await firstState.release();
    await secondState.release();
  });

  it('G3 discardSpilledFiles during a paused task-dir creation still removes the dir', async () => {
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: 20 });
    const pause = pauseOn('mkdir');
    const appending = settle(Promise.resolve(writer.append(C0, bytes(10))));
    await pause.reached;
    const discarding = writer.discardSpilledFiles();
    pause.release();
    await discarding;
    expect(await appending).toBeInstanceOf(AbortedError);
    expect(await exists(taskDir)).toBe(false);
    expect(seam.fsOpCounts().open).toBe(0);
  });

  it('C1 a failed discard is not final: the next discardSpilledFiles retries the delete', async () => {
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: 20, maxSpillFileBytes: 1 });
    await writer.append(C0, bytes(4));
    // The rotation waits for file 0's write and closes it: no write is in flight whose
    // abort-time cleanup could take the injected rm fault.
    await writer.append(C1, bytes(4));
    seam.injectFault({ op: 'rm', code: 'EIO' });
    const error = await settle(writer.discardSpilledFiles());
    expect((error as NodeJS.ErrnoException).code).toBe('EIO');
    expect(await exists(taskDir)).toBe(true);
    await writer.discardSpilledFiles();
    expect(await exists(taskDir)).toBe(false);
  });

  it('F3 discardSpilledFiles works after close() failed before the state was built', async () => {
    const { writer, taskDir } = await newWriter({});
    await writer.append(C0, bytes(10));
    await writer.append(C1, bytes(10));
    seam.injectFault({ op: 'close', code: 'EIO', pathIncludes: 'spill-segment-0.bin' });
    const error = await settle(writer.close());
    expect((error as NodeJS.ErrnoException).code).toBe('EIO');
    expect(await readdir(taskDir)).toEqual(['spill-segment-0.bin']); // flushed, then close failed
    await writer.discardSpilledFiles();
    expect(await exists(taskDir)).toBe(false);
  });

  it('F2 discardSpilledFiles after a failed write (ENOSPC) removes the task dir', async () => {
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: 20, maxSpillFileBytes: 1 });
    await writer.append(C0, bytes(4));
    await writer.append(C1, bytes(4)); // file 0 written
    seam.injectFault({ op: 'write', code: 'ENOSPC' });
    const error = await settle(Promise.resolve(writer.append(C0, bytes(4)))); // file 1's write fails
    expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
    expect((await readdir(taskDir)).sort()).toEqual(['spill-segment-0.bin', 'spill-segment-1.bin']);
    await writer.discardSpilledFiles();
    expect(await exists(taskDir)).toBe(false);
  });

  it('discardSpilledFiles works in every state: fresh, writing, and after a successful close', async () => {
    const fresh = await newWriter({});
    await fresh.writer.discardSpilledFiles();
    expect(await exists(fresh.taskDir)).toBe(false);
    await expect(fresh.writer.append(C0, bytes(1))).rejects.toBeInstanceOf(AbortedError);

    const writing = await newWriter({ maxSegmentBytes: 20 });
    await writing.writer.append(C0, bytes(10));
    expect(await exists(writing.taskDir)).toBe(true);
    await writing.writer.discardSpilledFiles();
    expect(await exists(writing.taskDir)).toBe(false);

    const closed = await newWriter({});
    await closed.writer.append(C0, bytes(10));
    const state = await closed.writer.close();
    await closed.writer.discardSpilledFiles();
    expect(await exists(closed.taskDir)).toBe(false);
    await state.close(); // the state's own cleanup is harmless afterwards
    expect(state.isClosed).toBe(true);
  });
});

describe('SpillWriter write-behind (one write in flight, two buffers)', () => {
  it('append returns while its write is in flight; the next write waits for it and neither buffer is overwritten', async () => {
    // 16-byte bodies: each 16-byte append fills one segment, the next append seals and writes it.
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: 32 });
    const data = [bytes(16, 1), bytes(16, 2), bytes(16, 3)];
    await writer.append(C0, data[0]!);
    // Counted as requested (the seam counts a write only once its hook has returned).
    let writesRequested = 0;
    const reached = deferred();
    const gate = deferred();
    seam.setFsHook(async (op) => {
      if (op === 'write' && ++writesRequested === 1) {
        reached.resolve();
        await gate.promise;
      }
    });
    let secondDone = false;
    const second = Promise.resolve(writer.append(C1, data[1]!)).then(() => (secondDone = true));
    await reached.promise; // after the task dir and file 0 were created
    await macrotasks();
    expect(writesRequested).toBe(1);
    expect(secondDone).toBe(true); // returned with segment 0's write still paused
    let thirdDone = false;
    const third = Promise.resolve(writer.append(C2, data[2]!)).then(() => (thirdDone = true));
    await macrotasks();
    expect(thirdDone).toBe(false); // sealing segment 1 waits for segment 0's write
    expect(writesRequested).toBe(1);
    gate.resolve();
    await Promise.all([second, third]);
    const state = await writer.close();
    const [segs] = await segmentsOf(state.files);
    expect(segs!.map((s) => [s.gate, s.channel])).toEqual([
      [C0.gate, C0.channel],
      [C1.gate, C1.channel],
      [C2.gate, C2.channel],
    ]);
    expect(segs!.map((s) => s.body)).toEqual(data);
    for (const s of segs!) expect(s.crc).toBe(crc32(s.body));
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('G5 a failed write behind append is reported to onWriteFailure first, then every later append and close rethrow that same error', async () => {
    const order: string[] = [];
    const reported: unknown[] = [];
    const root = await makeTempRoot();
    const taskDir = join(root, 'task-3-cafe');
    const writer = new SpillWriter({
      taskDir,
      maxSegmentBytes: 20,
      onWriteFailure: (e) => {
        order.push('reported');
        reported.push(e);
      },
    });
    seam.injectFault({ op: 'write', code: 'ENOSPC' });
    await writer.append(C0, bytes(4));
    const results: unknown[] = [];
    for (const c of [C1, C0, C1])
      results.push(await settle(Promise.resolve(writer.append(c, bytes(4, 9)))));
    results.push(await settle(writer.close()));
    order.push('rejected');
    expect(reported).toHaveLength(1);
    const injected = reported[0] as NodeJS.ErrnoException;
    expect(injected.code).toBe('ENOSPC');
    expect(injected.message).toContain('(injected)');
    expect(order).toEqual(['reported', 'rejected']);
    // The append that issued the write may return before it fails; from the next one on,
    // every call rethrows exactly the injected error.
    const firstFailure = results.findIndex((r) => r !== 'ok');
    expect(firstFailure).toBeGreaterThanOrEqual(0);
    expect(firstFailure).toBeLessThanOrEqual(1);
    for (const r of results.slice(firstFailure)) expect(r).toBe(injected);
    expect(seam.fsOpCounts().write).toBe(1); // nothing is written after the failure
    await writer.discardSpilledFiles();
    expect(await exists(taskDir)).toBe(false);
  });

  it('close waits for the write in flight before it closes the file', async () => {
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: 32 });
    await writer.append(C0, bytes(16));
    const pause = pauseOn('write');
    const closing = writer.close();
    await pause.reached;
    await macrotasks();
    expect(seam.fsOpCounts().close).toBe(0);
    pause.release();
    const state = await closing;
    expect((await readFile(state.files[0]!)).length).toBe(32);
    expect(writer.spilledBytes).toBe(32);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  /** Aborts a writer while segment 0's write is paused in flight; `gate` lets it land. */
  async function abortWithWriteInFlight() {
    const { writer, taskDir } = await newWriter({ maxSegmentBytes: 32 });
    await writer.append(C0, bytes(16));
    const rms: string[] = [];
    const gate = deferred();
    let paused = false;
    seam.setFsHook(async (op, path) => {
      if (op === 'rm') rms.push(path);
      if (op === 'write' && !paused) {
        paused = true;
        await gate.promise;
      }
    });
    await writer.append(C0, bytes(16, 2)); // seals and issues segment 0's write, which waits
    expect(paused).toBe(true);
    writer.abort();
    await expect(writer.append(C0, bytes(40))).rejects.toBeInstanceOf(AbortedError);
    await expect(writer.close()).rejects.toBeInstanceOf(AbortedError);
    const file0 = join(taskDir, 'spill-segment-0.bin');
    return { writer, taskDir, rms, gate, file0 };
  }

  it('G3 discard while a write runs behind: no further write is issued, and once the write lands the dir goes in one delete', async () => {
    const { writer, taskDir, rms, gate, file0 } = await abortWithWriteInFlight();
    const discarding = writer.discardSpilledFiles();
    await macrotasks();
    expect(rms).toEqual([]); // discard waits for the write in flight
    gate.resolve();
    await discarding;
    // The landed file goes with the dir: no extra delete between the cancel and the dir gone.
    expect(rms).toEqual([taskDir]);
    expect(seam.fsOpCounts().write).toBe(1);
    expect(seam.fsOpCounts().open).toBe(1);
    expect(await exists(taskDir)).toBe(false);
  });

  it('G3 abort while a write runs behind, with nobody discarding: the writer deletes the landed file itself', async () => {
    const { writer, taskDir, rms, gate, file0 } = await abortWithWriteInFlight();
    gate.resolve();
    await until(() => rms.length > 0, 'the writer deletes the landed file'); // write lands, writer acts
    expect(rms).toEqual([file0]); // its own delete started before anyone asked for a discard
    expect(seam.fsOpCounts().write).toBe(1);
    await writer.discardSpilledFiles(); // waits for that delete, then removes the dir
    expect(rms).toEqual([file0, taskDir]);
    expect(await exists(taskDir)).toBe(false);
  });
});
