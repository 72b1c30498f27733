/**
 * The Flink channel-state reader reads ahead as the SPWC reader does
 * (src/services/formats/flink/channel-state.ts): in a dense local stream the next chunk's read
 * is already issued when the current chunk is handed to the visitor, and so in a shared one
 * (other subtasks' entries between the selected ones) whose selected entries are at least 15 %
 * of it; a sparser one is read one selected entry at a time, so its foreign bytes are not
 * read. Either way every selected byte reaches the visitor once, in order, with its CRC.
 */
import { open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { crc32 } from '../../src/services/crc32.ts';
import {
  readDelegateEntries,
  type DelegateHandle,
} from '../../src/services/formats/flink/channel-state.ts';
import type {
  FlinkChannelHandle,
  FlinkStreamHandle,
} from '../../src/services/formats/flink/metadata-types.ts';
import type { DelegateLocation } from '../../src/services/formats/flink/paths.ts';
import { macrotasks } from '../helpers/async.ts';
import { expectPoolWaitsForReadAhead } from '../helpers/read-ahead-pool.ts';
import { seam } from '../helpers/fault-seam.ts';
import { patternBytes } from '../helpers/spill.ts';
import { makeTempRoot } from '../helpers/temp.ts';

afterEach(() => seam.resetFsSeam());

/** One entry of the stream: whose it is and its payload. */
interface Entry {
  channel: number;
  body: Buffer;
}

/**
 * A channel-state stream as Flink's ChannelStateSerializerImpl writes it (int32 version 0,
 * then `[int32 length][bytes]` per entry), and one handle per channel naming its entries.
 */
async function writeStream(
  entries: Entry[],
): Promise<{ where: DelegateLocation; handles: DelegateHandle[] }> {
  const parts: Buffer[] = [Buffer.alloc(4)];
  const byChannel = new Map<number, { offsets: number[]; stateSize: number }>();
  let at = 4;
  for (const { channel, body } of entries) {
    const length = Buffer.alloc(4);
    length.writeInt32BE(body.length);
    parts.push(length, body);
    const h = byChannel.get(channel) ?? { offsets: [], stateSize: 0 };
    h.offsets.push(at);
    h.stateSize += 4 + body.length;
    byChannel.set(channel, h);
    at += 4 + body.length;
  }
  const path = join(await makeTempRoot(), 'channel-state');
  await writeFile(path, Buffer.concat(parts));
  const handles = [...byChannel].map(([channel, h]): DelegateHandle => {
    const handle: FlinkChannelHandle = {
      side: 'input',
      subtaskIndex: 0,
      gate: 0,
      channel,
      offsets: h.offsets,
      stateSize: h.stateSize,
      // The reader is handed the stream's location; the handle's own reference is not read.
      delegate: {} as FlinkStreamHandle,
      metadataOffset: 0,
    };
    return { handle, subtask: 0 };
  });
  const where: DelegateLocation = {
    location: path,
    start: 0,
    length: at,
    shown: path,
    redirects: 'refuse',
    key: path,
  };
  return { where, handles };
}

/** Reads `handles` and returns each channel's bytes and the reads issued at the first payload. */
async function read(
  where: DelegateLocation,
  handles: DelegateHandle[],
  chunk: number,
): Promise<{ got: Map<number, Buffer>; readsAtFirstPayload: number | undefined }> {
  const got = new Map<number, Buffer[]>();
  let current = -1;
  let readsAtFirstPayload: number | undefined;
  await readDelegateEntries(
    where,
    handles,
    {
      onEntry: (_gate, channel) => void (current = channel),
      onPayload: (bytes, crc) => {
        readsAtFirstPayload ??= seam.fsOpCounts().read;
        expect(crc).toBe(crc32(bytes));
        const list = got.get(current) ?? [];
        list.push(Buffer.from(bytes)); // borrowed during the call only: copied
        got.set(current, list);
      },
    },
    { readChunkBytes: chunk },
  );
  return {
    got: new Map([...got].map(([c, parts]) => [c, Buffer.concat(parts)])),
    readsAtFirstPayload,
  };
}

function expected(entries: Entry[], channels?: Set<number>): Map<number, Buffer> {
  const out = new Map<number, Buffer[]>();
  for (const { channel, body } of entries) {
    if (channels !== undefined && !channels.has(channel)) continue;
    out.set(channel, [...(out.get(channel) ?? []), body]);
  }
  return new Map([...out].map(([c, parts]) => [c, Buffer.concat(parts)]));
}

/** 40 entries of 0–70 bytes over three channels: headers and payloads straddle small chunks. */
const ENTRIES: Entry[] = Array.from({ length: 40 }, (_, i) => ({
  channel: i % 3,
  body: patternBytes((i * 37) % 71, i),
}));

describe('Flink channel-state read-ahead', () => {
  it('a dense local stream has its next chunk read issued before the first payload is handed on, and every byte arrives in order at any chunk size', async () => {
    const { where, handles } = await writeStream(ENTRIES);
    for (const chunk of [16, 64, 1024 * 1024]) {
      seam.resetFsSeam();
      const { got, readsAtFirstPayload } = await read(where, handles, chunk);
      expect(got, `chunk ${chunk}`).toEqual(expected(ENTRIES));
      if (chunk < where.length) expect(readsAtFirstPayload, `chunk ${chunk}`).toBe(2);
      else expect(readsAtFirstPayload, 'one chunk holds it all: nothing to read ahead').toBe(1);
    }
  });

  it('a sparse shared stream (the selected entries under 15 % of it) is not read ahead: its first payload comes with only the header and that entry read', async () => {
    const sparse = Array.from({ length: 80 }, (_, i) => ({
      channel: i % 8,
      body: patternBytes(200 + (i % 40), i),
    }));
    const { where, handles } = await writeStream(sparse);
    const mine = handles.filter((h) => h.handle.channel === 1); // an eighth of the stream
    seam.resetFsSeam();
    // 64-byte chunks: the header's read ends inside channel 0's first entry.
    const { got, readsAtFirstPayload } = await read(where, mine, 64);
    expect(got).toEqual(expected(sparse, new Set([1])));
    expect(readsAtFirstPayload).toBe(2); // the stream header's, then channel 1's first entry's
    // In 1 KiB chunks (each entry fits one): the header's read (which holds the first selected
    // entry too), then one per selected entry: 10 in all, never a chunk of others' bytes.
    seam.resetFsSeam();
    await read(where, mine, 1024);
    expect(seam.fsOpCounts().read).toBe(10);
  });

  it('a shared stream whose selected entries are a third of it (Flink merges up to 5 subtasks into a file) is read in whole chunks, ahead: one read per chunk, not per entry, each selected byte once', async () => {
    const big = ENTRIES.map((e, i) => ({ ...e, body: patternBytes(200 + i, i) }));
    const { where, handles } = await writeStream(big);
    const mine = handles.filter((h) => h.handle.channel === 1); // a third of the stream
    seam.resetFsSeam();
    const { got } = await read(where, mine, 1024);
    expect(got).toEqual(expected(big, new Set([1])));
    // A read ahead that began before the next selected entry (other channels' bytes first) is
    // used, not dropped and read again: about one read per 1 KiB of the stream.
    expect(seam.fsOpCounts().read).toBeLessThanOrEqual(Math.ceil(where.length / 1024) + 1);
    expect(seam.fsOpCounts().read).toBeLessThan(mine[0]!.handle.offsets.length);
  });

  it('G9 G6 a shared stream read in chunks: a corrupt length in another subtask’s entry does not matter, in a selected one the error names its byte; a read ahead failing where it is not wanted changes nothing', async () => {
    const big = ENTRIES.map((e, i) => ({ ...e, body: patternBytes(200 + i, i) }));
    const { where, handles } = await writeStream(big);
    const mine = handles.filter((h) => h.handle.channel === 1); // a third: read in chunks
    const theirs = handles.find((h) => h.handle.channel === 0)!.handle.offsets;
    const bytes = await readFile(where.location);
    bytes.writeInt32BE(0x7fffffff, theirs[1]!);
    bytes.writeInt32BE(-5, theirs[2]!);
    await writeFile(where.location, bytes);
    expect((await read(where, mine, 64)).got).toEqual(expected(big, new Set([1])));
    // EIO at each read of the stream in turn: the run fails with it, or (a read ahead whose
    // bytes were not wanted) delivers every selected byte once, in order.
    seam.resetFsSeam();
    await read(where, mine, 64);
    const reads = seam.fsOpCounts().read;
    let unharmed = 0;
    for (let nth = 1; nth <= reads; nth++) {
      seam.resetFsSeam();
      seam.injectFault({ op: 'read', nth, code: 'EIO', pathIncludes: 'channel-state' });
      const run = await read(where, mine, 64).catch((e: unknown) => e as Error);
      if (run instanceof Error) expect(run.message, `read #${nth}`).toContain('EIO');
      else {
        expect(run.got, `read #${nth}`).toEqual(expected(big, new Set([1])));
        unharmed++;
      }
    }
    // Not only the last read ahead (released unread): those that began before a selected
    // entry and failed are dropped and read again (14 of 67 here; 1 if their error is thrown).
    expect(unharmed).toBeGreaterThan(1);
    seam.resetFsSeam();
    const at = mine[0]!.handle.offsets[3]!;
    bytes.writeInt32BE(0x7fffff00, at);
    await writeFile(where.location, bytes);
    const error = await read(where, mine, 64).catch((e: unknown) => e as Error);
    expect(error).toMatchObject({ name: 'CorruptCheckpointError' });
    expect((error as Error).message).toContain(`at byte ${at}:`);
  });

  it('G6 entries whose offset × handle count passes 2^53 (a 16 TiB sparse stream, 1,024 handles) are still read in offset order, ties by handle', async () => {
    // The reader sorts `offset × handles + handle` as one number; past 2^53 that number is not
    // exact, and the entries are sorted as pairs instead. A sparse file reaches that range.
    const k = 1024;
    const base = 2 ** 44 - 1024 * 1024; // just under ext4's largest file; zeros before it
    const path = join(await makeTempRoot(), 'channel-state');
    const file = await open(path, 'w');
    const bodies: Buffer[] = [];
    try {
      const entries = Buffer.alloc(k * 8);
      for (let i = 0; i < k; i++) {
        entries.writeInt32BE(4, i * 8);
        entries.writeUInt32BE(i, i * 8 + 4);
        bodies.push(entries.subarray(i * 8 + 4, i * 8 + 8));
      }
      await file.write(entries, 0, entries.length, base);
    } finally {
      await file.close();
    }
    // Handle h names the entry at base + (k - 1 - h) × 8: in offset order the handles descend.
    const handles = Array.from({ length: k }, (_, h): DelegateHandle => {
      const handle: FlinkChannelHandle = {
        side: 'input',
        subtaskIndex: 0,
        gate: 0,
        channel: h,
        offsets: [base + (k - 1 - h) * 8],
        stateSize: 8,
        delegate: {} as FlinkStreamHandle,
        metadataOffset: 0,
      };
      return { handle, subtask: 0 };
    });
    const length = base + k * 8;
    const where: DelegateLocation = {
      location: path,
      start: 0,
      length,
      shown: path,
      redirects: 'refuse',
      key: path,
    };
    expect(length * k).toBeGreaterThan(Number.MAX_SAFE_INTEGER);
    const seen: [number, Buffer][] = [];
    let current = -1;
    await readDelegateEntries(where, handles, {
      onEntry: (_gate, channel) => void (current = channel),
      onPayload: (bytes) => void seen.push([current, Buffer.from(bytes)]),
    });
    expect(seen.map(([c]) => c)).toEqual(handles.map((_, h) => k - 1 - h));
    expect(seen.map(([, b]) => b)).toEqual(bodies);
  });

  it('a visitor that returns promises (entries and payloads) gets every byte once, in order, at any chunk size', async () => {
    const { where, handles } = await writeStream(ENTRIES);
    for (const chunk of [16, 64, 1024 * 1024]) {
      const got = new Map<number, Buffer[]>();
      let current = -1;
      await readDelegateEntries(
        where,
        handles,
        {
          onEntry: async (_gate, channel) => {
            await macrotasks();
            current = channel;
          },
          onPayload: async (bytes) => {
            const copy = Buffer.from(bytes); // borrowed during the call only
            await macrotasks();
            got.set(current, [...(got.get(current) ?? []), copy]);
          },
        },
        { readChunkBytes: chunk },
      );
      const joined = new Map([...got].map(([c, parts]) => [c, Buffer.concat(parts)]));
      expect(joined, `chunk ${chunk}`).toEqual(expected(ENTRIES));
    }
  });

  it('G4 a read ahead in flight when the visitor fails keeps the window buffers out of the pool until it settled', async () => {
    const { where, handles } = await writeStream(ENTRIES);
    await expectPoolWaitsForReadAhead(where.location, 64, (visitor) =>
      readDelegateEntries(where, handles, visitor, { readChunkBytes: 64 }),
    );
  });
});
