/**
 * The writer against the committed real-Flink fixtures (1.20.5 → metadata v4, 2.3.0 → v6 with
 * merged handles; file, inline, file-merging and watermark variants):
 * - Flink's channel handles, written back by Spillway's encoder, are Flink's bytes exactly;
 * - a rewrite that drops nothing reads back (Spillway's reader) to exactly what Flink's own
 *   classes read from the original (the fixture's `expected/` tree), every channel and side;
 * - everything that is not channel state is carried over byte for byte, and the relative
 *   state files it names are copied beside the new `_metadata`;
 * - the source's files are never written (hashed before and after).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readFlinkEntries } from '../../src/services/formats/flink/entry-source.ts';
import { readFlinkMetadata } from '../../src/services/formats/flink/metadata.ts';
import type {
  FlinkChannelHandle,
  FlinkStreamHandle,
} from '../../src/services/formats/flink/metadata-types.ts';
import type {
  ChannelDelegate,
  ChannelHandleToWrite,
} from '../../src/services/formats/flink/write/channel-handles.ts';
import { writeFlinkMetadata } from '../../src/services/formats/flink/write/metadata-writer.ts';
import { rewriteFlinkCheckpoint } from '../../src/services/formats/flink/write/rewrite.ts';
import { hashTree, tempRootsForFile } from '../helpers/flink-rewrite.ts';
import {
  expectedSubtasks,
  listFlinkFixtures,
  type FlinkFixture,
} from '../helpers/flink-expected.ts';
import { startFileServer } from '../helpers/http-file-server.ts';
import { FLINK_FIXTURES_DIR } from '../helpers/flink-expected.ts';

const fixtures = listFlinkFixtures();
const tempRoot = tempRootsForFile();

const relocate = (f: FlinkFixture) => [{ from: f.originalJobDir, to: f.jobDir }];

/** Each channel's payload bytes of one operator/subtask side, named as the oracle names them. */
async function readChannels(
  checkpoint: string,
  operator: string,
  subtask: number,
  outputState: boolean,
  f: FlinkFixture,
): Promise<Map<string, Buffer>> {
  const parts = new Map<string, Buffer[]>();
  let current: Buffer[] = [];
  await readFlinkEntries(
    checkpoint,
    { operator, subtask, outputState, relocate: relocate(f) },
    {
      onEntry: (gate, channel) => {
        const name = outputState
          ? `partition-${gate}-subpartition-${channel}.bin`
          : `gate-${gate}-channel-${channel}.bin`;
        current = parts.get(name) ?? [];
        parts.set(name, current);
      },
      onPayload: (chunk) => void current.push(Buffer.from(chunk)),
    },
  );
  return new Map([...parts].map(([k, v]) => [k, Buffer.concat(v)]));
}

/** The fixture's channel handles as the encoder takes them, the delegates' identity kept. */
function asWritten(
  handles: readonly FlinkChannelHandle[],
  source: Buffer,
  delegates: Map<FlinkStreamHandle, ChannelDelegate>,
): ChannelHandleToWrite[] {
  return handles.map((h) => {
    let d = delegates.get(h.delegate);
    if (d === undefined) {
      const s = h.delegate;
      d =
        s.kind === 'inline'
          ? { kind: 'inline', name: s.name, bytes: source.subarray(s.start, s.start + s.length) }
          : s.kind === 'relative'
            ? { kind: 'relative', relativePath: s.relativePath, size: s.size }
            : s.kind === 'file'
              ? { kind: 'file', path: s.path, size: s.size }
              : undefined;
      if (d === undefined) throw new Error('segment delegates are not written');
      delegates.set(h.delegate, d);
    }
    return { ...h, delegate: d, merged: h.merged === true };
  });
}

