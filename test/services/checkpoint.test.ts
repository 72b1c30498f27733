import fc from 'fast-check';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CHECKPOINT_HEADER_BYTES,
  CHECKPOINT_MAGIC,
  CHECKPOINT_VERSION,
  ENTRY_HEADER_BYTES,
  MAX_CHANNEL,
  MAX_ENTRY_LENGTH,
  MAX_GATE,
} from '../../src/services/formats/spwc/format.ts';
import { CheckpointWriter } from '../../src/services/formats/spwc/writer.ts';
import { channelKey } from '../../src/services/channel.ts';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { readCheckpoint, type CheckpointSummary } from '../../src/services/formats/spwc/reader.ts';
import {
  CheckpointPathError,
  CorruptCheckpointError,
  MisuseError,
  suppressedOf,
} from '../../src/services/errors.ts';
import { seam } from '../helpers/fault-seam.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { vector } from '../helpers/checkpoints.ts';

const MIB = 1024 * 1024;

afterEach(() => {
  seam.resetFsSeam();
});

interface Entry {
  gate: number;
  channel: number;
  length: number;
  offset: number;
}

interface Collected {
  summary: CheckpointSummary;
  entries: Entry[];
  channels: Map<string, Buffer>;
  chunkSizes: number[];
}

/** Reads a checkpoint into memory (test files are small), copying each borrowed chunk. */
async function collect(
  path: string,
  options?: { readChunkBytes?: number; signal?: AbortSignal },
): Promise<Collected> {
  const entries: Entry[] = [];
  const parts = new Map<string, Buffer[]>();
  const chunkSizes: number[] = [];
  let key = '';
  const summary = await readCheckpoint(
    path,
    {
      onEntry(gate, channel, length, offset) {
        entries.push({ gate, channel, length, offset });
        key = channelKey({ gate, channel });
        if (!parts.has(key)) parts.set(key, []);
      },
      onPayload(chunk) {
        chunkSizes.push(chunk.length);
        parts.get(key)!.push(Buffer.from(chunk));
      },
    },
    options,
  );
  const channels = new Map([...parts].map(([k, bufs]) => [k, Buffer.concat(bufs)] as const));
  return { summary, entries, channels, chunkSizes };
}

/** Reads `path` expecting a CorruptCheckpointError for exactly that file; returns it. */
async function corruptOf(
  path: string,
  options?: { readChunkBytes?: number },
): Promise<CorruptCheckpointError> {
  const error: unknown = await collect(path, options).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CorruptCheckpointError);
  const corrupt = error as CorruptCheckpointError;
  expect(corrupt.file).toBe(path);
  expect(corrupt.message).toBe(
    `${path}: corrupt checkpoint at byte ${corrupt.offset}: ${corrupt.reason}`,
  );
  return corrupt;
}

/** An independent encoder, so writer bugs cannot hide behind matching reader bugs. */
function encode(entries: { gate: number; channel: number; payload: Buffer }[]): Buffer {
  const parts: Buffer[] = [Buffer.from([0x53, 0x50, 0x57, 0x43, 0, 0, 0, 1])];
  for (const e of entries) {
    const h = Buffer.alloc(16);
    h.writeInt32BE(e.gate, 0);
    h.writeInt32BE(e.channel, 4);
    h.writeInt32BE(e.payload.length, 8);
    h.writeUInt32BE(crc32(e.payload), 12);
    parts.push(h, e.payload);
  }
  return Buffer.concat(parts);
}

function hex(value: number): string {
  return `0x${value.toString(16).padStart(8, '0')}`;
}

function expectClosedEverything(): void {
  const counts = seam.fsOpCounts();
  expect(counts.open).toBeGreaterThan(0);
  expect(counts.close).toBe(counts.open);
}

// tiny.spwc, from `xxd`: header 0..8; entries at 8 (g0 c1 "AB", payload 24..26), 26 (g7 c3
// empty), 42 (g0 c1 "CDE", payload 58..61), 61 (g7 c3 "xyz", crc field 73, payload 77..80).
const TINY_ENTRY_OFFSETS = [8, 26, 42, 61];

