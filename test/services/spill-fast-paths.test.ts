/**
 * The fast paths added for speed (`spillway bench` floors) keep the spill format and every byte
 * exact: one CRC pass shared by the checkpoint check and the segment CRCs, coalesced segment
 * writes, and a drain that takes buffered bytes without a promise round trip; a filtering
 * spill that hands the reader no promise while its kept records only need copying.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { crc32Combine, crc32Suffix } from '../../src/services/crc32.ts';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { readCheckpoint } from '../../src/services/formats/spwc/reader.ts';
import { Drainer } from '../../src/services/spill/drainer.ts';
import { type ChannelConsumer } from '../../src/services/channel.ts';
import { SpillCorruptError } from '../../src/services/errors.ts';
import { channelId, channelKey, type ChannelInfo } from '../../src/services/channel.ts';
import { fetchToSpill } from '../../src/services/spill/fetch-stage.ts';
import { seam } from '../helpers/fault-seam.ts';
import { SEGMENT_HEADER_BYTES } from '../../src/services/spill/segment-format.ts';
import { SpillWriter } from '../../src/services/spill/spill-writer.ts';
import { FilteringSpill } from '../../src/services/spill/filtering-spill.ts';
import { recordRules } from '../../src/services/rescale/rescale-options.ts';
import { makeTempRoot } from '../helpers/temp.ts';

afterEach(() => seam.resetFsSeam());

function bytes(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (seed * 131 + i * 7) & 0xff;
  return b;
}

/** Every spill file's bytes, concatenated in order. */
async function spillBytes(files: readonly string[]): Promise<Buffer> {
  return Buffer.concat(await Promise.all(files.map((f) => readFile(f))));
}

/** Collects every delivered buffer per channel; never returns a promise. */
function collector(channels: readonly ChannelInfo[]) {
  const got = new Map<string, Buffer[]>();
  const consumers = new Map<number, ChannelConsumer>();
  for (const info of channels) {
    const key = channelKey(info);
    got.set(key, []);
    consumers.set(channelId(info), {
      onBuffer: (b) => void got.get(key)!.push(b),
      onFinished: () => {},
    });
  }
  return { got, consumers };
}

describe('CRC-32 arithmetic', () => {
  it('crc32Combine and crc32Suffix agree with zlib on every split (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.nat(), (data, cut) => {
        const all = Buffer.from(data);
        const at = all.length === 0 ? 0 : cut % (all.length + 1);
        const a = all.subarray(0, at);
        const b = all.subarray(at);
        expect(crc32Combine(crc32(a), crc32(b), b.length)).toBe(crc32(all));
        expect(crc32Suffix(crc32(all), crc32(a), b.length)).toBe(crc32(b));
      }),
      { numRuns: 300 },
    );
  });

  it('combines lengths up to the 256 MiB entry bound without hashing them', () => {
    // crc32 of n zero bytes is known independently: hash them once, in pieces, via zlib.
    const zeros = Buffer.alloc(1 << 20);
    let whole = 0;
    for (let i = 0; i < 256; i++) whole = crc32(zeros, whole);
    let combined = crc32(zeros);
    for (let i = 1; i < 256; i++) combined = crc32Combine(combined, crc32(zeros), zeros.length);
    expect(combined).toBe(whole);
    expect(crc32Combine(crc32(zeros), crc32(Buffer.alloc(0)), 0)).toBe(crc32(zeros));
  });
});

