/**
 * Hostile `_metadata` (DESIGN §7 "Bad input"): every malformed field — a truncation at any byte,
 * a negative count or length, an unknown tag, a declared count or length larger than what
 * remains, an int64 that is not a safe integer, bad magic, an unsupported version, a duplicate
 * channel — is a CorruptCheckpointError naming the file and a byte offset within it; never
 * another error type, never a hang, memory bounded by the file whatever it declares. The CLI
 * says so in one line with exit 2.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptCheckpointError } from '../../src/services/errors.ts';
import { listFlinkCheckpoint } from '../../src/services/formats/flink/list.ts';
import { parseMetadata, readFlinkMetadata } from '../../src/services/formats/flink/metadata.ts';
import { MetadataInput } from '../../src/services/formats/flink/metadata-input.ts';
import type { CheckpointByteSource } from '../../src/services/locations/source.ts';
import { listFlinkFixtures } from '../helpers/flink-expected.ts';
import {
  buildFlinkMetadataWithMarks,
  opId,
  type MetadataSpec,
  type StreamSpec,
} from '../helpers/flink-metadata-builder.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { runCli } from '../e2e/harness.ts';

/** The bytes of `buf` as a checkpoint byte source: the reader's own seam, fed from memory. */
function memorySource(buf: Buffer): CheckpointByteSource {
  return {
    read: (target, offset, length, position) =>
      Promise.resolve(buf.copy(target, offset, position, Math.min(buf.length, position + length))),
    close: () => Promise.resolve(),
  };
}

/** Parses `bytes` as the file `name`; resolves to the error it was refused with (or undefined). */
async function refusal(bytes: Buffer, name = 'hostile/_metadata'): Promise<unknown> {
  const input = new MetadataInput(memorySource(bytes), bytes.length, name);
  return parseMetadata(input, name).then(
    () => undefined,
    (e: unknown) => e,
  );
}

/** Expects `bytes` refused as corrupt at `offset` (or within [0, size] when not given). */
async function expectCorrupt(bytes: Buffer, reason: RegExp, offset?: number): Promise<void> {
  const error = await refusal(bytes);
  expect(error).toBeInstanceOf(CorruptCheckpointError);
  const e = error as CorruptCheckpointError;
  expect(e.file).toBe('hostile/_metadata');
  expect(e.reason).toMatch(reason);
  if (offset !== undefined) expect(e.offset).toBe(offset);
  expect(e.offset).toBeGreaterThanOrEqual(0);
  expect(e.offset).toBeLessThanOrEqual(bytes.length);
}

const inline = (data: Buffer): StreamSpec => ({ kind: 'inline', name: 'blob', data });
const ENTRY = Buffer.from([0, 0, 0, 0, 0, 0, 0, 2, 7, 8]);

/** One operator, one subtask, one input and one output channel (v6: a merged output). */
function spec(version: number): MetadataSpec {
  return {
    version,
    checkpointId: 9,
    masterStates: [{ version: 1, name: 'm', bytes: Buffer.from('xy') }],
    operators: [
      {
        id: opId(0xabc),
        name: 'op',
        uid: 'op-uid',
        parallelism: 2,
        maxParallelism: 8,
        subtasks: [
          {
            index: 0,
            managedOperator: {
              kind: 'stream',
              states: [{ name: 's', mode: 0, offsets: [1] }],
              delegate: { kind: 'file', path: '/f', size: 10 },
            },
            managedKeyed: {
              kind: 'key-groups',
              tag: 12,
              start: 0,
              offsets: [0, 1],
              delegate: { kind: 'relative', relativePath: 'k', size: 10 },
            },
            inputs: [
              {
                subtaskIndex: 0,
                gate: 0,
                channel: 0,
                offsets: [4],
                stateSize: 10,
                delegate: inline(ENTRY),
              },
            ],
            outputs:
              version >= 6
                ? [
                    {
                      merged: true,
                      subtaskIndex: 0,
                      delegate: { kind: 'file', path: '/out', size: 100 },
                      channels: [
                        { gate: 0, channel: 0, stateSize: 6, offsets: [4] },
                        { gate: 0, channel: 1, stateSize: 6, offsets: [10] },
                      ],
                    },
                  ]
                : [
                    {
                      subtaskIndex: 0,
                      gate: 0,
                      channel: 1,
                      offsets: [4],
                      stateSize: 6,
                      delegate: { kind: 'file', path: '/out', size: 100 },
                    },
                  ],
          },
          { index: 1, finished: true },
        ],
      },
    ],
  };
}