describe('checkpoint constants', () => {
  it('match DESIGN.md §3', () => {
    expect(CHECKPOINT_MAGIC.equals(Buffer.from('SPWC'))).toBe(true);
    expect(CHECKPOINT_VERSION).toBe(1);
    expect(CHECKPOINT_HEADER_BYTES).toBe(8);
    expect(ENTRY_HEADER_BYTES).toBe(16);
    expect(MAX_GATE).toBe(65535);
    expect(MAX_CHANNEL).toBe(65535);
    expect(MAX_ENTRY_LENGTH).toBe(268435456);
    expect(channelKey({ gate: 7, channel: 3 })).toBe('gate-7-channel-3');
  });
});

describe('readCheckpoint: test vectors (test/fixtures/vectors)', () => {
  for (const name of ['tiny', 'small']) {
    it(`${name}.spwc reproduces ${name}.expected/ byte-exact per channel`, async () => {
      const path = vector(`${name}.spwc`);
      const got = await collect(path);
      const expectedDir = vector(`${name}.expected`);
      const files = (await readdir(expectedDir)).sort();
      expect([...got.channels.keys()].map((k) => `${k}.bin`).sort()).toEqual(files);
      for (const file of files) {
        const expected = await readFile(join(expectedDir, file));
        expect(got.channels.get(file.replace(/\.bin$/, ''))!.equals(expected)).toBe(true);
      }
      const size = (await stat(path)).size;
      const payload = [...got.channels.values()].reduce((n, b) => n + b.length, 0);
      expect(got.summary).toEqual({
        entries: got.entries.length,
        payloadBytes: payload,
        version: 1,
        fileBytes: size,
      });
      expect(got.summary.fileBytes).toBe(8 + 16 * got.entries.length + payload);
      expect(got.entries.some((e) => e.length === 0)).toBe(true);
      expectClosedEverything();
    });
  }

  it('tiny.spwc reports entries with header offsets, zero-length entry included', async () => {
    const got = await collect(vector('tiny.spwc'));
    expect(got.entries).toEqual([
      { gate: 0, channel: 1, length: 2, offset: 8 },
      { gate: 7, channel: 3, length: 0, offset: 26 },
      { gate: 0, channel: 1, length: 3, offset: 42 },
      { gate: 7, channel: 3, length: 3, offset: 61 },
    ]);
    expect(got.chunkSizes).not.toContain(0);
  });

  it('any read chunk size gives the same result (headers and payloads straddle reads)', async () => {
    const tiny = await collect(vector('tiny.spwc'));
    for (let chunk = 1; chunk <= 24; chunk++) {
      const got = await collect(vector('tiny.spwc'), { readChunkBytes: chunk });
      expect(got.entries).toEqual(tiny.entries);
      expect(got.channels).toEqual(tiny.channels);
      expect(got.summary).toEqual(tiny.summary);
      expect(Math.max(...got.chunkSizes)).toBeLessThanOrEqual(chunk);
    }
    const small = await collect(vector('small.spwc'));
    for (const chunk of [4093, 65536]) {
      const got = await collect(vector('small.spwc'), { readChunkBytes: chunk });
      // Buffer.equals: a deep toEqual over megabytes is needlessly slow.
      expect([...got.channels.keys()]).toEqual([...small.channels.keys()]);
      for (const [k, v] of got.channels) expect(v.equals(small.channels.get(k)!)).toBe(true);
    }
  });

  it('corrupt-bad-magic.spwc: CorruptCheckpointError at byte 0', async () => {
    const path = vector('corrupt-bad-magic.spwc');
    const e = await corruptOf(path);
    expect(e.offset).toBe(0);
    expect(e.reason).toMatch(/magic 0x53505758/);
    expectClosedEverything();
  });

  it('corrupt-crc-mismatch.spwc: error at the last entry’s crc field (73), after delivery', async () => {
    const path = vector('corrupt-crc-mismatch.spwc');
    const delivered: Buffer[] = [];
    const error = await readCheckpoint(path, {
      onEntry() {},
      onPayload: (chunk) => void delivered.push(Buffer.from(chunk)),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptCheckpointError);
    expect((error as CorruptCheckpointError).offset).toBe(73);
    // The defect is the last payload byte ('z' → 0x85): the crc is checked after delivery.
    expect(Buffer.concat(delivered).toString('latin1')).toBe('ABCDExy\x85');
    const e = await corruptOf(path);
    expect(e.reason).toContain('0xeb8eba67');
    expect(e.reason).toContain(hex(crc32(Buffer.from('xy\x85', 'latin1'))));
    expectClosedEverything();
  });

  it('corrupt-truncated-payload.spwc: error at the end of the file (77)', async () => {
    const e = await corruptOf(vector('corrupt-truncated-payload.spwc'));
    expect(e.offset).toBe(77);
    expect(e.reason).toMatch(/entry at byte 61: expected 3 bytes, 0 present/);
  });

  it('corrupt-negative-length.spwc: error at the first entry’s length field (16)', async () => {
    const e = await corruptOf(vector('corrupt-negative-length.spwc'));
    expect(e.offset).toBe(16);
    expect(e.reason).toMatch(/length -5/);
  });

  it('corrupt vectors give the same offsets with 1-byte reads', async () => {
    const cases: [string, number][] = [
      ['corrupt-bad-magic.spwc', 0],
      ['corrupt-crc-mismatch.spwc', 73],
      ['corrupt-truncated-payload.spwc', 77],
      ['corrupt-negative-length.spwc', 16],
    ];
    for (const [name, offset] of cases) {
      const e = await corruptOf(vector(name), { readChunkBytes: 1 });
      expect(e.offset).toBe(offset);
    }
  });
});

describe('readCheckpoint: every corrupt class, edited from a valid file', () => {
  let tiny: Buffer | undefined;
  let dir: string | undefined;

  async function variant(name: string, edit: (b: Buffer) => Buffer | void): Promise<string> {
    tiny ??= await readFile(vector('tiny.spwc'));
    dir ??= await makeTempRoot();
    const copy = Buffer.from(tiny);
    const bytes = edit(copy) ?? copy;
    const path = join(dir, `${name}.spwc`);
    await writeFile(path, bytes);
    return path;
  }

  afterEach(() => {
    // makeTempRoot's own afterEach removes the dir; a new one is made per test.
    dir = undefined;
  });

  const cases: {
    name: string;
    edit: (b: Buffer) => Buffer | void;
    offset: number;
    reason: RegExp;
  }[] = [
    { name: 'empty file', edit: () => Buffer.alloc(0), offset: 0, reason: /empty file/ },
    {
      name: 'truncated file header',
      edit: (b) => b.subarray(0, 6),
      offset: 6,
      reason: /truncated file header: 6 of 8/,
    },
    { name: 'bad magic', edit: (b) => void (b[3] = 0x58), offset: 0, reason: /bad magic/ },
    {
      name: 'garbage bytes',
      edit: () => Buffer.from('hello, this is not a checkpoint'),
      offset: 0,
      reason: /bad magic/,
    },
    {
      name: 'garbage shorter than the magic',
      edit: () => Buffer.from([0x53, 0x00]),
      offset: 0,
      reason: /bad magic/,
    },
    {
      name: 'bad version',
      edit: (b) => void b.writeUInt32BE(3, 4),
      offset: 4,
      reason: /version 3/,
    },
    {
      name: 'negative gate',
      edit: (b) => void b.writeInt32BE(-1, 26),
      offset: 26,
      reason: /gate -1/,
    },
    {
      name: 'gate ≥ 65536',
      edit: (b) => void b.writeInt32BE(65536, 26),
      offset: 26,
      reason: /gate 65536/,
    },
    {
      name: 'negative channel',
      edit: (b) => void b.writeInt32BE(-2, 46),
      offset: 46,
      reason: /channel -2/,
    },
    {
      name: 'channel ≥ 65536',
      edit: (b) => void b.writeInt32BE(65536, 46),
      offset: 46,
      reason: /channel 65536/,
    },
    {
      name: 'negative length',
      edit: (b) => void b.writeInt32BE(-1, 50),
      offset: 50,
      reason: /length -1/,
    },
    {
      name: 'oversized length',
      edit: (b) => void b.writeInt32BE(MAX_ENTRY_LENGTH + 1, 50),
      offset: 50,
      reason: /length 268435457/,
    },
    {
      name: 'length = MAX_ENTRY_LENGTH is valid, then runs out as a truncated payload',
      edit: (b) => void b.writeInt32BE(MAX_ENTRY_LENGTH, 50),
      offset: 80,
      reason: /entry at byte 42: expected 268435456 bytes, 22 present/,
    },
    {
      name: 'truncated entry header mid-file',
      edit: (b) => b.subarray(0, 70),
      offset: 61,
      reason: /truncated entry header: 9 of 16/,
    },
    {
      name: 'trailing partial entry',
      edit: (b) => Buffer.concat([b, Buffer.from([0, 0, 0, 0, 0])]),
      offset: 80,
      reason: /truncated entry header: 5 of 16/,
    },
    {
      name: 'truncated payload',
      edit: (b) => b.subarray(0, 59),
      offset: 59,
      reason: /entry at byte 42: expected 3 bytes, 1 present/,
    },
    {
      name: 'CRC mismatch',
      edit: (b) => void (b[24] = 0x61),
      offset: 20,
      reason: new RegExp(`0x30694c07.*${hex(crc32(Buffer.from('aB')))}`),
    },
    {
      name: 'non-zero CRC on a zero-length entry',
      edit: (b) => void b.writeUInt32BE(1, 38),
      offset: 38,
      reason: /0x00000001.*0x00000000/,
    },
  ];

  for (const c of cases) {
    it(`${c.name}: CorruptCheckpointError at byte ${c.offset}`, async () => {
      const path = await variant(c.name.replace(/\W+/g, '-'), c.edit);
      for (const readChunkBytes of [undefined, 1, 7]) {
        const e = await corruptOf(path, { readChunkBytes });
        expect(e.offset).toBe(c.offset);
        expect(e.reason).toMatch(c.reason);
      }
      expectClosedEverything();
    });
  }

  it('boundary values gate 65535, channel 65535 are valid', async () => {
    const path = await variant('boundaries', (b) => {
      b.writeInt32BE(MAX_GATE, 26);
      b.writeInt32BE(MAX_CHANNEL, 30);
    });
    const got = await collect(path);
    expect(got.entries[1]).toEqual({ gate: 65535, channel: 65535, length: 0, offset: 26 });
  });

  it('garbage input only ever gives CorruptCheckpointError (property)', async () => {
    const root = await makeTempRoot();
    let n = 0;
    const header = Buffer.from('SPWC\0\0\0\x01', 'latin1');
    const arbitrary = fc.record({
      withHeader: fc.boolean(),
      bytes: fc.uint8Array({ maxLength: 120 }),
      chunk: fc.integer({ min: 1, max: 64 }),
    });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ withHeader, bytes, chunk }) => {
        const data = withHeader ? Buffer.concat([header, bytes]) : Buffer.from(bytes);
        const path = join(root, `garbage-${n++}.spwc`);
        await writeFile(path, data);
        const result = await collect(path, { readChunkBytes: chunk }).catch((e: unknown) => e);
        if (result instanceof Error) {
          expect(result).toBeInstanceOf(CorruptCheckpointError);
          const offset = (result as CorruptCheckpointError).offset;
          expect(offset).toBeGreaterThanOrEqual(0);
          expect(offset).toBeLessThanOrEqual(data.length);
        } else {
          expect((result as Collected).summary.fileBytes).toBe(data.length);
        }
      }),
      { numRuns: 300 },
    );
    expectClosedEverything();
  });
});

