/**
 * Helpers of the `flink rewrite` tests: a fixture's checkpoint copied where a test may change
 * it, Flink's network framing cut independently of the product (`[int32 length][element]`),
 * a channel's bytes as Spillway's reader reads them, and a copy whose one input channel is
 * stored as many small entries (so frames span entries) and optionally repeated (a big one);
 * and the set-up every rewrite test file repeated: a fixture by name, temp roots removed after
 * the file, a tree's SHA-256 per file.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll } from 'vitest';
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
import { listFlinkFixtures, type FlinkFixture } from './flink-expected.ts';
import { makeTempRoot, removeDir } from './temp.ts';

/** The committed fixture called `name` (`2.3.0-file`, …). */
export function fixtureByName(name: string): FlinkFixture {
  const f = listFlinkFixtures().find((x) => x.name === name);
  if (f === undefined) throw new Error(`no committed Flink fixture ${name}`);
  return f;
}

/**
 * A maker of temp roots for one test file: each root is removed after the file's tests
 * (registered with `afterAll` where this is called, at the file's top level).
 *
 * @example
 * const tempRoot = tempRootsForFile();
 * const dir = await tempRoot();
 */
export function tempRootsForFile(): () => Promise<string> {
  const temps: string[] = [];
  afterAll(async () => {
    for (const t of temps) await removeDir(t);
  });
  return async () => {
    const t = await makeTempRoot();
    temps.push(t);
    return t;
  };
}

/** Every file under `dir` (its path) with its SHA-256: what a read must leave as it was. */
export function hashTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out[p] = createHash('sha256').update(readFileSync(p)).digest('hex');
    }
  };
  walk(dir);
  return out;
}

/** The framing of a channel's bytes: whole frames (length included) and a cut tail. */
export function cutFrames(bytes: Buffer): { frames: Buffer[]; partial: Buffer | undefined } {
  const frames: Buffer[] = [];
  let at = 0;
  while (bytes.length - at >= 4) {
    const length = bytes.readInt32BE(at);
    if (bytes.length - at < 4 + length) break;
    frames.push(bytes.subarray(at, at + 4 + length));
    at += 4 + length;
  }
  return { frames, partial: at < bytes.length ? bytes.subarray(at) : undefined };
}

/** Copies the fixture's job dir (chk-N and any taskowned/) into `dir`; returns the chk dir. */
export async function copyFixtureCheckpoint(f: FlinkFixture, dir: string): Promise<string> {
  await cp(f.jobDir, join(dir, 'job'), { recursive: true });
  return join(dir, 'job', f.checkpoint.slice(f.jobDir.length + 1));
}

/** One input channel's (or output subpartition's) payload, as Spillway reads it. */
export async function readChannel(
  checkpoint: string,
  operator: string,
  subtask: number,
  side: 'input' | 'output',
  gate: number,
  channel: number,
): Promise<Buffer> {
  const parts: Buffer[] = [];
  let mine = false;
  await readFlinkEntries(
    checkpoint,
    { operator, subtask, outputState: side === 'output' },
    {
      onEntry: (g, c) => void (mine = g === gate && c === channel),
      onPayload: (chunk) => {
        if (mine) parts.push(Buffer.from(chunk));
      },
    },
  );
  return Buffer.concat(parts);
}

function asWritten(
  handles: readonly FlinkChannelHandle[],
  source: Buffer,
  delegates: Map<FlinkStreamHandle, ChannelDelegate>,
): ChannelHandleToWrite[] {
  return handles.map((h) => {
    let d = delegates.get(h.delegate);
    if (d === undefined) {
      const s = h.delegate;
      if (s.kind === 'inline') {
        d = { kind: 'inline', name: s.name, bytes: source.subarray(s.start, s.start + s.length) };
      } else if (s.kind === 'relative') {
        d = { kind: 'relative', relativePath: s.relativePath, size: s.size };
      } else if (s.kind === 'file') {
        d = { kind: 'file', path: s.path, size: s.size };
      } else {
        throw new Error('segment delegates are not written');
      }
      delegates.set(h.delegate, d);
    }
    return { ...h, delegate: d, merged: h.merged === true };
  });
}

/**
 * Rewrites the `_metadata` of the checkpoint copy at `chk` so that input channel (gate,
 * channel) of `operator`/`subtask` holds `payload` repeated `repeat` times, stored in its own
 * file `split-<gate>-<channel>` as entries of `entryBytes` each (frames span entries). Every
 * other handle stays as Flink wrote it. Returns the channel's new payload.
 */
export async function splitChannel(
  chk: string,
  operator: string,
  subtask: number,
  gate: number,
  channel: number,
  entryBytes: number,
  repeat = 1,
): Promise<Buffer> {
  const metaPath = join(chk, '_metadata');
  const source = await readFile(metaPath);
  const meta = await readFlinkMetadata(chk);
  const original = await readChannel(chk, operator, subtask, 'input', gate, channel);
  const { frames } = cutFrames(original);
  const payload = Buffer.concat(Array.from({ length: repeat }, () => Buffer.concat(frames)));
  const name = `split-${gate}-${channel}`;
  const chunks: Buffer[] = [Buffer.alloc(4)];
  const offsets: number[] = [];
  let position = 4;
  for (let at = 0; at < payload.length; at += entryBytes) {
    const entry = payload.subarray(at, Math.min(payload.length, at + entryBytes));
    const length = Buffer.alloc(4);
    length.writeInt32BE(entry.length, 0);
    offsets.push(position);
    chunks.push(length, entry);
    position += 4 + entry.length;
  }
  await writeFile(join(chk, name), Buffer.concat(chunks));
  const delegates = new Map<FlinkStreamHandle, ChannelDelegate>();
  const file: ChannelDelegate = { kind: 'relative', relativePath: name, size: position };
  const bytes = writeFlinkMetadata(source, meta, (op, st) => {
    const input = asWritten(st.inputChannels, source, delegates).map((h) =>
      op.id === operator && st.index === subtask && h.gate === gate && h.channel === channel
        ? { ...h, offsets, stateSize: position - 4, delegate: file, merged: false }
        : h,
    );
    return { input, output: asWritten(st.outputSubpartitions, source, delegates) };
  });
  await writeFile(metaPath, bytes);
  return payload;
}
