/**
 * The Flink `_metadata` reader (DESIGN §7): on the committed real checkpoints that Flink 1.20 and
 * 2.x wrote, `listFlinkCheckpoint` equals what Flink's own classes listed (`expected/ls.json`),
 * and every channel handle's offsets and size agree with the entries in the bytes it names; on
 * synthetic files from Flink's serializer layout, every version 3–6 and every handle kind reads
 * back as written.
 */
import { readFileSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listFlinkCheckpoint } from '../../src/index.ts';
import { readFlinkMetadata, resolveOperator } from '../../src/services/formats/flink/metadata.ts';
import type {
  FlinkChannelHandle,
  FlinkCheckpointMetadata,
} from '../../src/services/formats/flink/metadata-types.ts';
import { UnknownOperatorError } from '../../src/services/errors.ts';
import {
  listFlinkFixtures,
  readExpectedLs,
  withFlinkTotals,
  type FlinkFixture,
} from '../helpers/flink-expected.ts';
import {
  buildFlinkMetadata,
  javaSerializedCheckpointProperties,
  opId,
  type MetadataSpec,
  type SubtaskSpec,
} from '../helpers/flink-metadata-builder.ts';
import { startFileServer } from '../helpers/http-file-server.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const fixtures = listFlinkFixtures().filter((f) => {
  try {
    statSync(join(f.expected, 'ls.json'));
    statSync(join(f.checkpoint, '_metadata'));
    return true;
  } catch {
    return false;
  }
});

/** Flink's class names for the delegate kinds (handles.json names them so). */
const DELEGATE_CLASS: Record<string, string> = {
  inline: 'ByteStreamStateHandle',
  file: 'FileStateHandle',
  relative: 'RelativeFileStateHandle',
  segment: 'SegmentFileStateHandle',
};

/** The bytes a delegate names, inside the fixture (absolute paths mapped from where Flink ran). */
function delegateBytes(f: FlinkFixture, h: FlinkChannelHandle): Buffer {
  const d = h.delegate;
  switch (d.kind) {
    case 'inline':
      return readFileSync(d.file).subarray(d.start, d.start + d.length);
    case 'relative':
      return readFileSync(join(f.checkpoint, d.relativePath));
    case 'file':
    case 'segment': {
      const path = d.path.replace(/^file:/, '').replace(f.originalJobDir, f.jobDir);
      const all = readFileSync(path);
      return d.kind === 'segment' ? all.subarray(d.start, d.start + d.length) : all;
    }
  }
}

function allHandles(meta: FlinkCheckpointMetadata): FlinkChannelHandle[] {
  return meta.operators.flatMap((o) =>
    o.subtasks.flatMap((s) => [...s.inputChannels, ...s.outputSubpartitions]),
  );
}

