/**
 * `s3://bucket/key` checkpoints through the AWS SDK v3 (loaded lazily, see s3-client.ts):
 * ranged `GetObject` with `IfMatch` once the ETag is pinned, so the same resumable read as for
 * `http(s)://` serves both.
 */
import type { Readable } from 'node:stream';
import {
  CheckpointChangedError,
  RemoteAccessError,
  RemoteError,
  RemoteNotFoundError,
  RemoteUnsupportedError,
} from '../errors.ts';
import { redactText } from './redact.ts';
import type { RangeFetcher, RangeResponse } from './range-fetcher.ts';
import type { S3Options } from './remote-options.ts';
import { parseS3Location, s3Client, s3Failure } from './s3-client.ts';

const NETWORK = /ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|EAI_AGAIN|socket hang up|aborted/i;
const ACCESS = new Set([
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'AccessDenied',
  'ExpiredToken',
  'InvalidToken',
  'CredentialsProviderError',
]);

/**
 * Maps an SDK failure to Spillway's typed errors: missing key or bucket (bad input), refused
 * credentials (exit 1, nothing secret in the message), a failed `If-Match`; anything else is a
 * {@link RemoteError} that {@link s3Fetcher}'s `isTransient` may retry.
 */
export function s3Error(location: string, error: unknown, start = 0, etag?: string): Error {
  const { status, name } = s3Failure(error);
  const detail = redactText((error as Error | undefined)?.message ?? String(error));
  if (name === 'NoSuchBucket')
    return new RemoteNotFoundError(location, 'no such bucket', { cause: error });
  if (name === 'NoSuchKey' || status === 404) {
    return new RemoteNotFoundError(location, 'no such key', { cause: error });
  }
  if (ACCESS.has(name) || status === 401 || status === 403) {
    return new RemoteAccessError(location, `access denied (${name}: ${detail})`, { cause: error });
  }
  if (status === 412 || name === 'PreconditionFailed') {
    return new CheckpointChangedError(location, start, etag ?? '(none)', 'another (HTTP 412)');
  }
  return new RemoteError(
    location,
    `${status !== undefined ? `HTTP ${status} ` : ''}${name}: ${detail}`,
    0,
    { cause: error },
  );
}

/** Whether an SDK failure may be retried: a 5xx, a throttle, a timeout, a reset. */
function transient(error: unknown): boolean {
  if (!(error instanceof RemoteError)) return false;
  const cause = error.cause;
  const { status, name } = s3Failure(cause);
  if (status !== undefined) return status >= 500 || status === 429 || status === 408;
  const code = (cause as { code?: string } | undefined)?.code ?? '';
  return (
    NETWORK.test(`${code} ${name} ${(cause as Error | undefined)?.message ?? ''}`) ||
    name === 'TimeoutError'
  );
}

/**
 * The {@link RangeFetcher} of `s3://bucket/key`.
 *
 * @example
 * ```ts
 * const source = await openResumable(s3Fetcher('s3://b/cp.spwc', { endpoint }), { signal });
 * ```
 */
export function s3Fetcher(location: string, options: S3Options = {}): RangeFetcher {
  const where = parseS3Location(location);
  if (where === undefined) {
    throw new RemoteNotFoundError(location, 'not an s3://bucket/key location');
  }
  const shown = redactText(location);
  let client: ReturnType<typeof s3Client> | undefined;
  return {
    location: shown,
    async prepare() {
      client ??= s3Client(options, shown);
      await client;
    },
    async open(start, etag, signal, end): Promise<RangeResponse> {
      client ??= s3Client(options, shown);
      const { client: c, s3 } = await client;
      let out;
      try {
        out = await c.send(
          new s3.GetObjectCommand({
            Bucket: where.bucket,
            Key: where.key,
            Range: `bytes=${start}-${end ?? ''}`,
            ...(etag !== undefined ? { IfMatch: etag } : {}),
          }),
          { abortSignal: signal },
        );
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (s3Failure(error).name === 'InvalidRange' && start === 0) {
          // An empty object has no byte 0: the reader reports it as an empty checkpoint.
          return { body: (async function* () {})(), etag: undefined, size: 0, cancel: () => {} };
        }
        throw s3Error(shown, error, start, etag);
      }
      const body = out.Body as Readable | undefined;
      const cancel = () => body?.destroy();
      const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(out.ContentRange ?? '');
      // No Content-Range: the store ignored Range and sent the whole object (resume.ts skips
      // what was consumed before). The SDK never decodes a body, so its bytes are the object's.
      const range =
        m !== null && Number(m[1]) === start
          ? { offset: start, size: Number(m[3]) }
          : m === null && out.ContentLength !== undefined
            ? { offset: 0, size: out.ContentLength }
            : undefined;
      if (range === undefined || body === undefined) {
        cancel();
        throw new RemoteUnsupportedError(
          shown,
          `the store answered '${out.ContentRange ?? ''}' to a Range request at byte ${start}`,
        );
      }
      return { body, etag: out.ETag, ...range, cancel };
    },
    isTransient: transient,
    dispose() {
      void client?.then(
        ({ client: c }) => c.destroy(),
        () => undefined,
      );
    },
  };
}