describe('readCheckpoint: streaming, faults, abort', () => {
  it('G8 a 64 MiB checkpoint read with 1 MiB reads never delivers more than 1 MiB, from two alternating buffers', async () => {
    const dir = await makeTempRoot();
    const made = await makeCheckpoint({ out: join(dir, 'big.spwc'), mb: 64, seed: 3 });
    seam.resetFsSeam();
    let maxChunk = 0;
    const buffers = new Set<ArrayBufferLike>();
    const totals = new Map<string, number>();
    let key = '';
    const summary = await readCheckpoint(
      made.path,
      {
        onEntry: (gate, channel) => void (key = channelKey({ gate, channel })),
        onPayload(chunk) {
          maxChunk = Math.max(maxChunk, chunk.length);
          buffers.add(chunk.buffer);
          totals.set(key, (totals.get(key) ?? 0) + chunk.length);
        },
      },
      { readChunkBytes: MIB },
    );
    expect(maxChunk).toBeLessThanOrEqual(MIB);
    // The one being parsed and the one the next chunk is read into meanwhile.
    expect(buffers.size).toBe(2);
    expect(summary).toEqual({
      entries: made.entries,
      payloadBytes: 64 * MIB,
      version: 1,
      fileBytes: made.fileBytes,
    });
    // One read per MiB of file plus the read that sees EOF.
    expect(seam.fsOpCounts().read).toBe(Math.ceil(made.fileBytes / MIB) + 1);
    for (const c of made.channels) expect(totals.get(channelKey(c))).toBe(c.bytes);
    expectClosedEverything();
  });

  it('an EIO from the seam propagates unchanged and the file is closed', async () => {
    seam.injectFault({ op: 'read', code: 'EIO', nth: 2 });
    const error = await collect(vector('small.spwc')).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(CorruptCheckpointError);
    expect((error as NodeJS.ErrnoException).code).toBe('EIO');
    expect((error as Error).message).toMatch(/injected/);
    expect(seam.fsOpCounts().read).toBe(2);
    expectClosedEverything();
  });

  it('a path that cannot be opened is a CheckpointPathError carrying the errno, and nothing is left open', async () => {
    seam.injectFault({ op: 'open', code: 'ENOENT' });
    const error = await collect(vector('tiny.spwc')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointPathError);
    expect((error as CheckpointPathError).errno).toBe('ENOENT');
    expect(((error as Error).cause as NodeJS.ErrnoException).code).toBe('ENOENT');
    expect(seam.fsOpCounts().close).toBe(0);
  });

  it('an I/O failure opening the checkpoint propagates as it is (the environment, not the input)', async () => {
    seam.injectFault({ op: 'open', code: 'EIO' });
    const error = await collect(vector('tiny.spwc')).catch((e: unknown) => e);
    expect((error as NodeJS.ErrnoException).code).toBe('EIO');
    expect(seam.fsOpCounts().close).toBe(0);
  });

  it('a close fault fails a good read, but is only suppressed behind a corrupt-file error', async () => {
    seam.injectFault({ op: 'close', code: 'EIO', times: 2 });
    const good = await collect(vector('tiny.spwc')).catch((e: unknown) => e);
    expect((good as NodeJS.ErrnoException).code).toBe('EIO');
    const bad = await collect(vector('corrupt-negative-length.spwc')).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(CorruptCheckpointError);
    expect(suppressedOf(bad).map((e) => (e as NodeJS.ErrnoException).code)).toEqual(['EIO']);
    expectClosedEverything();
  });

  it('a visitor error propagates unchanged and the file is closed', async () => {
    const boom = new Error('sink failed');
    const error = await readCheckpoint(vector('tiny.spwc'), {
      onEntry() {},
      onPayload() {
        throw boom;
      },
    }).catch((e: unknown) => e);
    expect(error).toBe(boom);
    expectClosedEverything();
  });

  it('an already aborted signal rejects with its reason before opening', async () => {
    const controller = new AbortController();
    const reason = new Error('cancelled');
    controller.abort(reason);
    await expect(collect(vector('tiny.spwc'), { signal: controller.signal })).rejects.toBe(reason);
    expect(seam.fsOpCounts().open).toBe(0);
  });

  it('aborting mid-read stops at the next chunk with signal.reason and closes the file', async () => {
    const controller = new AbortController();
    let delivered = 0;
    const error = await readCheckpoint(
      vector('small.spwc'),
      {
        onEntry() {},
        onPayload(chunk) {
          delivered += chunk.length;
          if (delivered > 100_000) controller.abort();
        },
      },
      { readChunkBytes: 65536, signal: controller.signal },
    ).catch((e: unknown) => e);
    expect(error).toBe(controller.signal.reason);
    expect(delivered).toBeLessThan(100_000 + 65536);
    expectClosedEverything();
  });

  it('rejects a non-positive readChunkBytes', async () => {
    await expect(collect(vector('tiny.spwc'), { readChunkBytes: 0 })).rejects.toThrow(RangeError);
  });
});

