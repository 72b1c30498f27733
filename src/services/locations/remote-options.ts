/**
 * The options of remote checkpoints (`http(s)://`, `s3://`), free of any SDK type so that the
 * public types compile without the optional `@aws-sdk/client-s3`.
 */
import type { RetryInfo, RetryPolicy } from './range-fetcher.ts';

export type { RetryInfo, RetryPolicy };

/**
 * Where and how to reach S3.
 *
 * @example
 * ```ts
 * const s3: S3Options = { endpoint: 'http://127.0.0.1:9000' }; // path-style, for MinIO & co.
 * ```
 */
export interface S3Options {
  /** An S3-compatible endpoint (path-style addressing is used then); default AWS's own. */
  endpoint?: string;
  /** Default `AWS_REGION`, then `AWS_DEFAULT_REGION`, then `us-east-1`. */
  region?: string;
  /**
   * Explicit keys instead of the standard credential chain (env, profiles, roles). Never
   * printed: the inspector drops the task's services, and messages never quote them.
   */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

/**
 * How a recovery reads (and writes) remote checkpoints: the S3 endpoint and the retry policy.
 *
 * @example
 * ```ts
 * recoverChannelState({ checkpoint: 's3://b/cp.spwc', remote: { s3: { endpoint }, maxRetries: 4 }, … });
 * ```
 */
export interface RemoteOptions extends RetryPolicy {
  s3?: S3Options;
  /** Called before each retry's backoff (the progress counter `retries` counts them too). */
  onRetry?: (info: RetryInfo) => void;
}