describe('one CRC pass for checkpoint and spill segments', () => {
  it('readCheckpoint hands onPayload the CRC-32 of each chunk, whatever the read size', async () => {
    const dir = await makeTempRoot();
    const made = await makeCheckpoint({
      out: join(dir, 'in.spwc'),
      mb: 1 / 64,
      seed: 4,
      maxEntryBytes: 2048,
    });
    for (const readChunkBytes of [3, 7, 4096, undefined]) {
      let pieces = 0;
      await readCheckpoint(
        made.path,
        {
          onEntry() {},
          onPayload(chunk, crc) {
            pieces++;
            expect(crc).toBe(crc32(chunk));
          },
        },
        { readChunkBytes },
      );
      expect(pieces).toBeGreaterThan(0);
    }
  });

  it('append with the caller’s CRC writes byte-identical spill files to append without it (property)', async () => {
    const root = await makeTempRoot();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(2), fc.integer({ min: 0, max: 300 })), { maxLength: 25 }),
        fc.integer({ min: SEGMENT_HEADER_BYTES + 1, max: 200 }),
        fc.integer({ min: 1, max: 600 }),
        async (appends, maxSegmentBytes, maxSpillFileBytes) => {
          const run = async (withCrc: boolean) => {
            const taskDir = join(root, `task-${n++}`);
            const writer = new SpillWriter({ taskDir, maxSegmentBytes, maxSpillFileBytes });
            for (const [i, [channel, len]] of appends.entries()) {
              const b = bytes(len, i);
              await writer.append({ gate: 0, channel }, b, withCrc ? crc32(b) : undefined);
            }
            const state = await writer.close();
            const out = { files: state.files.length, data: await spillBytes(state.files) };
            await state.release();
            return out;
          };
          const plain = await run(false);
          const reused = await run(true);
          expect(reused.files).toBe(plain.files);
          expect(reused.data.equals(plain.data)).toBe(true);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('a wrong caller CRC never delivers wrong bytes: the drain fails with SpillCorruptError', async () => {
    const taskDir = join(await makeTempRoot(), 'task-wrong-crc');
    const writer = new SpillWriter({ taskDir });
    const C0 = { gate: 0, channel: 0 };
    const b = bytes(100, 1);
    await writer.append(C0, b, crc32(b) ^ 1);
    const state = await writer.close();
    const { consumers } = collector(state.channels);
    const drainer = new Drainer(state, consumers);
    await expect(drainer.drain()).rejects.toBeInstanceOf(SpillCorruptError);
    await drainer.close();
    await state.release();
  });
});

describe('coalesced segment writes', () => {
  it('small segments of alternating channels go out about one write per maxSegmentBytes, with the exact segment stream', async () => {
    const taskDir = join(await makeTempRoot(), 'task-coalesce');
    const maxSegmentBytes = 1024;
    const writer = new SpillWriter({ taskDir, maxSegmentBytes });
    const expected: Buffer[] = [];
    for (let i = 0; i < 100; i++) {
      const info = { gate: 0, channel: i % 2 };
      const body = bytes(100, i);
      await writer.append(info, body);
      const header = Buffer.alloc(SEGMENT_HEADER_BYTES);
      header.writeInt32BE(0, 0);
      header.writeInt32BE(i % 2, 4);
      header.writeInt32BE(body.length, 8);
      header.writeUInt32BE(crc32(body), 12);
      expected.push(header, body);
    }
    const state = await writer.close();
    const stream = Buffer.concat(expected);
    expect((await spillBytes(state.files)).equals(stream)).toBe(true);
    // One write per sealed segment would be 100; coalesced, ⌈11 600 / 1024⌉ + the tail.
    expect(seam.fsOpCounts().write).toBeLessThanOrEqual(
      Math.ceil(stream.length / maxSegmentBytes) + 1,
    );
    expect(writer.spilledBytes).toBe(stream.length);
    await state.release();
  });
});

describe('drain fast path', () => {
  it('G6 delivers bufferBytes-sized buffers across read-chunk boundaries, byte-exact, with one disk read per chunk', async () => {
    const dir = await makeTempRoot();
    const made = await makeCheckpoint({
      out: join(dir, 'in.spwc'),
      mb: 3,
      seed: 9,
      gates: 1,
      channels: 3,
    });
    const expected = new Map<string, Buffer[]>();
    let key = '';
    await readCheckpoint(made.path, {
      onEntry: (gate, channel) => void (key = channelKey({ gate, channel })),
      onPayload: (chunk) =>
        void (expected.get(key) ?? expected.set(key, []).get(key)!).push(Buffer.from(chunk)),
    });
    const { state } = await fetchToSpill({
      checkpoint: made.path,
      taskDir: join(dir, 'task-fast'),
      signal: new AbortController().signal,
      onTaskDirAcquired: () => {},
    });
    const readChunkBytes = 64 * 1024;
    const bufferBytes = 10_000; // not a divisor of the read chunk: buffers straddle reads
    const { got, consumers } = collector(state.channels);
    seam.resetFsSeam();
    const drainer = new Drainer(state, consumers, { bufferBytes, readChunkBytes });
    const report = await drainer.drain();
    await drainer.close();
    await state.release();
    expect(report.bytes).toBe(made.payloadBytes);
    for (const [k, parts] of expected) {
      expect(Buffer.concat(got.get(k)!).equals(Buffer.concat(parts)), k).toBe(true);
    }
    // Every buffer is bufferBytes long except a segment's last one.
    const short = [...got.values()].flat().filter((b) => b.length !== bufferBytes).length;
    expect(short).toBeLessThanOrEqual(report.segments);
    const fileBytes = state.files.length === 0 ? 0 : made.payloadBytes + report.segments * 16;
    expect(seam.fsOpCounts().read).toBeLessThanOrEqual(
      Math.ceil(fileBytes / readChunkBytes) + report.segments + state.files.length,
    );
  });

  it('a filtering spill hands the reader no promise while its kept records only need copying, and spills them exactly', async () => {
    const taskDir = join(await makeTempRoot(), 'task-1-filter');
    const writer = new SpillWriter({ taskDir, maxSegmentBytes: 4096 });
    // Parallelism 1: every record is the one new subtask's, so every one is kept.
    const filter = new FilteringSpill(writer, recordRules({ subtask: 0, parallelism: 1 }, 'cp'));
    const visitor = filter.visitor();
    const records = Buffer.concat(
      Array.from({ length: 8 }, (_, i) => {
        const framed = Buffer.alloc(4 + 16);
        framed.writeInt32BE(16);
        bytes(16, i).copy(framed, 4);
        return framed;
      }),
    );
    expect(visitor.onEntry(0, 0, records.length, 0, 0)).toBeUndefined();
    // Two chunks, the cut inside a record: the second completes it.
    expect(visitor.onPayload(records.subarray(0, 50), 0)).toBeUndefined();
    expect(visitor.onPayload(records.subarray(50), 0)).toBeUndefined();
    expect(filter.counts).toMatchObject({ read: 8, kept: 8, dropped: 0 });
    filter.finish();
    const state = await writer.close();
    const spilled = await spillBytes(state.files);
    expect(spilled.subarray(SEGMENT_HEADER_BYTES)).toEqual(records);
    expect(spilled.readUInt32BE(12)).toBe(crc32(records));
    await state.release();
  });
});
