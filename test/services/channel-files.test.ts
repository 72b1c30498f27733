/**
 * G8 in the CLI's file sink: the bytes it holds are bounded in bytes, whatever the shape. One
 * channel never queues more than one operation, so a bound on queued operations alone let a
 * single channel stage without limit while its write ran (issue 23: 4 GiB in one channel peaked
 * at 1,049 MiB). Writes are slowed through the fs seam's hook (the disk is the slow side), and
 * what the sink holds — bytes accepted minus bytes on disk — is read after every delivery.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChannelFileSink } from '../../src/services/outputs/channel-files.ts';
import { copyBuffers, ioBuffers } from '../../src/services/buffer-pool.ts';
import { pauseOn } from '../helpers/async.ts';
import { seam } from '../helpers/fault-seam.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const KIB = 1024;
const MIB = 1024 * KIB;

afterEach(() => seam.resetFsSeam());

async function heldWhileFeeding(channels: number, totalBytes: number, maxStagedBytes: number) {
  const dir = await makeTempRoot();
  seam.setFsHook((op) => (op === 'write' ? new Promise((r) => setTimeout(r, 5)) : undefined));
  const sink = new ChannelFileSink(dir, { maxStagedBytes, chunkBytes: 64 * KIB });
  const consumers = Array.from({ length: channels }, (_, c) =>
    sink.consumer({ gate: 0, channel: c }),
  );
  const piece = Buffer.alloc(64 * KIB, 7);
  const accepted = new Array<number>(channels).fill(0);
  const onDisk = (c: number) => {
    try {
      return statSync(join(dir, `gate-0-channel-${c}.bin`)).size;
    } catch {
      return 0;
    }
  };
  let maxHeld = 0;
  for (let sent = 0, k = 0; sent < totalBytes; sent += piece.length, k++) {
    const c = k % channels;
    await consumers[c]!.onBuffer(piece);
    accepted[c]! += piece.length;
    let held = 0;
    for (let i = 0; i < channels; i++) held += accepted[i]! - onDisk(i);
    maxHeld = Math.max(maxHeld, held);
  }
  for (const consumer of consumers) await consumer.onFinished();
  await sink.finish();
  for (let c = 0; c < channels; c++) expect(onDisk(c)).toBe(accepted[c]);
  return maxHeld;
}

describe('G8 channel file sink', () => {
  it('G8 one channel: the bytes the sink holds stay within its byte bound while writes are slow', async () => {
    const held = await heldWhileFeeding(1, 48 * MIB, 2 * MIB);
    // Staged up to the bound, plus what one running write holds and the piece that crossed it.
    expect(held).toBeLessThanOrEqual(4 * MIB + 64 * KIB);
  }, 60_000);

  it('G8 two and 32 channels: the byte bound holds across channels too', async () => {
    expect(await heldWhileFeeding(2, 32 * MIB, 2 * MIB)).toBeLessThanOrEqual(4 * MIB + 64 * KIB);
    expect(await heldWhileFeeding(32, 32 * MIB, 2 * MIB)).toBeLessThanOrEqual(4 * MIB + 64 * KIB);
  }, 60_000);

  it('G8 its copies of large deliveries come from the process pool and go back only once their write settled', async () => {
    const dir = await makeTempRoot();
    const sink = new ChannelFileSink(dir, { chunkBytes: MIB });
    const consumer = sink.consumer({ gate: 0, channel: 0 });
    const pause = pauseOn((op, path) => op === 'write' && path.endsWith('gate-0-channel-0.bin'));
    const lent = Buffer.alloc(MIB, 1);
    await consumer.onBuffer(lent);
    lent.fill(2); // the drain reuses its buffer once the call returned: the sink wrote a copy
    await pause.reached;
    // The chunk in the held write is out of the pool, and stays out while the write waits.
    const kept = copyBuffers.keptBytes;
    const readers = ioBuffers.keptBytes;
    expect(kept + MIB).toBeLessThanOrEqual(8 * MIB); // room for it to come back
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(copyBuffers.keptBytes).toBe(kept);
    pause.release();
    await consumer.onFinished();
    await sink.finish();
    expect(copyBuffers.keptBytes).toBe(kept + MIB);
    expect(ioBuffers.keptBytes).toBe(readers); // the readers' and writers' pool is not touched
    expect(readFileSync(join(dir, 'gate-0-channel-0.bin')).equals(Buffer.alloc(MIB, 1))).toBe(true);
  });

  it('G8 copies of every size share a few rooms (powers of two): odd sizes do not pile up in the pool', async () => {
    const dir = await makeTempRoot();
    const before = copyBuffers.keptBytes;
    // Tails of every length between 512 KiB and 1 MiB, one channel after another: each copy
    // takes a 1 MiB room and gives it back; the pool never keeps more than the rooms in use.
    for (let k = 0; k < 12; k++) {
      const sink = new ChannelFileSink(dir, { chunkBytes: 64 * KIB });
      const consumer = sink.consumer({ gate: 0, channel: k });
      const bytes = 512 * KIB + 1 + k * 40_000;
      await consumer.onBuffer(Buffer.alloc(bytes, k));
      await consumer.onFinished();
      await sink.finish();
      expect(statSync(join(dir, `gate-0-channel-${k}.bin`)).size).toBe(bytes);
      expect(copyBuffers.keptBytes - before).toBeLessThanOrEqual(MIB);
    }
  });
});
