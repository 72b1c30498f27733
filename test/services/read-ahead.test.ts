/**
 * The drain's read-ahead (src/services/spill/read-ahead.ts): the next chunk's read is in
 * flight while the current one is verified and delivered, nothing is read twice, and the G4
 * fencing holds with a read running ahead.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ChannelInfo } from '../../src/services/channel.ts';
import { AbortedError } from '../../src/services/errors.ts';
import { seam } from '../helpers/fault-seam.ts';
import { SEGMENT_HEADER_BYTES } from '../../src/services/spill/segment-format.ts';
import { SpillReader } from '../../src/services/spill/spill-reader.ts';
import { READS_AHEAD } from '../../src/services/spill/read-ahead.ts';
import { exists, macrotasks, pauseOn, settle, withHangGuard } from '../helpers/async.ts';
import { expectReadFenced, patternBytes, spill } from '../helpers/spill.ts';

afterEach(() => seam.resetFsSeam());

const C0: ChannelInfo = { gate: 0, channel: 0 };
const C1: ChannelInfo = { gate: 0, channel: 1 };
const CHUNK = 16;

/** Pauses the `n`-th read of the seam (1-based). */
function pauseOnRead(n: number) {
  let reads = 0;
  return pauseOn((op) => op === 'read' && ++reads === n);
}

describe('drain read-ahead', () => {
  it('the next chunks are read while the current one is delivered, and no byte is read twice', async () => {
    const body = patternBytes(64);
    const { state } = await spill([[C0, body]]);
    const reader = SpillReader.open(state, CHUNK);
    const segment = (await reader.nextSegment())!;
    // The header's read and the ones behind it, issued before anyone asked.
    expect(READS_AHEAD).toBeGreaterThanOrEqual(2);
    expect(seam.fsOpCounts().read).toBe(1 + READS_AHEAD);
    const parts: Buffer[] = [];
    for (let b = await segment.read(8); b !== null; b = await segment.read(8)) parts.push(b);
    expect(Buffer.concat(parts)).toEqual(body);
    // 80 bytes in 16-byte reads: exactly five, the last ones issued ahead of the caller.
    expect(seam.fsOpCounts().read).toBe((SEGMENT_HEADER_BYTES + body.length) / CHUNK);
    await reader.close();
    await state.release();
  });

  it('with reused buffers a segment straddling a read is still one slice, and no byte is read twice', async () => {
    const appends: [ChannelInfo, Buffer][] = [];
    for (let i = 0; i < 12; i++) appends.push([i % 2 === 0 ? C0 : C1, patternBytes(10, i)]);
    // One segment per append (the channel alternates): 26 bytes each, straddling 16-byte reads.
    const { state } = await spill(appends);
    const reader = SpillReader.open(state, CHUNK, { reuseBuffers: true });
    for (const [info, expected] of appends) {
      const segment = (await reader.nextSegment())!;
      expect(segment.channel).toBe(info.channel);
      const got = await segment.read(1024);
      expect(got).toEqual(expected); // one read, one slice, the whole body
      expect(await segment.read(1024)).toBeNull();
    }
    expect(await reader.nextSegment()).toBeNull();
    expect(seam.fsOpCounts().read).toBe(Math.ceil((12 * 26) / CHUNK));
    await reader.close();
    await state.release();
  });

  it('G8 with reused buffers each keeps room for the largest piece asked for, not a whole read: pieces straddling reads still arrive whole, no byte is read twice, and a longer piece gets a read of its own', async () => {
    const chunk = 64;
    const piece = 24;
    const appends: [ChannelInfo, Buffer][] = [];
    for (let i = 0; i < 12; i++) appends.push([i % 2 === 0 ? C0 : C1, patternBytes(30 + 7 * i, i)]);
    // One segment per append, of 46–123 bytes: headers and pieces straddle the 64-byte reads at
    // every offset, so some pieces carry up to 23 bytes across one.
    const { state } = await spill(appends);
    const total = appends.reduce((n, [, body]) => n + SEGMENT_HEADER_BYTES + body.length, 0);
    const reader = SpillReader.open(state, chunk, { reuseBuffers: true, maxPieceBytes: piece });
    for (const [, expected] of appends) {
      const segment = (await reader.nextSegment())!;
      const parts: Buffer[] = [];
      for (let b = await segment.read(piece); b !== null; b = await segment.read(piece)) {
        // A slice of a read buffer: a read plus the room for one piece, not two reads' worth.
        expect(b.buffer.byteLength).toBeLessThanOrEqual(chunk + piece);
        parts.push(Buffer.from(b)); // valid until the next read only
      }
      expect(Buffer.concat(parts)).toEqual(expected);
    }
    expect(await reader.nextSegment()).toBeNull();
    expect(seam.fsOpCounts().read).toBe(Math.ceil(total / chunk));
    await reader.close();
    seam.resetFsSeam();
    // Whole bodies (30–107 bytes) are longer than the room: still whole, each straddling one
    // read again from where it starts.
    const whole = SpillReader.open(state, chunk, { reuseBuffers: true, maxPieceBytes: piece });
    for (const [, expected] of appends) {
      const segment = (await whole.nextSegment())!;
      expect(await segment.read(1024)).toEqual(expected);
    }
    expect(seam.fsOpCounts().read).toBeGreaterThan(Math.ceil(total / chunk));
    await whole.close();
    await state.release();
  });

  it('G4 no read lands after a forced close with a read-ahead in flight', async () => {
    const body = patternBytes(64);
    const { state, taskDir } = await spill([[C0, body]]);
    const reader = SpillReader.open(state, CHUNK, { reuseBuffers: true });
    const pause = pauseOnRead(2); // the read behind the header's
    const segment = (await reader.nextSegment())!;
    await withHangGuard(pause.reached, 'the read behind the header');
    const closing = state.close();
    await macrotasks();
    // Never deleted under the read running ahead, though nobody waits for its bytes yet.
    const reading = settle(segment.read(64));
    await expectReadFenced({ taskDir, release: () => pause.release(), closing, reading, reader });
  });

  it('G4 closing a reader does not wait for its read-ahead, and the late bytes are dropped', async () => {
    const { state, taskDir } = await spill([[C0, patternBytes(64)]]);
    const reader = SpillReader.open(state, CHUNK);
    const pause = pauseOnRead(2);
    const segment = (await reader.nextSegment())!;
    await withHangGuard(pause.reached, 'the read behind the header');
    await reader.close(); // returns with the read still paused: the hand-off holds the files
    pause.release();
    await macrotasks();
    await expect(segment.read(64)).rejects.toBeInstanceOf(AbortedError);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });
});
