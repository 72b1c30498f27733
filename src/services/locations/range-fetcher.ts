/**
 * The contract between a remote source and the resumable read (resume.ts): the ranged request
 * a source makes (HTTP or S3, the only part that differs), the answer it gives, and the retry
 * policy and options a caller sets.
 */
/** One ranged response: the object's bytes from the requested start to its end. */
export interface RangeResponse {
  /** The body, chunk by chunk. */
  readonly body: AsyncIterable<Uint8Array>;
  /** The object's ETag as the server sent it (quotes included), if it sent one. */
  readonly etag: string | undefined;
  /** The whole object's size (from `Content-Range`, or `Content-Length` for a full answer). */
  readonly size: number;
  /**
   * Where the body starts in the object; default the requested start. A server that ignored
   * `Range` answers the whole object (0): the bytes before the requested start are skipped.
   */
  readonly offset?: number;
  /** Stops the response (closes its socket); idempotent. */
  cancel(): void;
}

/** How a source makes ranged requests: the only part that differs between HTTP and S3. */
export interface RangeFetcher {
  /** The object, redacted, for messages. */
  readonly location: string;
  /**
   * Requests bytes `start…` (to `end` inclusive if given; `If-Match: etag` once pinned). Throws a
   * typed error for an answer that retrying cannot change (not found, access denied, changed).
   */
  open(
    start: number,
    etag: string | undefined,
    signal: AbortSignal,
    end?: number,
  ): Promise<RangeResponse>;
  /**
   * Local set-up before the first request (an SDK's lazy import), awaited outside the stall
   * timeout, which is for the server's silence only (the deadline still bounds it).
   */
  prepare?(): Promise<void>;
  /** Whether a failure of `open` may be retried (a reset, a 5xx, a timeout). */
  isTransient(error: unknown): boolean;
  /** Releases what the fetcher holds (an SDK client's sockets); called once, on close. */
  dispose?(): void;
}

/**
 * How hard a remote read tries before it fails.
 *
 * @example
 * ```ts
 * const policy: RetryPolicy = { maxRetries: 4, stallTimeoutMs: 5_000, deadlineMs: 60_000 };
 * ```
 */
export interface RetryPolicy {
  /** Retries in a row without a new byte before giving up; default 6. */
  maxRetries?: number;
  /** First backoff delay; doubled per retry in a row, with jitter; default 100 ms. */
  backoffMs?: number;
  /** Largest backoff delay; default 5 s. */
  maxBackoffMs?: number;
  /**
   * An answer whose headers, or a body that delivers nothing, for this long is a stall,
   * retried; default 30 s.
   */
  stallTimeoutMs?: number;
  /**
   * A hard bound on the whole read, from the first request on: when it passes, the request in
   * flight is aborted and the read fails ({@link RemoteTimeoutError}); default 30 min.
   */
  deadlineMs?: number;
}

/** One retry, as progress and the inspector see it. */
export interface RetryInfo {
  /** 1 for the first retry of the whole read, then 2, … */
  readonly retry: number;
  /** The byte the retry resumes from. */
  readonly offset: number;
  /** What failed, redacted. */
  readonly reason: string;
  readonly delayMs: number;
}

/** Options of {@link openResumable}. */
export interface ResumableOptions extends RetryPolicy {
  /** Aborting stops the request in flight (its socket closes) and rejects with the reason. */
  signal?: AbortSignal;
  /** Called before each retry's backoff. */
  onRetry?: (info: RetryInfo) => void;
  /**
   * Ask only for bytes up to this offset (inclusive) at first: a probe that checks an object is
   * there without starting its whole transfer.
   */
  probeEnd?: number;
}
