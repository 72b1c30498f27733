/**
 * Writes a snapshot reader's remainder (the bytes not yet delivered when a checkpoint was taken
 * during recovery) as an SPWC checkpoint file: one entry per segment, like Flink's
 * `writeInputFromSpill`.
 */
import { randomBytes } from '../node-crypto.ts';
import { basename, dirname, join } from 'node:path';
import { CheckpointWriter } from '../formats/spwc/writer.ts';
import { fsSeam } from '../fs.ts';
import { addSuppressed, CheckpointOutError, errnoOf } from '../errors.ts';
import { channelKey } from '../channel.ts';
import type { SpillReader } from './spill-reader.ts';
import { isRemoteLocation } from '../locations/schemes.ts';
import type { S3Options } from '../locations/remote-options.ts';
import { tmpdir } from 'node:os';

/** Where a remainder may go besides a local path: `s3://` (multipart upload). */
export interface RemainderTarget {
  /** For an `s3://bucket/key` out. */
  s3?: S3Options;
  /**
   * Aborting stops the write between two segments (its staging file is removed) and the upload
   * in flight (aborted: no orphaned parts).
   */
  signal?: AbortSignal;
  /** Rescaling: a v2 file whose entries all name this new subtask. */
  v2?: { subtask: number } | undefined;
}

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
 * With `stagingDir` (the task dir) the file is written there and moved to `out` only when
 * complete: a `kill -9` mid-write then leaves the partial file where the next start's sweep
 * removes it, never a truncated checkpoint at `out`; and a cancel that deletes the task dir
 * takes the partial file with it.
 *
 * With `remote.v2` the file is SPWC v2, every entry naming `v2.subtask` as the subtask that wrote it:
 * the remainder of a rescaled recovery, whose spilled bytes are the survivors' records.
 *
 * An `s3://bucket/key` out is written to the staging file first, then uploaded by multipart
 * upload; a failed or cancelled upload is aborted, and the staging file goes either way.
 *
 * @example
 * ```ts
 * const reader = drainer.snapshotAndInsertBarriers(7);
 * try { await writeRemainder(reader, 'cp-7.spwc'); } finally { await reader.close(); }
 * ```
 */
export async function writeRemainder(
  reader: SpillReader,
  out: string,
  stagingDir?: string,
  remote: RemainderTarget = {},
): Promise<RemainderSummary> {
  const upload = isRemoteLocation(out);
  const staging = stagingDir ?? (upload ? tmpdir() : undefined);
  const target =
    staging === undefined
      ? out
      : join(staging, `remainder-${randomBytes(4).toString('hex')}-${basename(out)}.partial`);
  const perChannel = new Map<string, { gate: number; channel: number; bytes: number }>();
  let writer: CheckpointWriter | undefined;
  let total = 0;
  try {
    for (let segment = await reader.nextSegment(); segment; segment = await reader.nextSegment()) {
      remote.signal?.throwIfAborted();
      const pieces: Buffer[] = [];
      for (
        let b = await segment.read(segment.remaining);
        b;
        b = await segment.read(segment.remaining)
      ) {
        pieces.push(b);
      }
      const body = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces);
      const v2 = remote.v2;
      writer ??= await CheckpointWriter.create(target, v2 !== undefined ? { version: 2 } : {});
      await writer.append(segment.gate, segment.channel, body, v2?.subtask ?? 0);
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
    if (writer !== undefined && upload) {
      try {
        // The S3 client's code is loaded for the first s3:// remainder only.
        const { uploadFile } = await import('../locations/s3-upload.ts');
        await uploadFile(target, out, { s3: remote.s3, signal: remote.signal });
      } finally {
        await fsSeam.rm(target);
      }
    } else if (writer !== undefined && target !== out) await moveInto(target, out);
  } catch (error) {
    // A half-written checkpoint file is worse than none: remove it, keep the first cause.
    await writer?.discard().catch((e) => addSuppressed(error as Error, e));
    throw error;
  }
  return {
    file: writer === undefined ? undefined : out,
    channels: [...perChannel.values()],
    bytes: total,
  };
}

/**
 * Publishes the staged file at `to` without replacing an existing file there: a hard link, or a
 * copy across file systems. The staged file stays in the task dir and goes with it.
 */
async function moveInto(from: string, to: string): Promise<void> {
  try {
    await fsSeam.link(from, to);
  } catch (e) {
    const errno = errnoOf(e);
    // Someone made `to` (or removed its dir) while the remainder was written: still typed,
    // still naming `to` rather than the staging file.
    if (errno === 'EEXIST') throw new CheckpointOutError(to, errno, 'already exists', { cause: e });
    if (errno === 'ENOENT' || errno === 'ENOTDIR') {
      throw new CheckpointOutError(to, errno, `its directory ${dirname(to)} is gone`, { cause: e });
    }
    if (errno !== 'EXDEV') throw e;
    await fsSeam.copyFile(from, to);
  }
}

/**
 * Refuses a local `out` a remainder cannot be published at — it exists (never replaced), or its
 * directory is missing or not a directory — with a {@link CheckpointOutError}, before anything
 * is written. Remote locations are not checked (the upload reports its own errors).
 *
 * @example
 * ```ts
 * checkRemainderOut('cp-7.spwc'); // throws CheckpointOutError (EEXIST) if it exists
 * ```
 */
export function checkRemainderOut(out: string): void {
  if (isRemoteLocation(out)) return;
  let existing;
  try {
    existing = fsSeam.lstatSync(out);
  } catch (e) {
    const errno = errnoOf(e) ?? 'EIO';
    throw new CheckpointOutError(out, errno, (e as Error).message, { cause: e });
  }
  if (existing !== undefined) {
    throw new CheckpointOutError(
      out,
      'EEXIST',
      'already exists (a checkpoint never replaces a file)',
    );
  }
  const dir = dirname(out);
  let isDir: boolean;
  try {
    isDir = fsSeam.statSync(dir).isDirectory();
  } catch (e) {
    const errno = errnoOf(e) ?? 'EIO';
    const reason =
      errno === 'ENOENT' ? `its directory ${dir} does not exist` : (e as Error).message;
    throw new CheckpointOutError(out, errno, reason, { cause: e });
  }
  if (!isDir) throw new CheckpointOutError(out, 'ENOTDIR', `${dir} is not a directory`);
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
/**
 * Where a checkpoint's remainder goes when its caller names no `out`: beside the task dir, in the
 * owner dir (a sweep takes it with a dead owner's dir). The one place this name is decided.
 *
 * @example
 * ```ts
 * defaultRemainderPath('/tmp/spill/owner-1/task-a', 7); // '/tmp/spill/owner-1/task-a-checkpoint-7.spwc'
 * ```
 */
export function defaultRemainderPath(taskDir: string | undefined, checkpointId: number): string {
  return `${taskDir ?? '.'}-checkpoint-${checkpointId}.spwc`;
}

export async function discardRemainder(file: string, s3?: S3Options): Promise<void> {
  if (isRemoteLocation(file))
    await (await import('../locations/s3-upload.ts')).deleteObject(file, s3);
  else await fsSeam.rm(file);
}