describe('Flink checkpoint writer on the committed fixtures', () => {
  it('finds the committed fixtures', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(8);
  });

  for (const f of fixtures.filter((x) => x.variant !== 'merging')) {
    it(`${f.name}: Flink's own channel handles, encoded again, are Flink's _metadata byte for byte`, async () => {
      const source = await readFile(join(f.checkpoint, '_metadata'));
      const meta = await readFlinkMetadata(f.checkpoint);
      const delegates = new Map<FlinkStreamHandle, ChannelDelegate>();
      const written = writeFlinkMetadata(source, meta, (_, st) => ({
        input: asWritten(st.inputChannels, source, delegates),
        output: asWritten(st.outputSubpartitions, source, delegates),
      }));
      expect(written.equals(source)).toBe(true);
    });
  }

  for (const f of fixtures) {
    it(`${f.name}: a rewrite that drops nothing reads back to what Flink read from the original, the source untouched`, async () => {
      const before = hashTree(f.dir);
      const out = join(await tempRoot(), 'new');
      const result = await rewriteFlinkCheckpoint({
        checkpoint: f.checkpoint,
        out,
        relocate: relocate(f),
      });
      expect(hashTree(f.dir)).toEqual(before);
      expect(result.dropped).toEqual([]);
      expect(result.version).toBe(f.metadataVersion);

      const original = await readFlinkMetadata(f.checkpoint);
      const rewritten = await readFlinkMetadata(out);
      expect(rewritten.version).toBe(original.version);
      expect(rewritten.checkpointId).toBe(original.checkpointId);
      // Everything but channel handles is the source's bytes: the same operators and subtasks,
      // and the same relative state files, copied.
      const shape = (m: typeof original) =>
        m.operators.map((o) => ({
          id: o.id,
          name: o.name,
          uid: o.uid,
          parallelism: o.parallelism,
          maxParallelism: o.maxParallelism,
          subtasks: o.subtasks.map((s) => ({ index: s.index, finished: s.finished })),
        }));
      expect(shape(rewritten)).toEqual(shape(original));
      expect(rewritten.stateFiles).toEqual(original.stateFiles);
      const srcMeta = await readFile(join(f.checkpoint, '_metadata'));
      const newMeta = await readFile(join(out, '_metadata'));
      const firstOp = original.operators[0]!.layout!.head.start;
      expect(newMeta.subarray(0, firstOp).equals(srcMeta.subarray(0, firstOp))).toBe(true);
      const trailer = original.layout!.trailer;
      expect(
        newMeta
          .subarray(newMeta.length - (trailer.end - trailer.start))
          .equals(srcMeta.subarray(trailer.start)),
      ).toBe(true);
      for (const file of original.stateFiles ?? []) {
        expect(
          (await readFile(join(out, file))).equals(await readFile(join(f.checkpoint, file))),
        ).toBe(true);
      }
      // Merged handles where the source had them.
      const merged = (m: typeof original) =>
        m.operators.flatMap((o) =>
          o.subtasks.flatMap((s) =>
            [...s.inputChannels, ...s.outputSubpartitions].map((h) => h.merged === true),
          ),
        );
      expect(merged(rewritten)).toEqual(merged(original));

      for (const s of expectedSubtasks(f.expected)) {
        for (const outputState of [false, true]) {
          const got = await readChannels(out, s.operator, s.subtask, outputState, f);
          const files = outputState ? s.outputFiles : s.inputFiles;
          const want = new Map(
            await Promise.all(
              files.map(async (name) => [name, await readFile(join(s.dir, name))] as const),
            ),
          );
          // Flink writes no handle for a channel without bytes.
          for (const [name, bytes] of want) if (bytes.length === 0) want.delete(name);
          expect([...got.keys()].sort(), `${s.operator}/${s.subtask}`).toEqual(
            [...want.keys()].sort(),
          );
          for (const [name, bytes] of want) {
            expect(got.get(name)!.equals(bytes), `${s.operator}/${s.subtask} ${name}`).toBe(true);
          }
        }
      }
      // NEWDIR holds the _metadata, the copied state files and the new channel-state files only.
      const names = await readdir(out);
      expect(names).toContain('_metadata');
    });
  }

  it('a remote source (http) rewrites to the same channel bytes as the local one; NEWDIR is local and stands alone', async () => {
    const f = fixtures.find((x) => x.name === '1.20.5-file')!;
    const server = await startFileServer(FLINK_FIXTURES_DIR);
    try {
      const url = `${server.url}/${f.checkpoint.slice(FLINK_FIXTURES_DIR.length + 1)}`;
      const out = join(await tempRoot(), 'new');
      const result = await rewriteFlinkCheckpoint({ checkpoint: url, out });
      expect(result.copiedFiles.length).toBeGreaterThan(0);
      for (const file of result.copiedFiles) {
        expect(
          (await readFile(join(out, file))).equals(await readFile(join(f.checkpoint, file))),
        ).toBe(true);
      }
      for (const s of expectedSubtasks(f.expected)) {
        const got = await readChannels(out, s.operator, s.subtask, false, f);
        for (const name of s.inputFiles) {
          const want = await readFile(join(s.dir, name));
          if (want.length > 0) expect(got.get(name)?.equals(want), name).toBe(true);
        }
      }
    } finally {
      await server.stop();
    }
  });
});
