/**
 * SPWC v2 checkpoints for tests, written entry by entry with the project's encoder, with the
 * byte offset of every entry so a test can name where a defect sits.
 */
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import { startRecovery } from '../../src/recover.ts';
import type { RecoveryReport } from '../../src/recovery-types.ts';
import { channelKey } from '../../src/services/channel.ts';
import { CheckpointWriter } from '../../src/services/formats/spwc/writer.ts';
import type { RescaleOption } from '../../src/services/rescale/rescale-options.ts';
import type { SpillLimits } from '../../src/services/spill/limits.ts';
import type { V2Entry } from './rescale-reference.ts';
import { makeTempRoot } from './temp.ts';

/** Writes `entries` as an SPWC v2 file at `path`; returns each entry's header offset. */
export async function writeV2(path: string, entries: readonly V2Entry[]): Promise<number[]> {
  const writer = await CheckpointWriter.create(path, { version: 2 });
  const offsets: number[] = [];
  try {
    for (const e of entries) {
      offsets.push(writer.bytesWritten);
      await writer.append(e.gate, e.channel, e.payload, e.subtask);
    }
    await writer.close();
  } catch (error) {
    await writer.discard().catch(() => undefined);
    throw error;
  }
  return offsets;
}

/** A v2 entry header is 20 bytes: its payload starts there. */
export const V2_ENTRY_HEADER_BYTES = 20;

/**
 * Recovers `file` through the real task (with `rescale`, if given) into memory: each channel's
 * bytes by `channelKey`, and the report.
 */
export async function recoverBytes(
  file: string,
  root: string,
  options: { rescale?: RescaleOption; limits?: SpillLimits } = {},
): Promise<{ out: Map<string, Buffer>; report: RecoveryReport }> {
  const parts = new Map<string, Buffer[]>();
  const recovery = startRecovery({
    checkpoint: file,
    spillRoot: root,
    ...(options.rescale !== undefined ? { rescale: options.rescale } : {}),
    ...(options.limits !== undefined ? { limits: options.limits } : {}),
    channels: (info) => {
      const mine: Buffer[] = [];
      parts.set(channelKey(info), mine);
      return { onBuffer: (b) => void mine.push(Buffer.from(b)), onFinished() {} };
    },
  });
  const report = await recovery.done;
  return { out: new Map([...parts].map(([k, v]) => [k, Buffer.concat(v)])), report };
}

/** `<dir>/<channel>.bin` for every file in an expected-output dir. */
export async function expectedDir(dir: string): Promise<Map<string, Buffer>> {
  const files = (await readdir(dir)).sort();
  return new Map(
    await Promise.all(
      files.map(async (f) => [f.replace(/\.bin$/, ''), await readFile(join(dir, f))] as const),
    ),
  );
}

/** Recovers `file` (as subtask `i` of 2 when given) and compares with `expected` byte for byte. */
export async function expectRecovers(file: string, expected: string, i?: number): Promise<number> {
  const root = join(await makeTempRoot(), 'root');
  await mkdir(root);
  const rescale = i === undefined ? undefined : { subtask: i, parallelism: 2 };
  const { out, report } = await recoverBytes(file, root, rescale ? { rescale } : {});
  const want = await expectedDir(expected);
  expect([...out.keys()].sort()).toEqual([...want.keys()]);
  for (const [key, bytes] of want) expect(out.get(key)!.equals(bytes), key).toBe(true);
  return report.records?.kept ?? 0;
}
