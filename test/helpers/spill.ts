/** Spill files made with the real writer, for reader and drainer tests. */
import { join } from 'node:path';
import { expect } from 'vitest';
import type { ChannelInfo } from '../../src/services/channel.ts';
import { AbortedError } from '../../src/services/errors.ts';
import type { FetchedChannelState } from '../../src/services/spill/fetched-state.ts';
import type { SpillReader } from '../../src/services/spill/spill-reader.ts';
import { SpillWriter } from '../../src/services/spill/spill-writer.ts';
import { exists } from './async.ts';
import { makeTempRoot } from './temp.ts';

/** Spills `appends` with the real writer; the state holds the hand-off grant. */
export async function spill(
  appends: [ChannelInfo, Buffer][],
  options: { maxSegmentBytes?: number; maxSpillFileBytes?: number } = {},
): Promise<{ state: FetchedChannelState; taskDir: string }> {
  const root = await makeTempRoot();
  const taskDir = join(root, 'task-3-d00d');
  const writer = new SpillWriter({ taskDir, ...options });
  for (const [info, b] of appends) await writer.append(info, b);
  return { state: await writer.close(), taskDir };
}

/** `n` bytes of a recognisable pattern; a different `seed`, different bytes. */
export function patternBytes(n: number, seed = 1): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (seed * 31 + i * 7) & 0xff;
  return b;
}

/**
 * G4 after a forced close met a read in flight: once the paused read is released the close
 * completes and deletes the dir, the read fails with the abort's own code (not the raw errno
 * of the descriptor closed under it), and the reader stays closed.
 */
export async function expectReadFenced(f: {
  taskDir: string;
  release: () => void;
  closing: Promise<unknown>;
  reading: Promise<unknown>;
  reader: SpillReader;
}): Promise<void> {
  expect(await exists(f.taskDir)).toBe(true); // never deleted under the live read
  f.release();
  await f.closing;
  expect(await exists(f.taskDir)).toBe(false);
  const error = await f.reading;
  expect(error).toBeInstanceOf(AbortedError);
  expect((error as NodeJS.ErrnoException).code).toBe('ERR_SPILLWAY_ABORTED');
  await expect(f.reader.nextSegment()).rejects.toBeInstanceOf(AbortedError);
  await f.reader.close();
}
