/** Errors of a remote location (`http(s)://`, `s3://`): each names the location, redacted. */
import { SpillwayError } from './base.ts';

/** What the remote errors share: the location (redacted) and the reason, as `location: reason`. */
export abstract class RemoteLocationError extends SpillwayError {
  constructor(
    readonly location: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${location}: ${reason}`, options);
  }
}

/**
 * What a remote read that gave up carries besides the location and reason: how many times it
 * was retried first. {@link RemoteError} (failed for good) and {@link RemoteTimeoutError} (its
 * deadline passed) share it; the package groups them under {@link RemoteLocationError} only.
 */
export abstract class RetriedRemoteError extends RemoteLocationError {
  constructor(
    location: string,
    reason: string,
    /** How many times the read was retried before it gave up. */
    readonly retries = 0,
    options?: { cause?: unknown },
  ) {
    super(location, reason, options);
  }
}

/**
 * A remote checkpoint that does not exist: no such object, key or bucket (HTTP 404/410). Bad
 * input, like a missing file. `location` is redacted.
 *
 * @example
 * ```ts
 * new RemoteNotFoundError('s3://b/missing.spwc', 'no such key').message;
 * // 's3://b/missing.spwc: no such key'
 * ```
 */
export class RemoteNotFoundError extends RemoteLocationError {
  override readonly code = 'ERR_SPILLWAY_REMOTE_NOT_FOUND';
}

/**
 * The store refused the credentials or the request (HTTP 401/403, no credentials found): the
 * environment's refusal, reported without any secret. `location` is redacted.
 *
 * @example
 * ```ts
 * new RemoteAccessError('s3://b/cp.spwc', 'access denied (InvalidAccessKeyId)').message;
 * ```
 */
export class RemoteAccessError extends RemoteLocationError {
  override readonly code = 'ERR_SPILLWAY_REMOTE_ACCESS';
}

/**
 * A remote read or upload that failed for good: retries exhausted, the deadline passed, or a
 * response the client cannot use. `retries` = how many times it was retried first.
 *
 * @example
 * ```ts
 * new RemoteError('https://h/cp.spwc?<redacted>', 'gave up after 8 retries: HTTP 503', 8);
 * ```
 */
export class RemoteError extends RetriedRemoteError {
  override readonly code = 'ERR_SPILLWAY_REMOTE';
}

/**
 * A remote checkpoint served in a way no retry can make readable as the object's own bytes: an
 * encoded body (`Content-Encoding: gzip` despite `Accept-Encoding: identity`), no size to prove
 * its end by, a range that starts elsewhere than asked. The location is not a usable checkpoint
 * as it is served, like a FIFO given as a file: bad input (CLI exit 2). `location` is redacted.
 *
 * @example
 * ```ts
 * new RemoteUnsupportedError('https://h/cp.spwc', 'the body is gzip-encoded …').code;
 * // 'ERR_SPILLWAY_REMOTE_UNSUPPORTED'
 * ```
 */
export class RemoteUnsupportedError extends RemoteLocationError {
  override readonly code = 'ERR_SPILLWAY_REMOTE_UNSUPPORTED';
}

/**
 * A remote read that passed its hard deadline (`deadlineMs`, from the first request to the last
 * byte): a server that drips, or accepts and never answers, ends here instead of never. The
 * request in flight was aborted; `retries` = how many times the read was retried first.
 *
 * @example
 * ```ts
 * new RemoteTimeoutError('https://h/cp.spwc', 'deadline of 8000 ms passed at byte 12', 0).code;
 * // 'ERR_SPILLWAY_REMOTE_TIMEOUT'
 * ```
 */
export class RemoteTimeoutError extends RetriedRemoteError {
  override readonly code = 'ERR_SPILLWAY_REMOTE_TIMEOUT';
}
