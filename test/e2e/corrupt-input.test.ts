/**
 * G9 through the CLI: every class of corrupt checkpoint exits 2 with one stderr line
 * naming the file and the byte offset, prints no stack trace, and leaves neither a spill file
 * nor an output file. Each class is made from a valid checkpoint by editing bytes, with the
 * defect near the end so that spill files exist by the time it is found.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { readCheckpoint } from '../../src/services/formats/spwc/reader.ts';
import { vector } from '../helpers/checkpoints.ts';
import { makeTempRoot, removeDir, tempDir } from '../helpers/temp.ts';
import { expectCorruptAt, listTree, runCli, spillLeftovers } from './harness.ts';

interface Entry {
  offset: number;
  length: number;
}

let baseDir: string;
let valid: Buffer;
let entries: Entry[];

beforeAll(async () => {
  baseDir = await tempDir();
  const path = join(baseDir, 'valid.spwc');
  // 3 MiB over 3 channels: with 256 KiB spill files the fetch has spilled several files (1 MiB
  // segments make them ~0.5 MiB each) before it reaches a defect in the last entries.
  await makeCheckpoint({ out: path, gates: 1, channels: 3, mb: 3, seed: 7 });
  valid = await readFile(path);
  entries = [];
  await readCheckpoint(path, {
    onEntry: (_g, _c, length, offset) => void entries.push({ offset, length }),
    onPayload: () => undefined,
  });
});

afterAll(async () => {
  await removeDir(baseDir);
});

const last = (): Entry => entries[entries.length - 1]!;
/** The last entry with a payload of at least 2 bytes (zero-length entries have nothing to cut). */
const lastWithPayload = (): Entry => [...entries].reverse().find((e) => e.length >= 2)!;
const edit = (f: (b: Buffer) => void): Buffer => {
  const b = Buffer.from(valid);
  f(b);
  return b;
};

/** Each class: how to corrupt the valid file, and the byte offset the error must name. */
const classes: [string, () => { bytes: Buffer; offset: number }][] = [
  ['bad magic', () => ({ bytes: edit((b) => b.write('SPWX', 0, 'latin1')), offset: 0 })],
  ['bad version', () => ({ bytes: edit((b) => b.writeUInt32BE(3, 4)), offset: 4 })],
  [
    'a negative length',
    () => ({
      bytes: edit((b) => b.writeInt32BE(-5, last().offset + 8)),
      offset: last().offset + 8,
    }),
  ],
  [
    'an oversized length',
    () => ({
      bytes: edit((b) => b.writeInt32BE(268435457, last().offset + 8)),
      offset: last().offset + 8,
    }),
  ],
  [
    'a truncated entry header',
    () => ({ bytes: valid.subarray(0, last().offset + 10), offset: last().offset }),
  ],
  ['a truncated file header', () => ({ bytes: valid.subarray(0, 5), offset: 5 })],
  [
    'a truncated payload',
    () => {
      const e = lastWithPayload();
      const cut = e.offset + 16 + 1;
      return { bytes: valid.subarray(0, cut), offset: cut };
    },
  ],
  [
    'a CRC mismatch',
    () => {
      const e = lastWithPayload();
      return { bytes: edit((b) => void (b[e.offset + 16] ^= 0xff)), offset: e.offset + 12 };
    },
  ],
  [
    'a negative gate',
    () => ({ bytes: edit((b) => b.writeInt32BE(-1, last().offset)), offset: last().offset }),
  ],
  [
    'an out-of-range channel',
    () => ({
      bytes: edit((b) => b.writeInt32BE(65536, last().offset + 4)),
      offset: last().offset + 4,
    }),
  ],
  ['an empty file', () => ({ bytes: Buffer.alloc(0), offset: 0 })],
  [
    'garbage',
    () => {
      // Deterministic noise that cannot start with "S".
      const bytes = Buffer.alloc(64 * 1024);
      let x = 0x2545f491;
      for (let i = 0; i < bytes.length; i++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        bytes[i] = x & 0xff;
      }
      bytes[0] = 0x00;
      return { bytes, offset: 0 };
    },
  ],
  [
    'a trailing partial entry',
    () => ({ bytes: Buffer.concat([valid, Buffer.alloc(7, 1)]), offset: valid.length }),
  ],
];

/** Runs `spillway recover` on `file` and checks the whole bad-input contract. */
async function expectRejected(file: string, offset: number): Promise<void> {
  const dir = await makeTempRoot();
  const root = join(dir, 'root');
  const out = join(dir, 'out');
  await mkdir(root);
  const run = await runCli([
    'recover',
    file,
    '--out',
    out,
    '--spill-root',
    root,
    '--max-spill-file-bytes',
    '256K',
  ]);
  expectCorruptAt(run, file, offset);
  expect(run.stdout).toBe('');
  expect(await spillLeftovers(root)).toEqual([]);
  expect(await listTree(out)).toEqual([]);
}

describe('G9 corrupt checkpoints through spillway recover', () => {
  it('the valid base checkpoint recovers (so each defect below is the only reason to fail)', async () => {
    const dir = await makeTempRoot();
    await mkdir(join(dir, 'root'));
    const file = join(dir, 'valid.spwc');
    await writeFile(file, valid);
    const run = await runCli([
      'recover',
      file,
      '--out',
      join(dir, 'out'),
      '--spill-root',
      join(dir, 'root'),
      '--max-spill-file-bytes',
      '256K',
      '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { spillFiles: number }).spillFiles).toBeGreaterThanOrEqual(4);
  });

  for (const [name, make] of classes) {
    it(`G9 ${name} exits 2 with one line naming file and offset, leaving no spill or output file`, async () => {
      const { bytes, offset } = make();
      const dir = await makeTempRoot();
      const file = join(dir, `${name.replace(/\W+/g, '-')}.spwc`);
      await writeFile(file, bytes);
      await expectRejected(file, offset);
    });
  }

  const vectors: [string, number][] = [
    ['corrupt-bad-magic.spwc', 0],
    ['corrupt-crc-mismatch.spwc', 73],
    ['corrupt-negative-length.spwc', 16],
    ['corrupt-truncated-payload.spwc', 77],
  ];
  for (const [name, offset] of vectors) {
    it(`G9 the test vector ${name} exits 2 naming byte ${offset}`, async () => {
      await expectRejected(vector(name), offset);
    });
  }
});
