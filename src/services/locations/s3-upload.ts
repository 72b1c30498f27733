/**
 * Writes a local file to `s3://bucket/key` by multipart upload, and never leaves an orphan: a
 * failed or cancelled upload is aborted (AbortMultipartUpload), so no parts stay billed and
 * invisible in the bucket — the object-store analogue of a leaked spill file. Memory: one part.
 */
import { fsConstants as constants } from '../fs.ts';
import { addSuppressed, AbortedError, RemoteNotFoundError } from '../errors.ts';
import { fsSeam } from '../fs.ts';
import { redactText } from './redact.ts';
import type { S3Options } from './remote-options.ts';
import { parseS3Location, s3Client } from './s3-client.ts';
import { s3Error } from './s3-source.ts';

/** The pauses before the aborts after the first: time for a part still in flight to land. */
const REABORT_AFTER_MS = [250, 750];
/** S3's smallest part but the last is 5 MiB; 8 MiB keeps the request count low. */
export const DEFAULT_PART_BYTES = 8 * 1024 * 1024;

/** Options of {@link uploadFile}. */
export interface UploadOptions {
  s3?: S3Options;
  /** Aborting stops the part in flight and aborts the upload. */
  signal?: AbortSignal;
  /** Part size, ≥ 5 MiB for real S3; default 8 MiB. */
  partBytes?: number;
}

function s3Where(location: string): { bucket: string; key: string } {
  const where = parseS3Location(location);
  if (where === undefined)
    throw new RemoteNotFoundError(location, 'not an s3://bucket/key location');
  return where;
}

/**
 * Uploads `file` as `location` (`s3://bucket/key`). On any failure, an abort included, the
 * multipart upload is aborted before this rejects, with the first cause kept (G5) and a failed
 * abort in its `suppressed`.
 *
 * @example
 * ```ts
 * await uploadFile('cp-7.spwc', 's3://ckpt/job/cp-7.spwc', { s3: { endpoint }, signal });
 * ```
 */
export async function uploadFile(
  file: string,
  location: string,
  options: UploadOptions = {},
): Promise<void> {
  const { bucket, key } = s3Where(location);
  const shown = redactText(location);
  const signal = options.signal;
  const throwIfAborted = () => {
    if (signal?.aborted === true) {
      throw signal.reason ?? new AbortedError(`${shown}: upload aborted`);
    }
  };
  throwIfAborted();
  const { client, s3 } = await s3Client(options.s3, shown);
  const partBytes = options.partBytes ?? DEFAULT_PART_BYTES;
  let uploadId: string | undefined;
  const source = await fsSeam.open(file, constants.O_RDONLY);
  try {
    const created = await client
      .send(new s3.CreateMultipartUploadCommand({ Bucket: bucket, Key: key }), {
        abortSignal: signal,
      })
      .catch((e: unknown) => {
        throwIfAborted();
        throw s3Error(shown, e);
      });
    uploadId = created.UploadId;
    const parts: { ETag: string | undefined; PartNumber: number }[] = [];
    const buf = Buffer.allocUnsafe(partBytes);
    for (let position = 0, partNumber = 1; ; partNumber++) {
      throwIfAborted();
      let n = 0;
      while (n < partBytes) {
        const got = await source.read(buf, n, partBytes - n, position + n);
        if (got === 0) break;
        n += got;
      }
      // An empty file is still one (empty) part: S3 completes no upload without parts.
      if (n === 0 && partNumber > 1) break;
      const answer = await client
        .send(
          new s3.UploadPartCommand({
            Bucket: bucket,
            Key: key,
            UploadId: uploadId,
            PartNumber: partNumber,
            Body: buf.subarray(0, n),
            ContentLength: n,
          }),
          { abortSignal: signal },
        )
        .catch((e: unknown) => {
          throwIfAborted();
          throw s3Error(shown, e);
        });
      parts.push({ ETag: answer.ETag, PartNumber: partNumber });
      position += n;
      if (n < partBytes) break;
    }
    throwIfAborted();
    await client
      .send(
        new s3.CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts },
        }),
        { abortSignal: signal },
      )
      .catch((e: unknown) => {
        throwIfAborted();
        throw s3Error(shown, e);
      });
    uploadId = undefined;
  } catch (error) {
    if (uploadId !== undefined) {
      // Not under the caller's signal: an aborted signal is exactly when this must still run.
      const abort = () =>
        client.send(
          new s3.AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }),
        );
      let abortError: unknown;
      let aborted = await abort().then(
        () => true,
        (e: unknown) => {
          abortError = e;
          return false;
        },
      );
      // S3: "if any part uploads are currently in progress, those part uploads might or might
      // not succeed … it might be necessary to abort a given multipart upload multiple times".
      // A part whose request failed on our side (a reset) may still be landing at the store,
      // and would be an orphan billed forever: abort again once it has had time to land.
      // The later aborts usually find no such upload, which is the point. They run after a
      // failed first abort too (its request may have met the same broken connection): only
      // when every one failed is the upload reported as possibly left behind.
      for (const ms of REABORT_AFTER_MS) {
        await new Promise((resolve) => setTimeout(resolve, ms));
        if (
          await abort().then(
            () => true,
            () => false,
          )
        )
          aborted = true;
      }
      if (!aborted && error instanceof Error) addSuppressed(error, s3Error(shown, abortError));
    }
    throw error;
  } finally {
    await source.close().catch(() => undefined);
    client.destroy();
  }
}

/**
 * Deletes `s3://bucket/key` (a remainder whose checkpoint failed after it was written).
 *
 * @example
 * ```ts
 * await deleteObject('s3://ckpt/job/cp-7.spwc', { endpoint });
 * ```
 */
export async function deleteObject(location: string, s3Options?: S3Options): Promise<void> {
  const { bucket, key } = s3Where(location);
  const { client, s3 } = await s3Client(s3Options);
  try {
    await client.send(new s3.DeleteObjectCommand({ Bucket: bucket, Key: key })).catch((e) => {
      throw s3Error(redactText(location), e);
    });
  } finally {
    client.destroy();
  }
}
