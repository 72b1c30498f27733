/**
 * The four record-level corruptions of a rescaled recovery (DESIGN.md §3 "Checkpoint
 * file v2"): a partial record at the end, a record shorter than the key, a negative record
 * length, a bad subtask field. Each one, through the CLI, exits 2 with one line naming the file
 * and the offset; through the library it is a `CorruptCheckpointError` at that offset. Either
 * way nothing is left in the spill root or the output dir, though spill files existed by the
 * time the defect was found (a megabyte of valid records comes first).
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startRecovery } from '../../src/recover.ts';
import { CorruptCheckpointError } from '../../src/services/errors.ts';
import { seam } from '../helpers/fault-seam.ts';
import { settle } from '../helpers/async.ts';
import { serializeRecord, type V2Entry } from '../helpers/rescale-reference.ts';
import { V2_ENTRY_HEADER_BYTES, writeV2 } from '../helpers/v2-checkpoints.ts';
import { expectCorruptAt, listTree, makeTempRoot, runRecover, spillLeftovers } from './harness.ts';

afterEach(() => seam.resetFsSeam());

/** ~1 MiB of valid 1 KiB records from old subtask 0, in 16 KiB entries: several spill files. */
function validPrefix(): V2Entry[] {
  const entries: V2Entry[] = [];
  for (let e = 0; e < 64; e++) {
    const records: Buffer[] = [];
    for (let r = 0; r < 16; r++) {
      const body = Buffer.alloc(1020, (e * 16 + r) & 0xff);
      body.writeUInt32BE(e * 16 + r, 0);
      records.push(serializeRecord(body));
    }
    entries.push({ subtask: 0, gate: 0, channel: 0, payload: Buffer.concat(records) });
  }
  return entries;
}

interface Case {
  name: string;
  /** The defective entries appended after the valid prefix. */
  defect: V2Entry[];
  /** The offset the error must name, from the offset of the first defective entry. */
  offset: (firstDefect: number) => number;
  reason: RegExp;
}

const record = (body: string) => serializeRecord(Buffer.from(body));

const cases: Case[] = [
  {
    name: 'partial record at the end',
    // Old subtask 1's channel ends 10 bytes into a 100-byte record, after a whole one.
    defect: [
      {
        subtask: 1,
        gate: 0,
        channel: 1,
        payload: Buffer.concat([record('0123456789'), record('x'.repeat(100)).subarray(0, 14)]),
      },
    ],
    offset: (at) => at + V2_ENTRY_HEADER_BYTES + 14,
    reason: /ends inside a record/,
  },
  {
    name: 'record shorter than the key',
    defect: [{ subtask: 2, gate: 0, channel: 0, payload: record('abc') }],
    offset: (at) => at + V2_ENTRY_HEADER_BYTES,
    reason: /shorter than its 8-byte key/,
  },
  {
    name: 'negative record length',
    // The length field is cut across two entries of the same virtual channel.
    defect: [
      { subtask: 1, gate: 0, channel: 0, payload: Buffer.from([0xff, 0xff]) },
      { subtask: 1, gate: 0, channel: 0, payload: Buffer.from([0xff, 0xf9, 1, 2, 3]) },
    ],
    offset: (at) => at + V2_ENTRY_HEADER_BYTES,
    reason: /negative record length -7/,
  },
  {
    name: 'bad subtask field',
    // 32768 is one past the largest subtask; written as 0 and patched below.
    defect: [{ subtask: 0, gate: 0, channel: 0, payload: record('abcdefgh') }],
    offset: (at) => at,
    reason: /subtask 32768 out of range/,
  },
];

/** Writes prefix + defect to `dir`; returns the file and the offset the error must name. */
async function makeCase(dir: string, c: Case): Promise<{ file: string; offset: number }> {
  const file = join(dir, `${c.name.replace(/\W+/g, '-')}.spwc`);
  const prefix = validPrefix();
  const offsets = await writeV2(file, [...prefix, ...c.defect]);
  const first = offsets[prefix.length]!;
  if (c.name === 'bad subtask field') {
    const { open } = await import('node:fs/promises');
    const handle = await open(file, 'r+');
    const field = Buffer.alloc(4);
    field.writeInt32BE(32768, 0);
    await handle.write(field, 0, 4, first);
    await handle.close();
  }
  return { file, offset: c.offset(first) };
}

describe('rescaled recovery: record-level corruption', () => {
  for (const c of cases) {
    it(`${c.name}: spillway recover --rescale exits 2 naming file and offset, 0 files left`, async () => {
      const dir = await makeTempRoot();
      const root = join(dir, 'root');
      const out = join(dir, 'out');
      await mkdir(root);
      const { file, offset } = await makeCase(dir, c);
      const run = await runRecover(file, out, root, [
        '--max-spill-file-bytes',
        '128K',
        '--rescale',
        '0/1',
      ]);
      expectCorruptAt(run, file, offset, c.reason);
      expect(await spillLeftovers(root)).toEqual([]);
      expect(await listTree(out)).toEqual([]);
    });

    it(`${c.name}: the library rejects with CorruptCheckpointError at that offset, after spilling, 0 files left`, async () => {
      const dir = await makeTempRoot();
      const root = join(dir, 'root');
      await mkdir(root);
      const { file, offset } = await makeCase(dir, c);
      const created: string[] = [];
      seam.setFsHook((op, path) => {
        if (op === 'open' && /spill-segment-\d+\.bin$/.test(path)) created.push(path);
      });
      const recovery = startRecovery({
        checkpoint: file,
        spillRoot: root,
        rescale: { subtask: 0, parallelism: 1 },
        limits: { maxSpillFileBytes: 64 * 1024, maxSegmentBytes: 16 * 1024 },
        channels: () => ({ onBuffer() {}, onFinished() {} }),
      });
      const error = await settle(recovery.done);
      expect(error).toBeInstanceOf(CorruptCheckpointError);
      expect((error as CorruptCheckpointError).file).toBe(file);
      expect((error as CorruptCheckpointError).offset).toBe(offset);
      expect((error as CorruptCheckpointError).reason).toMatch(c.reason);
      expect(created.length).toBeGreaterThan(1);
      // This process's owner dir stays while it lives; no task dir and no spill file may.
      expect((await listTree(root)).filter((p) => /task-|spill-segment/.test(p))).toEqual([]);
    });
  }
});
