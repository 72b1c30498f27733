/**
 * G8 for any shape: peak RSS of the real `spillway recover` on checkpoints of a few channels
 * holding entries up to SPWC's largest (256 MiB). The checkpoint is written entry by entry
 * (round-robin over the channels, pseudo-random bytes) while each channel's SHA-256 is taken,
 * so the run's outputs can be checked without holding them.
 *
 * Usage (figures for the notes): `node --import tsx bench/shapes.ts [--mib 1024] [--channels 1,2,32] [--entry-mib 1,16,256]`
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CheckpointWriter } from '../src/services/formats/spwc/writer.ts';
import { Xorshift128 } from '../src/services/formats/spwc/generator.ts';
import { runCliMeasured } from './channels.ts';

const MIB = 1024 * 1024;

/** A checkpoint of `totalBytes` in entries of `entryBytes` (the last one shorter), round-robin over `channels` channels of gate 0; returns each channel's SHA-256 (hex) and byte count. */
export async function writeShapedCheckpoint(
  path: string,
  totalBytes: number,
  channels: number,
  entryBytes: number,
  seed = 1,
): Promise<{ sha: string; bytes: number }[]> {
  const rng = new Xorshift128(seed);
  const words = new Uint32Array(Math.ceil(entryBytes / 4));
  const payload = Buffer.from(words.buffer, 0, entryBytes);
  const hashes = Array.from({ length: channels }, () => createHash('sha256'));
  const bytes = new Array<number>(channels).fill(0);
  const writer = await CheckpointWriter.create(path);
  try {
    let left = totalBytes;
    for (let k = 0; left > 0; k++) {
      const n = Math.min(entryBytes, left);
      rng.fill(words, Math.ceil(n / 4));
      const entry = payload.subarray(0, n);
      const c = k % channels;
      hashes[c]!.update(entry);
      bytes[c]! += n;
      await writer.append(0, c, entry);
      left -= n;
    }
    await writer.close();
  } catch (error) {
    await writer.discard().catch(() => undefined);
    throw error;
  }
  return hashes.map((h, c) => ({ sha: h.digest('hex'), bytes: bytes[c]! }));
}

/** SHA-256 (hex) of a file, streamed. */
export async function shaOfFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** One measured recovery of one shape: peak RSS, time, and whether every channel's bytes are exact. */
export async function measureShape(
  totalBytes: number,
  channels: number,
  entryBytes: number,
): Promise<{ peakMiB: number; ms: number; exact: boolean }> {
  const dir = await mkdtemp(join(tmpdir(), 'spillway-test-shape-'));
  try {
    const checkpoint = join(dir, 'shape.spwc');
    const expected = await writeShapedCheckpoint(checkpoint, totalBytes, channels, entryBytes);
    await mkdir(join(dir, 'spill'));
    const out = join(dir, 'out');
    const run = await runCliMeasured([
      'recover',
      checkpoint,
      '--out',
      out,
      '--spill-root',
      join(dir, 'spill'),
      '--json',
    ]);
    await rm(checkpoint);
    let exact = true;
    for (let c = 0; c < channels; c++) {
      // A channel no entry went to is not named by the checkpoint: it has no file.
      if (expected[c]!.bytes === 0) continue;
      if ((await shaOfFile(join(out, `gate-0-channel-${c}.bin`))) !== expected[c]!.sha) {
        exact = false;
      }
    }
    return { peakMiB: run.peakMiB, ms: run.ms, exact };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string, fallback: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i >= 0 ? process.argv[i + 1]! : fallback;
  };
  const total = Number(arg('mib', '1024')) * MIB;
  for (const channels of arg('channels', '1,2,32').split(',').map(Number)) {
    for (const entryMib of arg('entry-mib', '1,16,256').split(',').map(Number)) {
      const r = await measureShape(total, channels, Math.min(entryMib * MIB, 268435456));
      process.stdout.write(
        `${JSON.stringify({ stateMiB: total / MIB, channels, entryMiB: entryMib, peakRssMiB: Math.round(r.peakMiB * 10) / 10, seconds: Math.round(r.ms / 100) / 10, exact: r.exact })}\n`,
      );
    }
  }
}