function patched(bytes: Buffer, offset: number, patch: Buffer): Buffer {
  const copy = Buffer.from(bytes);
  patch.copy(copy, offset);
  return copy;
}
const i32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(v | 0);
  return b;
};
const i64 = (v: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(v);
  return b;
};

/** Where a v3–v5 input handle's delegate type byte is: after 4 ints, its offsets and its size. */
const delegateTypeAt = (handleAt: number, offsets: number) => handleAt + 16 + 8 * offsets + 8;

describe('a truncation at every byte is a CorruptCheckpointError naming the file and an offset in it', () => {
  const real = listFlinkFixtures()
    .filter((f) => f.variant === 'file' || f.variant === 'merging')
    .map((f) => ({ name: f.name, bytes: readFileSync(join(f.checkpoint, '_metadata')) }));

  it('there is a real _metadata to cut', () => {
    expect(real.length).toBeGreaterThan(0);
  });

  const cases = [
    ...real.map((r) => [`real ${r.name}`, () => r.bytes] as const),
    ...[3, 4, 5, 6].map(
      (v) => [`synthetic v${v}`, () => buildFlinkMetadataWithMarks(spec(v)).bytes] as const,
    ),
  ];
  for (const [name, make] of cases) {
    it(`${name}: every prefix is refused, none parses, none throws anything else`, async () => {
      const bytes = make();
      // The whole file parses: what fails below fails because of the cut.
      expect(await refusal(bytes)).toBeUndefined();
      // Plain checks in the loop (one expect per cut would dominate the run), listed at the end.
      const wrong: string[] = [];
      for (let cut = 0; cut < bytes.length; cut++) {
        const error = await refusal(bytes.subarray(0, cut));
        if (
          !(error instanceof CorruptCheckpointError) ||
          error.file !== 'hostile/_metadata' ||
          error.offset < 0 ||
          error.offset > cut
        ) {
          wrong.push(`cut at ${cut}: ${String(error)}`);
        }
      }
      expect(wrong).toEqual([]);
    }, 180_000);
  }

  it('cut files on disk, read by path (file and directory), are refused the same way', async () => {
    const dir = await makeTempRoot();
    const bytes = real[0]?.bytes ?? buildFlinkMetadataWithMarks(spec(4)).bytes;
    const file = join(dir, '_metadata');
    for (let cut = 0; cut < bytes.length; cut += 97) {
      await writeFile(file, bytes.subarray(0, cut));
      const error = await readFlinkMetadata(cut % 2 === 0 ? dir : file).catch((e: unknown) => e);
      expect(error, `cut ${cut}`).toBeInstanceOf(CorruptCheckpointError);
      expect((error as CorruptCheckpointError).file).toBe(file);
      expect((error as CorruptCheckpointError).offset).toBeLessThanOrEqual(cut);
    }
  });
});