describe('flink ls equals what Flink listed, on real checkpoints', () => {
  it('there are real fixtures to check (test/fixtures/flink/*/expected/ls.json)', () => {
    expect(fixtures.length).toBeGreaterThan(0);
  });

  for (const f of fixtures) {
    describe(`${f.name} (Flink ${f.flink}, metadata v${f.metadataVersion})`, () => {
      it('listFlinkCheckpoint(dir) equals expected/ls.json exactly, with totals that are the sums of Flink’s per-subtask bytes, and so does the _metadata path', async () => {
        const expected = withFlinkTotals(readExpectedLs(f.expected));
        expect(await listFlinkCheckpoint(f.checkpoint)).toEqual(expected);
        expect(await listFlinkCheckpoint(join(f.checkpoint, '_metadata'))).toEqual(expected);
        expect(JSON.stringify(await listFlinkCheckpoint(f.checkpoint))).toBe(
          JSON.stringify(expected),
        );
      });

      it('the version is the one the release writes, and every delegate is of the kind Flink reported', async () => {
        const meta = await readFlinkMetadata(f.checkpoint);
        expect(meta.version).toBe(f.metadataVersion);
        expect(meta.location).toBe(join(f.checkpoint, '_metadata'));
        const handlesJson = join(f.expected, 'handles.json');
        const reported = JSON.parse(readFileSync(handlesJson, 'utf8')) as {
          subtasks: { operator: string; subtask: number; delegates: string[] }[];
        };
        for (const r of reported.subtasks) {
          const s = meta.operators
            .find((o) => o.id === r.operator)!
            .subtasks.find((x) => x.index === r.subtask)!;
          const kinds = new Set(
            [...s.inputChannels, ...s.outputSubpartitions].map(
              (h) => DELEGATE_CLASS[h.delegate.kind],
            ),
          );
          expect([...kinds].sort(), `${r.operator}/${r.subtask}`).toEqual(
            [...new Set(r.delegates)].sort(),
          );
        }
      });

      it('every handle: offsets inside its delegate, each at an entry, entry sizes summing to its state size as Flink counts it', async () => {
        const meta = await readFlinkMetadata(f.checkpoint);
        const handles = allHandles(meta);
        expect(handles.length).toBeGreaterThan(0);
        for (const h of handles) {
          const bytes = delegateBytes(f, h);
          const d = h.delegate;
          if (d.kind !== 'inline' && d.kind !== 'segment') expect(bytes.length).toBe(d.size);
          // ChannelStateSerializerImpl: an int32 header (version 0) per physical file.
          expect(bytes.readInt32BE(0)).toBe(0);
          let sum = 0;
          for (const offset of h.offsets) {
            expect(offset).toBeGreaterThanOrEqual(4);
            const length = bytes.readInt32BE(offset);
            expect(length).toBeGreaterThanOrEqual(0);
            expect(offset + 4 + length).toBeLessThanOrEqual(bytes.length);
            sum += 4 + length;
          }
          // ChannelStatePendingResult: an inline handle's size is its whole blob (the 4-byte
          // header too: extracted.getStateSize()); a file handle's is its entries' bytes.
          const header = d.kind === 'inline' ? 4 : 0;
          expect(
            sum + header,
            `${h.side} ${h.gate}/${h.channel} of subtask ${h.subtaskIndex}`,
          ).toBe(h.stateSize);
          if (d.kind === 'inline') expect(h.stateSize).toBe(d.length);
        }
      });

      it('the checkpoint reads the same over http:// (the directory URL and the _metadata URL)', async () => {
        const server = await startFileServer(f.dir);
        try {
          const rel = f.checkpoint.slice(f.dir.length + 1);
          const local = await listFlinkCheckpoint(f.checkpoint);
          expect(await listFlinkCheckpoint(`${server.url}/${rel}`)).toEqual(local);
          expect(await listFlinkCheckpoint(`${server.url}/${rel}/`)).toEqual(local);
          expect(await listFlinkCheckpoint(`${server.url}/${rel}/_metadata`)).toEqual(local);
        } finally {
          await server.stop();
        }
      });
    });
  }
});

/** A subtask with one of every non-channel handle kind in front of its channel handles. */
function busySubtask(index: number, version: number): SubtaskSpec {
  const file = { kind: 'file' as const, path: 'file:/ckpt/shared/x', size: 100 };
  return {
    index,
    managedOperator: {
      kind: 'stream',
      states: [
        { name: 'offsets', mode: 0, offsets: [0, 10] },
        { name: 'ünïcødé \u0000 𝄞', mode: 2, offsets: [] },
      ],
      delegate: file,
    },
    rawOperator: {
      kind: 'segment',
      states: [{ name: 'u', mode: 1, offsets: [3] }],
      taskOwnedDir: '/t',
      sharedDir: '/s',
      empty: false,
      delegate: { kind: 'segment', start: 5, length: 9, scope: 1, path: '/seg', logicalId: 'L' },
    },
    managedKeyed:
      version % 2 === 0
        ? {
            kind: 'incremental',
            v2: version >= 5,
            checkpointId: 3,
            backendId: '0f8fad5b-d9cb-469f-a165-70867728950e',
            start: 0,
            count: 64,
            meta: { kind: 'relative', relativePath: 'meta', size: 10 },
            shared: [['000001.sst', file]],
            private: [['MANIFEST', { kind: 'inline', name: 'm', data: Buffer.from('abc') }]],
          }
        : {
            kind: 'changelog',
            v2: version === 5,
            start: 0,
            count: 2,
            materialized: [
              {
                kind: 'key-groups',
                tag: 12,
                start: 0,
                offsets: [1, 2],
                delegate: {
                  kind: 'key-groups',
                  start: 0,
                  offsets: [9],
                  delegate: { kind: 'empty-segment' },
                },
              },
              null,
            ],
            nonMaterialized: [
              { kind: 'changelog-bytes', start: 0, count: 2, changes: [[1, Buffer.from('zz')]] },
              {
                kind: 'changelog-file',
                v2: true,
                start: 0,
                count: 2,
                handles: [[4, file]],
              },
              { kind: 'changelog-file', v2: false, start: 0, count: 2, handles: [] },
            ],
          },
    rawKeyed: {
      kind: 'key-groups',
      tag: index === 0 ? 7 : 3,
      start: 0,
      offsets: [0],
      delegate: file,
    },
  };
}