describe('CheckpointWriter', () => {
  it('round trip: writer output equals an independent encoding and reads back exactly', async () => {
    const dir = await makeTempRoot();
    const path = join(dir, 'rt.spwc');
    const pattern = (n: number, seed: number): Buffer =>
      Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff));
    const entries = [
      { gate: 0, channel: 1, payload: Buffer.from('AB') },
      { gate: 7, channel: 3, payload: Buffer.alloc(0) },
      { gate: 0, channel: 1, payload: pattern(700 * 1024, 1) }, // direct write path
      { gate: MAX_GATE, channel: MAX_CHANNEL, payload: pattern(300 * 1024, 2) },
      ...Array.from({ length: 40 }, (_, i) => ({
        gate: i % 3,
        channel: i % 5,
        payload: i % 4 === 0 ? Buffer.alloc(0) : pattern(40_000 + i, i), // crosses 1 MiB flushes
      })),
      { gate: 7, channel: 3, payload: Buffer.alloc(0) },
    ];
    const writer = await CheckpointWriter.create(path);
    for (const e of entries) await writer.append(e.gate, e.channel, e.payload);
    await writer.close();
    const expected = encode(entries);
    expect(writer.bytesWritten).toBe(expected.length);
    expect((await readFile(path)).equals(expected)).toBe(true);

    const got = await collect(path);
    expect(got.entries.map((e) => [e.gate, e.channel, e.length])).toEqual(
      entries.map((e) => [e.gate, e.channel, e.payload.length]),
    );
    for (const [key, bytes] of got.channels) {
      const want = Buffer.concat(
        entries.filter((e) => channelKey(e) === key).map((e) => e.payload),
      );
      expect(bytes.equals(want)).toBe(true);
    }
    expectClosedEverything();
  });

  it('random entry lists round-trip (property)', async () => {
    const dir = await makeTempRoot();
    let n = 0;
    const entry = fc.record({
      gate: fc.integer({ min: 0, max: MAX_GATE }),
      channel: fc.integer({ min: 0, max: MAX_CHANNEL }),
      payload: fc.oneof(fc.constant(new Uint8Array(0)), fc.uint8Array({ maxLength: 300 })),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(entry, { maxLength: 30 }),
        fc.integer({ min: 1, max: 64 }),
        async (list, chunk) => {
          const path = join(dir, `prop-${n++}.spwc`);
          const entries = list.map((e) => ({ ...e, payload: Buffer.from(e.payload) }));
          const writer = await CheckpointWriter.create(path);
          for (const e of entries) await writer.append(e.gate, e.channel, e.payload);
          await writer.close();
          expect((await readFile(path)).equals(encode(entries))).toBe(true);
          const got = await collect(path, { readChunkBytes: chunk });
          expect(got.entries.map((e) => [e.gate, e.channel, e.length])).toEqual(
            entries.map((e) => [e.gate, e.channel, e.payload.length]),
          );
          expect(got.summary.payloadBytes).toBe(entries.reduce((s, e) => s + e.payload.length, 0));
        },
      ),
      { numRuns: 100 },
    );
  });

  it('create+close writes just the header; close is idempotent; append after close is misuse', async () => {
    const dir = await makeTempRoot();
    const path = join(dir, 'empty.spwc');
    const writer = await CheckpointWriter.create(path);
    await writer.close();
    await writer.close();
    expect(writer.bytesWritten).toBe(8);
    expect((await readFile(path)).toString('hex')).toBe('5350574300000001');
    await expect(writer.append(0, 0, Buffer.from('x'))).rejects.toThrow(MisuseError);
    expect(await collect(path)).toMatchObject({
      summary: { entries: 0, payloadBytes: 0, fileBytes: 8 },
    });
    expectClosedEverything();
  });

  it('create never overwrites an existing file (wx)', async () => {
    const dir = await makeTempRoot();
    const path = join(dir, 'exists.spwc');
    await writeFile(path, 'keep me');
    const error = await CheckpointWriter.create(path).catch((e: unknown) => e);
    expect((error as NodeJS.ErrnoException).code).toBe('EEXIST');
    expect(await readFile(path, 'utf8')).toBe('keep me');
  });

  it('append validates gate, channel and payload size with RangeError', async () => {
    const dir = await makeTempRoot();
    const writer = await CheckpointWriter.create(join(dir, 'range.spwc'));
    const p = Buffer.from('x');
    for (const [g, c] of [
      [-1, 0],
      [65536, 0],
      [1.5, 0],
      [0, -1],
      [0, 65536],
      [0, Number.NaN],
    ]) {
      await expect(writer.append(g, c, p)).rejects.toThrow(RangeError);
    }
    // Checked before the payload is touched, so no 256 MiB allocation is needed.
    const huge = { length: MAX_ENTRY_LENGTH + 1 } as unknown as Buffer;
    await expect(writer.append(0, 0, huge)).rejects.toThrow(RangeError);
    await writer.close();
    expect(writer.bytesWritten).toBe(8);
  });

  it('overlapping appends are a MisuseError', async () => {
    const dir = await makeTempRoot();
    const writer = await CheckpointWriter.create(join(dir, 'overlap.spwc'));
    const big = Buffer.alloc(600 * 1024);
    await writer.append(0, 0, big); // buffered
    const second = writer.append(0, 0, big); // buffer is full: awaits a direct write
    await expect(writer.append(0, 0, big)).rejects.toThrow(MisuseError);
    await expect(writer.close()).rejects.toThrow(MisuseError);
    await second;
    await writer.close();
    expect(writer.bytesWritten).toBe(8 + 2 * (16 + big.length));
  });

  it('discard closes and deletes the file, also after close', async () => {
    const dir = await makeTempRoot();
    const a = await CheckpointWriter.create(join(dir, 'a.spwc'));
    await a.append(0, 0, Buffer.alloc(2 * MIB, 1));
    await a.discard();
    const b = await CheckpointWriter.create(join(dir, 'b.spwc'));
    await b.close();
    await b.discard();
    await b.discard();
    expect(await readdir(dir)).toEqual([]);
    expectClosedEverything();
  });

  it('a write fault surfaces (at append or close), repeats, and discard still cleans up', async () => {
    const dir = await makeTempRoot();
    seam.injectFault({ op: 'write', code: 'ENOSPC' });
    const writer = await CheckpointWriter.create(join(dir, 'full.spwc'));
    let error: unknown;
    try {
      for (let i = 0; i < 40; i++) await writer.append(0, i % 2, Buffer.alloc(100_000, i));
      await writer.close();
    } catch (e) {
      error = e;
    }
    expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
    await expect(writer.close()).rejects.toMatchObject({ code: 'ENOSPC' });
    await writer.discard().catch(() => undefined);
    expect(await readdir(dir)).toEqual([]);
    expectClosedEverything();
  });
});

