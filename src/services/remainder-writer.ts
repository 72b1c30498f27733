/**
 * Writes a snapshot reader's remainder (the bytes not yet delivered when a checkpoint was taken
 * during recovery) as an SPWC checkpoint file: one entry per segment, like Flink's
 * `writeInputFromSpill`.
 */
import { CheckpointWriter } from './checkpoint.ts';
import { fsSeam } from './fs.ts';
import { addSuppressed } from './errors.ts';
import { channelKey } from './fetched-state.ts';
import type { SpillReader } from './spill-reader.ts';

export interface RemainderSummary {
  /** The SPWC file, or undefined when nothing remained (no file is left behind then). */
  file: string | undefined;
  channels: { gate: number; channel: number; bytes: number }[];
  bytes: number;
}

/**
 * Replays `reader` into a new SPWC file at `out`. Memory stays bounded by one spill segment
 * (≤ 1 MiB by default). Does not close the reader: its owner does, on every path.
 *
 * @example
 * ```ts
 * const reader = drainer.snapshotAndInsertBarriers(7);
 * try { await writeRemainder(reader, 'cp-7.spwc'); } finally { await reader.close(); }
 * ```
 */
export async function writeRemainder(reader: SpillReader, out: string): Promise<RemainderSummary> {
  const perChannel = new Map<string, { gate: number; channel: number; bytes: number }>();
  let writer: CheckpointWriter | undefined;
  let total = 0;
  try {
    for (let segment = await reader.nextSegment(); segment; segment = await reader.nextSegment()) {
      const pieces: Buffer[] = [];
      for (
        let b = await segment.read(segment.remaining);
        b;
        b = await segment.read(segment.remaining)
      ) {
        pieces.push(b);
      }
      const body = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces);
      writer ??= await CheckpointWriter.create(out);
      await writer.append(segment.gate, segment.channel, body);
      const key = channelKey(segment);
      const entry = perChannel.get(key) ?? {
        gate: segment.gate,
        channel: segment.channel,
        bytes: 0,
      };
      entry.bytes += body.length;
      perChannel.set(key, entry);
      total += body.length;
    }
    await writer?.close();
  } catch (error) {
    // A half-written checkpoint file is worse than none: remove it, keep the first cause.
    await writer?.discard().catch((e) => addSuppressed(error as Error, e));
    throw error;
  }
  return { file: writer?.path, channels: [...perChannel.values()], bytes: total };
}

/**
 * Deletes a remainder file written by {@link writeRemainder} whose checkpoint failed afterwards
 * (its snapshot reader could not be closed), so a failed checkpoint leaves no file behind.
 *
 * @example
 * ```ts
 * const { file } = await writeRemainder(reader, out);
 * try { await reader.close(); } catch (e) { if (file) await discardRemainder(file); throw e; }
 * ```
 */
export async function discardRemainder(file: string): Promise<void> {
  await fsSeam.rm(file);
}