function syntheticSpec(version: number): MetadataSpec {
  const inline = Buffer.concat([Buffer.alloc(4), Buffer.from([0, 0, 0, 2, 7, 8])]);
  const channel = (gate: number, channel: number, subtaskIndex = 0) => ({
    subtaskIndex,
    gate,
    channel,
    offsets: [4],
    stateSize: 6,
    delegate: { kind: 'inline' as const, name: `in-${gate}-${channel}`, data: inline },
  });
  const a = busySubtask(0, version);
  a.inputs = [
    channel(0, 1),
    {
      subtaskIndex: 0,
      gate: 1,
      channel: 0,
      offsets: [4, 40],
      stateSize: 60,
      delegate: { kind: 'relative', relativePath: 'abc-def', size: 1000 },
    },
  ];
  a.outputs = [
    {
      subtaskIndex: 0,
      gate: 0,
      channel: 2,
      offsets: [100],
      stateSize: 12,
      delegate: { kind: 'file', path: 'file:/job/taskowned/f', size: 200 },
    },
  ];
  if (version >= 6) {
    a.outputs.push({
      merged: true,
      subtaskIndex: 0,
      delegate: {
        kind: 'segment',
        start: 10,
        length: 500,
        scope: 0,
        path: '/seg/f',
        logicalId: 'x',
      },
      channels: [
        { gate: 1, channel: 0, stateSize: 30, offsets: [4, 20] },
        { gate: 1, channel: 1, stateSize: 8, offsets: [60] },
      ],
    });
  }
  const b = busySubtask(2, version);
  b.inputs =
    version >= 6
      ? [
          {
            merged: true,
            subtaskIndex: 2,
            delegate: { kind: 'relative', relativePath: 'merged-in', size: 300 },
            channels: [
              { gate: 0, channel: 0, stateSize: 6, offsets: [4] },
              { gate: 2, channel: 5, stateSize: 20, offsets: [10, 30] },
            ],
          },
        ]
      : [channel(0, 0, 2)];
  return {
    version,
    checkpointId: 42,
    masterStates: [{ version: 1, name: 'master', bytes: Buffer.from('hello') }],
    operators: [
      {
        id: '0123456789abcdef0011223344556677',
        name: 'Map',
        uid: 'map-uid',
        parallelism: 4,
        maxParallelism: 128,
        coordinator: { kind: 'inline', name: 'coord', data: Buffer.from('c') },
        subtasks: [b, { index: 1, finished: true }, a],
      },
      {
        id: opId(7),
        name: 'Sink',
        parallelism: 2,
        maxParallelism: 2,
        fullyFinished: true,
        subtasks: [],
      },
    ],
  };
}