describe('makeCheckpoint', () => {
  it('is deterministic: same seed gives identical bytes, another seed differs', async () => {
    const dir = await makeTempRoot();
    const a = await makeCheckpoint({ out: join(dir, 'a.spwc'), mb: 0.5, seed: 42 });
    const b = await makeCheckpoint({ out: join(dir, 'b.spwc'), mb: 0.5, seed: 42 });
    const c = await makeCheckpoint({ out: join(dir, 'c.spwc'), mb: 0.5, seed: 43 });
    const [ba, bb, bc] = await Promise.all([a, b, c].map((m) => readFile(m.path)));
    expect(ba.equals(bb)).toBe(true);
    expect(ba.equals(bc)).toBe(false);
    expect({ ...a, path: '' }).toEqual({ ...b, path: '' });
  });

  it('writes exactly round(mb × MiB) payload bytes, including zero-length entries', async () => {
    const dir = await makeTempRoot();
    const made = await makeCheckpoint({
      out: join(dir, 'frac.spwc'),
      mb: 0.3,
      gates: 3,
      channels: 2,
      maxEntryBytes: 4096,
    });
    expect(made.payloadBytes).toBe(Math.round(0.3 * MIB));
    expect(made.fileBytes).toBe((await stat(made.path)).size);
    const got = await collect(made.path);
    expect(got.summary).toEqual({
      entries: made.entries,
      payloadBytes: made.payloadBytes,
      version: 1,
      fileBytes: made.fileBytes,
    });
    const lengths = got.entries.map((e) => e.length);
    expect(lengths.filter((l) => l === 0).length).toBeGreaterThan(made.entries / 14);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(4096);
    expect(got.entries.every((e) => e.gate < 3 && e.channel < 2)).toBe(true);
  });

  it('per-channel byte totals match `channels`', async () => {
    const dir = await makeTempRoot();
    const made = await makeCheckpoint({ out: join(dir, 'ch.spwc'), mb: 8, seed: 9 });
    const got = await collect(made.path);
    expect(made.channels.map((c) => channelKey(c)).sort()).toEqual([...got.channels.keys()].sort());
    for (const c of made.channels) {
      expect(got.channels.get(channelKey(c))!.length).toBe(c.bytes);
    }
    expect(made.channels.reduce((s, c) => s + c.bytes, 0)).toBe(8 * MIB);
    // Defaults: 2 gates × 4 channels, listed sorted by gate, then channel.
    expect(made.channels.map((c) => [c.gate, c.channel])).toEqual([
      [0, 0],
      [0, 1],
      [0, 2],
      [0, 3],
      [1, 0],
      [1, 1],
      [1, 2],
      [1, 3],
    ]);
  });

  it('mb 0 gives a header-only file; zeroLengthEvery 0 gives no empty entries', async () => {
    const dir = await makeTempRoot();
    const none = await makeCheckpoint({ out: join(dir, 'none.spwc'), mb: 0 });
    expect(none).toMatchObject({ entries: 0, payloadBytes: 0, fileBytes: 8, channels: [] });
    const full = await makeCheckpoint({
      out: join(dir, 'full.spwc'),
      mb: 0.25,
      zeroLengthEvery: 0,
      maxEntryBytes: 1000,
    });
    const got = await collect(full.path);
    expect(got.entries.every((e) => e.length > 0)).toBe(true);
  });

  it('rejects bad options with RangeError before creating anything', async () => {
    const dir = await makeTempRoot();
    const out = join(dir, 'x.spwc');
    for (const bad of [
      { zeroLengthEvery: 1 },
      { gates: 0 },
      { channels: 65537 },
      { mb: -1 },
      { mb: Number.NaN },
      { maxEntryBytes: 0 },
    ]) {
      await expect(makeCheckpoint({ out, ...bad })).rejects.toThrow(RangeError);
    }
    expect(await readdir(dir)).toEqual([]);
  });

  it('a write fault deletes the partial file and propagates', async () => {
    const dir = await makeTempRoot();
    seam.injectFault({ op: 'write', code: 'ENOSPC', nth: 3 });
    const error = await makeCheckpoint({ out: join(dir, 'f.spwc'), mb: 8 }).catch(
      (e: unknown) => e,
    );
    expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
    expect(await readdir(dir)).toEqual([]);
    expectClosedEverything();
  });
});
