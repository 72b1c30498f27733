/**
 * SPWC v2 checkpoints for tests, written entry by entry with the project's encoder, with the
 * byte offset of every entry so a test can name where a defect sits.
 */
import { CheckpointWriter } from '../../src/services/checkpoint/writer.ts';
import type { V2Entry } from './rescale-reference.ts';

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
