/**
 * The AWS SDK v3 S3 client, loaded lazily: `@aws-sdk/client-s3` is an optional dependency,
 * imported only when an `s3://` location is used, so importing Spillway (or reading local and
 * `http(s)://` checkpoints) never needs it. Credentials come from the SDK's standard chain
 * (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, profiles, instance roles); Spillway never sees
 * or prints them.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { RemoteError } from '../errors.ts';
import type { S3Options } from './remote-options.ts';
import { bucketAndKey, prefixOf } from './schemes.ts';

export type { S3Options };

/** The SDK module, as the lazy import gives it. */
export type S3Sdk = typeof import('@aws-sdk/client-s3');

/** `s3://bucket/key` split; a location without a bucket or key is bad input. */
export function parseS3Location(location: string): { bucket: string; key: string } | undefined {
  return bucketAndKey(location, 's3');
}

let sdk: Promise<S3Sdk> | undefined;

/** Loads the SDK once; a missing optional dependency is one clear line, not a stack. */
export function loadS3Sdk(location = prefixOf('s3')): Promise<S3Sdk> {
  // A specifier in a variable keeps bundlers and the type-only import above from pulling it in.
  const name = '@aws-sdk/client-s3';
  sdk ??= (import(name) as Promise<S3Sdk>).catch((error: unknown) => {
    sdk = undefined;
    throw new RemoteError(
      location,
      'needs the optional dependency @aws-sdk/client-s3 (npm install @aws-sdk/client-s3)',
      0,
      { cause: error },
    );
  });
  return sdk;
}

/**
 * A client for `options`. Spillway retries itself (from the last byte read, with `If-Match`),
 * so the SDK's own retries are off; checksums are computed only where S3 requires them, which
 * keeps uploads plain for S3-compatible stores.
 *
 * @example
 * ```ts
 * const { client, s3 } = await s3Client({ endpoint: 'http://127.0.0.1:9000' });
 * await client.send(new s3.HeadBucketCommand({ Bucket: 'b' }));
 * ```
 */
export async function s3Client(
  options: S3Options = {},
  location?: string,
): Promise<{ client: S3Client; s3: S3Sdk }> {
  const s3 = await loadS3Sdk(location);
  const endpoint = options.endpoint;
  const client = new s3.S3Client({
    region:
      options.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
    ...(endpoint !== undefined ? { endpoint, forcePathStyle: true } : {}),
    ...(options.credentials !== undefined ? { credentials: options.credentials } : {}),
    maxAttempts: 1,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return { client, s3 };
}

/** The HTTP status and error name of an SDK failure (a network error has no status). */
export function s3Failure(error: unknown): { status: number | undefined; name: string } {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  return { status: e?.$metadata?.httpStatusCode, name: e?.name ?? 'Error' };
}
