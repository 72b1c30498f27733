/**
 * The SPWC v2 codec (DESIGN.md §3 "Checkpoint file v2"): `int32 subtask` before `gate` in every
 * entry header, a v1 entry read as subtask 0, and every malformed v2 field a
 * `CorruptCheckpointError` naming the file and the field's offset.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readCheckpoint } from '../../../src/services/formats/spwc/reader.ts';
import { CheckpointWriter } from '../../../src/services/formats/spwc/writer.ts';
import { CorruptCheckpointError } from '../../../src/services/errors.ts';
import { vector } from '../../helpers/checkpoints.ts';
import { settle } from '../../helpers/async.ts';
import { makeTempRoot } from '../../helpers/temp.ts';
import { writeV2 } from '../../helpers/v2-checkpoints.ts';

type Seen = { subtask: number; gate: number; channel: number; offset: number; payload: string };

async function entries(path: string): Promise<{ version: number; seen: Seen[] }> {
  const seen: Seen[] = [];
  let version = 0;
  await readCheckpoint(path, {
    onVersion: (v) => void (version = v),
    onEntry: (gate, channel, _length, offset, subtask) =>
      void seen.push({ subtask, gate, channel, offset, payload: '' }),
    onPayload: (chunk) => void (seen.at(-1)!.payload += chunk.toString('latin1')),
  });
  return { version, seen };
}

/** Two v2 entries: subtask 5 gate 1 channel 2 "hello" at 8, subtask 0 gate 0 channel 0 "" at 33. */
async function twoEntries(): Promise<string> {
  const path = join(await makeTempRoot(), 'v2.spwc');
  await writeV2(path, [
    { subtask: 5, gate: 1, channel: 2, payload: Buffer.from('hello') },
    { subtask: 0, gate: 0, channel: 0, payload: Buffer.alloc(0) },
  ]);
  return path;
}

describe('SPWC v2 codec', () => {
  it('writes version 2 and a 20-byte entry header led by the subtask, read back with it', async () => {
    const path = await twoEntries();
    const bytes = await readFile(path);
    expect(bytes.subarray(0, 8).toString('hex')).toBe('5350574300000002');
    expect(bytes.readInt32BE(8)).toBe(5); // subtask before gate
    expect(bytes.readInt32BE(12)).toBe(1);
    expect(bytes.length).toBe(8 + 20 + 5 + 20);
    expect(await entries(path)).toEqual({
      version: 2,
      seen: [
        { subtask: 5, gate: 1, channel: 2, offset: 8, payload: 'hello' },
        { subtask: 0, gate: 0, channel: 0, offset: 33, payload: '' },
      ],
    });
  });

  it('a v1 file is read as subtask 0 throughout', async () => {
    const { version, seen } = await entries(vector('tiny.spwc'));
    expect(version).toBe(1);
    expect(seen.map((e) => e.subtask)).toEqual([0, 0, 0, 0]);
  });

  it('the writer refuses a subtask in a v1 file and one outside 0..32767 in a v2 file', async () => {
    const dir = await makeTempRoot();
    const v1 = await CheckpointWriter.create(join(dir, 'a.spwc'));
    await expect(v1.append(0, 0, Buffer.from('x'), 1)).rejects.toThrow(RangeError);
    await v1.discard();
    const v2 = await CheckpointWriter.create(join(dir, 'b.spwc'), { version: 2 });
    await expect(v2.append(0, 0, Buffer.from('x'), 32768)).rejects.toThrow(RangeError);
    await expect(v2.append(0, 0, Buffer.from('x'), -1)).rejects.toThrow(RangeError);
    await v2.discard();
  });

  const defects: [string, (b: Buffer) => void, number, RegExp][] = [
    ['negative subtask', (b) => b.writeInt32BE(-1, 8), 8, /subtask -1 out of range 0\.\.32767/],
    ['subtask 32768', (b) => b.writeInt32BE(32768, 8), 8, /subtask 32768/],
    ['negative gate', (b) => b.writeInt32BE(-1, 12), 12, /gate -1/],
    ['channel 65536', (b) => b.writeInt32BE(65536, 16), 16, /channel 65536/],
    ['negative length', (b) => b.writeInt32BE(-3, 20), 20, /entry length -3/],
    ['CRC mismatch', (b) => void (b[28] ^= 0xff), 24, /crc32 mismatch/],
  ];
  for (const [name, edit, offset, reason] of defects) {
    it(`a v2 ${name} is a CorruptCheckpointError at byte ${offset}`, async () => {
      const path = await twoEntries();
      const bytes = await readFile(path);
      edit(bytes);
      await writeFile(path, bytes);
      const error = await settle(entries(path));
      expect(error).toBeInstanceOf(CorruptCheckpointError);
      expect((error as CorruptCheckpointError).file).toBe(path);
      expect((error as CorruptCheckpointError).offset).toBe(offset);
      expect((error as CorruptCheckpointError).reason).toMatch(reason);
    });
  }

  it('a v2 entry header cut short is a CorruptCheckpointError at its start, naming 20 bytes', async () => {
    const path = await twoEntries();
    const bytes = await readFile(path);
    await writeFile(path, bytes.subarray(0, bytes.length - 4));
    const error = await settle(entries(path));
    expect(error).toBeInstanceOf(CorruptCheckpointError);
    expect((error as CorruptCheckpointError).offset).toBe(33);
    expect((error as CorruptCheckpointError).reason).toMatch(/16 of 20 bytes/);
  });
});
