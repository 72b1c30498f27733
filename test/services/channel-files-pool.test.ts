/**
 * G4 for the file sink's pooled copies (src/services/buffer-pool.ts takeCopy/giveCopies): a
 * copy goes back to the process's pool only once no write reads it any more — also when a
 * write fails or the sink is discarded mid-run. Three sinks share the pool; one fails on a
 * write (fs seam fault), one is discarded halfway, and the third's files must be its bytes
 * exactly: a copy given back while still being written would be retaken and overwritten by
 * another sink's delivery. Writes wait a random few ms through the seam so the sinks' writes
 * interleave; every interleaving must give the same bytes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChannelFileSink } from '../../src/services/outputs/channel-files.ts';
import { seam } from '../helpers/fault-seam.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const MIB = 1024 * 1024;
const CHANNELS = 6;
const DELIVERIES = 12;
/** Sizes on both sides of the pooled-copy threshold (64 KiB), and the sync-create path. */
const SIZES = [64 * 1024, 100 * 1024, MIB, 2 * MIB, 3 * 1024];

const sizeOf = (ch: number, i: number) => SIZES[(i + ch) % SIZES.length]!;
const byteOf = (tag: number, ch: number, i: number) => (tag * 31 + ch * 7 + i) & 0xff;

/** Feeds `sink` from one lent buffer the "drain" scribbles over after each delivery. */
async function feed(sink: ChannelFileSink, tag: number, stopAfter = Infinity): Promise<void> {
  const lent = Buffer.alloc(2 * MIB);
  for (let ch = 0; ch < CHANNELS; ch++) {
    const consumer = sink.consumer({ gate: 0, channel: ch });
    for (let i = 0; i < DELIVERIES; i++) {
      if (ch * DELIVERIES + i >= stopAfter) return;
      const view = lent.subarray(0, sizeOf(ch, i));
      view.fill(byteOf(tag, ch, i));
      await consumer.onBuffer(view);
      lent.fill(0xee); // the lender reuses its buffer once the call returned
    }
    await consumer.onFinished();
  }
}

describe('G4 channel file sink with pooled copies', () => {
  afterEach(() => seam.resetFsSeam());

  it('G4 a failing sink and a discarded one never change the bytes of another sink sharing the pool', async () => {
    const [failing, discarded, healthy] = await Promise.all([
      makeTempRoot(),
      makeTempRoot(),
      makeTempRoot(),
    ]);
    seam.injectFault({ op: 'write', code: 'ENOSPC', nth: 2, pathIncludes: failing });
    seam.setFsHook(async () => {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
    });
    const a = new ChannelFileSink(failing, { chunkBytes: MIB });
    const c = new ChannelFileSink(discarded, { chunkBytes: MIB });
    const b = new ChannelFileSink(healthy, { chunkBytes: MIB });
    const failed = feed(a, 1)
      .then(() => a.finish())
      .then(
        () => undefined,
        async (error: unknown) => {
          await a.discard();
          return error;
        },
      );
    const dropped = feed(c, 3, (CHANNELS * DELIVERIES) / 2).then(() => c.discard());
    await feed(b, 2);
    await b.finish();
    expect(await failed).toMatchObject({ code: 'ENOSPC' });
    await dropped;
    for (let ch = 0; ch < CHANNELS; ch++) {
      const want = Array.from({ length: DELIVERIES }, (_, i) =>
        Buffer.alloc(sizeOf(ch, i), byteOf(2, ch, i)),
      );
      const got = readFileSync(join(healthy, `gate-0-channel-${ch}.bin`));
      expect(got.equals(Buffer.concat(want))).toBe(true);
    }
  }, 60_000);
});