describe('every version 3-6 and every handle kind reads back as written (synthetic _metadata)', () => {
  for (const version of [3, 4, 5, 6]) {
    it(`v${version}: operators, names, finished marks, channel handles and their delegates`, async () => {
      const dir = await makeTempRoot();
      const file = join(dir, '_metadata');
      const bytes = buildFlinkMetadata(syntheticSpec(version));
      await writeFile(file, bytes);
      const meta = await readFlinkMetadata(dir);
      expect(meta.version).toBe(version);
      expect(meta.checkpointId).toBe(42);
      expect(meta.location).toBe(file);
      const [op, sink] = meta.operators;
      expect(op!.id).toBe('0123456789abcdef0011223344556677');
      expect(op!.name).toBe(version >= 5 ? 'Map' : undefined);
      expect(op!.uid).toBe(version >= 5 ? 'map-uid' : undefined);
      expect([op!.parallelism, op!.maxParallelism, op!.finished]).toEqual([4, 128, false]);
      expect(op!.subtasks.map((s) => [s.index, s.finished])).toEqual([
        [0, false],
        [1, true],
        [2, false],
      ]);
      expect(sink).toMatchObject({ id: opId(7), finished: true, subtasks: [] });
      expect(sink!.uid).toBeUndefined();

      const s0 = op!.subtasks[0]!;
      const inline = s0.inputChannels[0]!;
      expect(inline).toMatchObject({
        side: 'input',
        gate: 0,
        channel: 1,
        offsets: [4],
        stateSize: 6,
      });
      expect(inline.delegate.kind).toBe('inline');
      if (inline.delegate.kind === 'inline') {
        // The inline bytes are a range of the file, not a copy.
        expect(inline.delegate.file).toBe(file);
        expect(inline.delegate.name).toBe('in-0-1');
        const { start, length } = inline.delegate;
        expect(bytes.subarray(start, start + length)).toEqual(
          Buffer.from([0, 0, 0, 0, 0, 0, 0, 2, 7, 8]),
        );
      }
      expect(s0.inputChannels[1]).toMatchObject({
        gate: 1,
        channel: 0,
        offsets: [4, 40],
        stateSize: 60,
        delegate: { kind: 'relative', relativePath: 'abc-def', size: 1000 },
      });
      expect(s0.outputSubpartitions[0]).toMatchObject({
        side: 'output',
        gate: 0,
        channel: 2,
        offsets: [100],
        stateSize: 12,
        delegate: { kind: 'file', path: 'file:/job/taskowned/f', size: 200 },
      });
      if (version >= 6) {
        expect(s0.outputSubpartitions.slice(1)).toMatchObject([
          { gate: 1, channel: 0, stateSize: 30, offsets: [4, 20] },
          { gate: 1, channel: 1, stateSize: 8, offsets: [60] },
        ]);
        expect(s0.outputSubpartitions[1]!.delegate).toEqual({
          kind: 'segment',
          path: '/seg/f',
          start: 10,
          length: 500,
          scope: 'exclusive',
        });
      } else {
        expect(s0.outputSubpartitions).toHaveLength(1);
      }
      expect(op!.subtasks[2]!.inputChannels).toMatchObject(
        version >= 6
          ? [
              { subtaskIndex: 2, gate: 0, channel: 0, stateSize: 6, offsets: [4] },
              { subtaskIndex: 2, gate: 2, channel: 5, stateSize: 20, offsets: [10, 30] },
            ]
          : [{ subtaskIndex: 2, gate: 0, channel: 0 }],
      );
      if (version >= 6) {
        // One delegate for every channel of a merged handle, as Flink's unmerged handles share it.
        const [x, y] = op!.subtasks[2]!.inputChannels;
        expect(x!.delegate).toEqual({ kind: 'relative', relativePath: 'merged-in', size: 300 });
        expect(y!.delegate).toEqual(x!.delegate);
      }
      // metadataOffset points into the file at the handle.
      for (const h of allHandles(meta)) {
        expect(h.metadataOffset).toBeGreaterThan(0);
        expect(h.metadataOffset).toBeLessThan(bytes.length);
      }

      const listing = await listFlinkCheckpoint(file);
      expect(listing.operators[0]!.subtasks).toEqual([
        {
          index: 0,
          finished: false,
          inputChannels: 2,
          inputBytes: 66,
          outputSubpartitions: version >= 6 ? 3 : 1,
          outputBytes: version >= 6 ? 50 : 12,
        },
        {
          index: 1,
          finished: true,
          inputChannels: 0,
          inputBytes: 0,
          outputSubpartitions: 0,
          outputBytes: 0,
        },
        {
          index: 2,
          finished: false,
          inputChannels: version >= 6 ? 2 : 1,
          inputBytes: version >= 6 ? 26 : 6,
          outputSubpartitions: 0,
          outputBytes: 0,
        },
      ]);
      expect(Object.keys(listing.operators[1]!)).toEqual(
        version >= 5
          ? ['id', 'name', 'parallelism', 'maxParallelism', 'inputBytes', 'outputBytes', 'subtasks']
          : ['id', 'parallelism', 'maxParallelism', 'inputBytes', 'outputBytes', 'subtasks'],
      );
    });
  }

  it('the CheckpointProperties trailer of a real checkpoint is walked to its last byte', async () => {
    const real = fixtures.find((f) => f.metadataVersion >= 4);
    if (real === undefined) return;
    const bytes = readFileSync(join(real.checkpoint, '_metadata'));
    const at = bytes.indexOf(Buffer.from([0xac, 0xed, 0x00, 0x05]));
    expect(at).toBeGreaterThan(0);
    // The real trailer, moved onto a synthetic body, reads; one byte less does not.
    const dir = await makeTempRoot();
    const spec = { ...syntheticSpec(4), trailer: bytes.subarray(at) };
    await writeFile(join(dir, '_metadata'), buildFlinkMetadata(spec));
    await expect(readFlinkMetadata(dir)).resolves.toMatchObject({ version: 4 });
    const cut = { ...spec, trailer: bytes.subarray(at, bytes.length - 1) };
    await writeFile(join(dir, '_metadata'), buildFlinkMetadata(cut));
    await expect(readFlinkMetadata(dir)).rejects.toThrow(/CheckpointProperties trailer/);
    // The builder's own trailer is the same grammar (class descriptors, a string, an enum).
    await writeFile(join(dir, '_metadata'), buildFlinkMetadata(syntheticSpec(4)));
    const parsed = await readFlinkMetadata(dir);
    expect(parsed.operators).toHaveLength(2);
    expect(javaSerializedCheckpointProperties().subarray(0, 4)).toEqual(
      Buffer.from([0xac, 0xed, 0x00, 0x05]),
    );
  });
});