describe('malformed fields name their offset', () => {
  it('bad magic, and versions 1, 2 and 7, are refused naming what was found', async () => {
    const good = buildFlinkMetadataWithMarks(spec(4)).bytes;
    await expectCorrupt(
      patched(good, 0, i32(0x12345678)),
      /not a Flink _metadata file \(magic 0x12345678/,
      0,
    );
    for (const version of [1, 2, 7, -1]) {
      await expectCorrupt(
        patched(good, 4, i32(version)),
        new RegExp(`unsupported Flink metadata version ${version} \\(supported: 3, 4, 5, 6\\)`),
        4,
      );
    }
  });

  it('negative counts: master states, operators, channel handles, offsets', async () => {
    for (const version of [3, 6]) {
      const { bytes, marks } = buildFlinkMetadataWithMarks(spec(version));
      const at = (k: string) => marks.get(k)!;
      await expectCorrupt(
        patched(bytes, at('master count'), i32(-1)),
        /negative master state count -1/,
        at('master count'),
      );
      await expectCorrupt(
        patched(bytes, at('operator count'), i32(-5)),
        /negative operator count -5/,
        at('operator count'),
      );
      const inputs = at('operator 0 subtask 0 input count');
      await expectCorrupt(
        patched(bytes, inputs, i32(-2)),
        /negative input channel handle count -2/,
        inputs,
      );
      const outputs = at('operator 0 subtask 0 output count');
      await expectCorrupt(
        patched(bytes, outputs, i32(-3)),
        /negative result subpartition handle count/,
        outputs,
      );
      // The input handle's offset count (v6: after the type byte).
      const handle = at('operator 0 subtask 0 input 0') + (version >= 6 ? 1 : 0);
      await expectCorrupt(
        patched(bytes, handle + 12, i32(-1)),
        /negative input channel handle offset count -1/,
        handle + 12,
      );
      await expectCorrupt(
        patched(bytes, handle + 4, i32(-1)),
        /negative input channel handle gate index -1/,
        handle + 4,
      );
    }
  });

  it('a huge declared count fails at once, before anything is allocated for it', async () => {
    const { bytes, marks } = buildFlinkMetadataWithMarks(spec(5));
    const inputs = marks.get('operator 0 subtask 0 input count')!;
    const before = process.memoryUsage().heapUsed;
    await expectCorrupt(
      patched(bytes, inputs, i32(0x7fffffff)),
      /input channel handle count 2147483647 cannot fit: at least \d+ byte\(s\) needed, \d+ remain/,
      inputs,
    );
    await expectCorrupt(
      patched(bytes, marks.get('operator count')!, i32(0x7fffffff)),
      /operator count 2147483647 cannot fit/,
    );
    await expectCorrupt(
      patched(bytes, marks.get('master count')!, i32(0x7fffffff)),
      /master state count 2147483647 cannot fit/,
    );
    const handle = marks.get('operator 0 subtask 0 input 0')!;
    await expectCorrupt(
      patched(bytes, handle + 12, i32(0x7fffffff)),
      /offset count 2147483647 cannot fit/,
      handle + 12,
    );
    // Bounded: nothing near 2^31 handles (or 16 GiB of offsets) was ever allocated.
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(64 * 1024 * 1024);
  });

  it('a declared length larger than what remains: inline bytes, a merged channel blob, a master state', async () => {
    const v3 = buildFlinkMetadataWithMarks(spec(3));
    const handle = v3.marks.get('operator 0 subtask 0 input 0')!;
    // The inline delegate: type byte, name ('blob': 2 + 4 bytes), then its int32 length.
    const lengthAt = delegateTypeAt(handle, 1) + 1 + 6;
    await expectCorrupt(
      patched(v3.bytes, lengthAt, i32(0x7fffffff)),
      /truncated .*inline bytes: needs 2147483647 byte\(s\)/,
      lengthAt + 4,
    );
    await expectCorrupt(
      patched(v3.bytes, lengthAt, i32(-4)),
      /negative .*inline length -4/,
      lengthAt,
    );
    // A master state: magic, then a length that runs past the end.
    const masterLength = v3.marks.get('master count')! + 8;
    await expectCorrupt(patched(v3.bytes, masterLength, i32(1 << 30)), /truncated master state/);
    await expectCorrupt(
      patched(v3.bytes, masterLength, i32(0)),
      /zero or negative master state length 0/,
      masterLength,
    );

    const v6 = buildFlinkMetadataWithMarks(spec(6));
    const merged = v6.marks.get('operator 0 subtask 0 output 0')!;
    // Type, subtask index, size, delegate (type, size, path '/out'), then the blob length.
    const blobAt = merged + 1 + 4 + 8 + 1 + 8 + 2 + 4;
    await expectCorrupt(
      patched(v6.bytes, blobAt, i32(1 << 30)),
      /truncated merged result subpartition handle channel blob/,
      blobAt + 4,
    );
    // A channel count inside the blob larger than the blob.
    await expectCorrupt(
      patched(v6.bytes, blobAt + 4, i32(1000)),
      /channel count 1000 cannot fit in the channel blob/,
      blobAt + 4,
    );
  });

  it('unknown tags: stream handle, keyed handle, operator state handle, v6 channel handle, mode, scope', async () => {
    const v3 = buildFlinkMetadataWithMarks(spec(3));
    const handle = v3.marks.get('operator 0 subtask 0 input 0')!;
    const typeAt = delegateTypeAt(handle, 1);
    await expectCorrupt(
      patched(v3.bytes, typeAt, Buffer.from([99])),
      /unknown stream handle type 99/,
      typeAt,
    );
    // A stream handle kind that is not allowed here: key groups as a channel delegate.
    await expectCorrupt(
      patched(v3.bytes, typeAt, Buffer.from([7])),
      /unknown stream handle type 7/,
      typeAt,
    );
    // Subtask 0: index (4), managed-operator flag (4), then the operator state handle's type.
    const subtask = v3.marks.get('operator 0 subtask 0')!;
    await expectCorrupt(
      patched(v3.bytes, subtask + 8, Buffer.from([5])),
      /unknown operator state handle type 5/,
      subtask + 8,
    );
    // Its first state's mode: type (1), count (4), name 's' (3).
    await expectCorrupt(
      patched(v3.bytes, subtask + 8 + 8, Buffer.from([3])),
      /unknown distribution mode 3/,
      subtask + 16,
    );
    // The managed keyed handle: after the operator state (…, offsets, file delegate '/f') and the raw flag.
    const keyedAt = subtask + 8 + 1 + 4 + 3 + 1 + 4 + 8 + 1 + 8 + 2 + 2 + 4;
    await expectCorrupt(
      patched(v3.bytes, keyedAt, Buffer.from([0x80])),
      /unknown keyed state handle type -128/,
      keyedAt,
    );

    const v6 = buildFlinkMetadataWithMarks(spec(6));
    const input = v6.marks.get('operator 0 subtask 0 input 0')!;
    await expectCorrupt(
      patched(v6.bytes, input, Buffer.from([2])),
      /unknown input state handle type 2/,
      input,
    );
    const output = v6.marks.get('operator 0 subtask 0 output 0')!;
    await expectCorrupt(
      patched(v6.bytes, output, Buffer.from([3])),
      /unknown output state handle type 3/,
      output,
    );
  });

  it('int64s that are not safe integers, and a negative checkpoint id or offset', async () => {
    const { bytes, marks } = buildFlinkMetadataWithMarks(spec(4));
    const id = marks.get('checkpoint id')!;
    await expectCorrupt(
      patched(bytes, id, i64(2n ** 53n)),
      /checkpoint id 9007199254740992 is not a safe integer/,
      id,
    );
    await expectCorrupt(patched(bytes, id, i64(-1n)), /invalid checkpoint id -1/, id);
    const handle = marks.get('operator 0 subtask 0 input 0')!;
    await expectCorrupt(
      patched(bytes, handle + 16, i64(2n ** 62n)),
      /offset 4611686018427387904 is not a safe integer/,
      handle + 16,
    );
    await expectCorrupt(
      patched(bytes, handle + 16, i64(-4n)),
      /negative input channel handle offset -4/,
      handle + 16,
    );
    await expectCorrupt(
      patched(bytes, handle + 24, i64(-1n)),
      /negative input channel handle state size -1/,
      handle + 24,
    );
    // An offset past its inline delegate's bytes.
    await expectCorrupt(
      patched(bytes, handle + 16, i64(100n)),
      /entry offset 100 leaves no room/,
      handle,
    );
  });

  it('a channel named twice in one subtask, a subtask twice, a subtask past the parallelism', async () => {
    const dupe = spec(3);
    const s0 = dupe.operators[0]!.subtasks[0]!;
    s0.inputs = [s0.inputs![0]!, { ...(s0.inputs![0] as object), offsets: [4] } as never];
    const a = buildFlinkMetadataWithMarks(dupe);
    await expectCorrupt(
      a.bytes,
      /input channel \(gate 0, channel 0\) has two handles/,
      a.marks.get('operator 0 subtask 0 input 1'),
    );

    const mergedDupe = spec(6);
    const out = mergedDupe.operators[0]!.subtasks[0]!.outputs![0] as {
      channels: { channel: number }[];
    };
    out.channels[1]!.channel = 0;
    await expectCorrupt(
      buildFlinkMetadataWithMarks(mergedDupe).bytes,
      /result subpartition \(partition 0, subpartition 0\) has two handles/,
    );

    const twice = spec(4);
    twice.operators[0]!.subtasks[1] = { index: 0, finished: true };
    const t = buildFlinkMetadataWithMarks(twice);
    await expectCorrupt(t.bytes, /subtask 0 appears twice/, t.marks.get('operator 0 subtask 0'));

    const past = spec(4);
    past.operators[0]!.subtasks[1] = { index: 2, finished: true };
    await expectCorrupt(
      buildFlinkMetadataWithMarks(past).bytes,
      /subtask index 2 is not below parallelism 2/,
    );

    const para = spec(4);
    para.operators[0]!.parallelism = 9;
    await expectCorrupt(
      buildFlinkMetadataWithMarks(para).bytes,
      /parallelism 9 is not between 0 and max parallelism 8/,
    );
  });

  it('coordinator state: only inline bytes, and none for a fully finished operator', async () => {
    const file = spec(5);
    file.operators[0]!.coordinator = { kind: 'file', path: '/c', size: 3 };
    await expectCorrupt(
      buildFlinkMetadataWithMarks(file).bytes,
      /coordinator state must be inline bytes, found a file handle/,
    );
    const finished = spec(5);
    finished.operators[0]!.coordinator = inline(Buffer.from('c'));
    finished.operators[0]!.fullyFinished = true;
    await expectCorrupt(
      buildFlinkMetadataWithMarks(finished).bytes,
      /a fully finished operator has coordinator state/,
    );
  });

  it('handles nested without end (key groups in key groups) stop at a fixed depth', async () => {
    let deep: StreamSpec = { kind: 'file', path: '/x', size: 1 };
    for (let i = 0; i < 200; i++)
      deep = { kind: 'key-groups', start: 0, offsets: [], delegate: deep };
    const nested = spec(4);
    nested.operators[0]!.subtasks[0]!.managedKeyed = {
      kind: 'key-groups',
      tag: 3,
      start: 0,
      offsets: [],
      delegate: deep,
    };
    await expectCorrupt(buildFlinkMetadataWithMarks(nested).bytes, /nested deeper than 32/);
  });

  it('malformed modified UTF-8 in a name is corrupt at the bad byte', async () => {
    const { bytes, marks } = buildFlinkMetadataWithMarks(spec(5));
    // Operator 0's name 'op': u16 length, then 'o' 'p' → 0xff.
    const name = marks.get('operator 0')! + 2;
    await expectCorrupt(
      patched(bytes, name, Buffer.from([0xff])),
      /operator name: malformed modified UTF-8/,
      name,
    );
  });
});

describe('spillway flink ls on bad input: exit 2, one line naming file and offset', () => {
  // bin/spillway runs the built CLI (dist/): `npm test` builds it before any suite runs.
  it('a hostile _metadata: exactly one line on stderr, no stack; --json: the error object', async () => {
    const dir = await makeTempRoot();
    const file = join(dir, '_metadata');
    const { bytes, marks } = buildFlinkMetadataWithMarks(spec(6));
    const at = marks.get('operator 0 subtask 0 input count')!;
    await writeFile(file, patched(bytes, at, i32(-7)));
    const human = await runCli(['flink', 'ls', dir]);
    expect(human.code).toBe(2);
    expect(human.stdout).toBe('');
    expect(human.stderr).toBe(
      `spillway flink ls: ${file}: corrupt checkpoint at byte ${at}: negative input channel handle count -7\n`,
    );
    const json = await runCli(['flink', 'ls', file, '--json']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toEqual({
      error: {
        code: 'ERR_SPILLWAY_CORRUPT_CHECKPOINT',
        message: `${file}: corrupt checkpoint at byte ${at}: negative input channel handle count -7`,
        file,
        offset: at,
      },
    });
    expect(json.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(json.stderr).not.toMatch(/\n\s+at /);
  });

  it('a missing checkpoint and a bad usage are exit 2 too', async () => {
    const dir = await makeTempRoot();
    const missing = await runCli(['flink', 'ls', join(dir, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
    expect((await runCli(['flink', 'ls'])).code).toBe(2);
    const usage = await runCli(['flink', 'ls', '--json']);
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stdout)).toEqual({
      error: { code: 'ERR_SPILLWAY_USAGE', message: 'missing CHECKPOINT' },
    });
    expect((await runCli(['flink', 'frob'])).code).toBe(2);
    const help = await runCli(['flink', 'ls', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Exit codes: 0 ok/);
  });

  it('--json on a real checkpoint prints exactly what listFlinkCheckpoint returns; the table with --all names every operator', async () => {
    const f = listFlinkFixtures()[0];
    if (f === undefined) return;
    const json = await runCli(['flink', 'ls', f.checkpoint, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(await listFlinkCheckpoint(f.checkpoint));
    const table = await runCli(['flink', 'ls', f.checkpoint, '--all']);
    expect(table.code).toBe(0);
    for (const op of (await listFlinkCheckpoint(f.checkpoint)).operators) {
      expect(table.stdout).toContain(`operator ${op.id}`);
    }
  });
});