describe('an operator is found by its id, uid or name; unknown or ambiguous is exit-2 input', () => {
  const meta: FlinkCheckpointMetadata = {
    location: '/ckpt/chk-1/_metadata',
    version: 6,
    checkpointId: 1,
    operators: [
      {
        id: opId(1),
        name: 'Map',
        uid: 'map-1',
        parallelism: 1,
        maxParallelism: 1,
        finished: false,
        subtasks: [],
      },
      {
        id: opId(2),
        name: 'Map',
        uid: 'map-2',
        parallelism: 1,
        maxParallelism: 1,
        finished: false,
        subtasks: [],
      },
      {
        id: 'abcdef00000000000000000000000003',
        name: 'Sink: out',
        parallelism: 1,
        maxParallelism: 1,
        finished: false,
        subtasks: [],
      },
    ],
  };

  it('by id (any case), by uid, by a unique name', () => {
    expect(resolveOperator(meta, 'ABCDEF00000000000000000000000003').id).toBe(
      'abcdef00000000000000000000000003',
    );
    expect(resolveOperator(meta, 'map-2').id).toBe(opId(2));
    expect(resolveOperator(meta, 'Sink: out').id).toBe('abcdef00000000000000000000000003');
  });

  it('a name two operators share is ambiguous, listing both; an unknown one lists all', () => {
    const ambiguous = (() => {
      try {
        resolveOperator(meta, 'Map');
      } catch (e) {
        return e;
      }
    })() as UnknownOperatorError;
    expect(ambiguous).toBeInstanceOf(UnknownOperatorError);
    expect(ambiguous.code).toBe('ERR_SPILLWAY_UNKNOWN_OPERATOR');
    expect(ambiguous.kind).toBe('ambiguous');
    expect(ambiguous.candidates).toEqual([
      `${opId(1)} (name Map, uid map-1)`,
      `${opId(2)} (name Map, uid map-2)`,
    ]);
    expect(() => resolveOperator(meta, 'nope')).toThrow(
      /\/ckpt\/chk-1\/_metadata: unknown operator 'nope'; operators: 0+1 \(name Map, uid map-1\), 0+2 .*abcdef0+3 \(name Sink: out\)$/,
    );
    expect(() => resolveOperator(meta, opId(9))).toThrow(UnknownOperatorError);
  });
});
