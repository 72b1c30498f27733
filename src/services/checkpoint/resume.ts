/**
 * A remote checkpoint read as one sequential byte stream that survives a flaky network: a
 * reset connection, a 5xx, a stalled body or a truncated response is retried with a ranged
 * request from the next byte the reader has not consumed, with bounded retries, backoff and an
 * overall deadline. The first response's ETag and size are pinned; every resumed request sends
 * `If-Match` and its answer is checked again, so two versions of an object are never spliced
 * (a {@link CheckpointChangedError} instead).
 *
 * Where it resumes: at the exact byte after the last one handed to the checkpoint reader. That
 * byte is at or after the last entry boundary the reader verified (the reader checks an entry's
 * CRC over all its bytes, across any resume), and nothing the reader was given is ever given
 * again, so the spill writer never sees a byte twice (G6) and a resume costs no re-download.
 *
 * Memory: one response chunk at a time (G8), whatever the object's size.
 */
import { AbortedError, CheckpointChangedError, RemoteError } from '../errors.ts';

/** One ranged response: the object's bytes from the requested start to its end. */
export interface RangeResponse {
  /** The body, chunk by chunk. */
  readonly body: AsyncIterable<Uint8Array>;
  /** The object's ETag as the server sent it (quotes included), if it sent one. */
  readonly etag: string | undefined;
  /** The whole object's size (from `Content-Range`, or `Content-Length` for a full answer). */
  readonly size: number;
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
  /** A body that delivers nothing for this long is a stall, retried; default 30 s. */
  stallTimeoutMs?: number;
  /** No retry starts after this long since the read began; default 30 min. */
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

const DEFAULTS = {
  maxRetries: 6,
  backoffMs: 100,
  maxBackoffMs: 5_000,
  stallTimeoutMs: 30_000,
  deadlineMs: 30 * 60_000,
};

class Stalled extends Error {}
class Truncated extends Error {}

/**
 * A remote object as a positional reader with the shape of a local file (`read`, `close`), so
 * the checkpoint reader consumes either without knowing which.
 */
export class ResumableRead {
  private response: RangeResponse | undefined;
  private iterator: AsyncIterator<Uint8Array> | undefined;
  private attempt: AbortController | undefined;
  private pending: Uint8Array | undefined;
  private pendingAt = 0;
  private position = 0;
  private etag: string | undefined;
  private size = -1;
  private retries = 0;
  private streak = 0;
  private progressSinceRetry = true;
  private closed = false;
  private readonly started = performance.now();
  private readonly policy: Required<RetryPolicy>;

  constructor(
    private readonly fetcher: RangeFetcher,
    private readonly options: ResumableOptions,
  ) {
    this.policy = {
      maxRetries: options.maxRetries ?? DEFAULTS.maxRetries,
      backoffMs: options.backoffMs ?? DEFAULTS.backoffMs,
      maxBackoffMs: options.maxBackoffMs ?? DEFAULTS.maxBackoffMs,
      stallTimeoutMs: options.stallTimeoutMs ?? DEFAULTS.stallTimeoutMs,
      deadlineMs: options.deadlineMs ?? DEFAULTS.deadlineMs,
    };
  }

  /** The object's size, known once {@link start} resolved. */
  get bytes(): number {
    return this.size;
  }

  /** Retries so far. */
  get retryCount(): number {
    return this.retries;
  }

  /** Makes the first request (retried like any other): size and ETag are pinned by it. */
  async start(): Promise<void> {
    await this.withRetries(() => this.connect());
  }

  /**
   * Reads up to `length` bytes at `position` into `buffer[offset…]`, waiting until that many
   * arrived or the object ended; returns the bytes read (0 at the end). A position other than
   * the next one starts a new ranged request there.
   */
  async read(buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
    if (this.closed) throw new AbortedError(`${this.fetcher.location}: read after close`);
    if (position !== this.position) {
      this.dropResponse();
      this.position = position;
    }
    let filled = 0;
    while (filled < length && this.position < this.size) {
      if (this.pending === undefined) {
        await this.withRetries(() => this.nextChunk());
        continue;
      }
      const take = Math.min(length - filled, this.pending.length - this.pendingAt);
      buffer.set(this.pending.subarray(this.pendingAt, this.pendingAt + take), offset + filled);
      this.pendingAt += take;
      this.position += take;
      filled += take;
      this.progressSinceRetry = true;
      if (this.pendingAt >= this.pending.length) this.pending = undefined;
    }
    return filled;
  }

  /** Stops the request in flight; idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.dropResponse();
    this.fetcher.dispose?.();
  }

  private throwIfAborted(): void {
    const signal = this.options.signal;
    if (signal?.aborted === true) {
      throw signal.reason ?? new AbortedError(`${this.fetcher.location}: read aborted`);
    }
  }

  private async connect(): Promise<void> {
    this.throwIfAborted();
    this.dropResponse();
    const attempt = new AbortController();
    const outer = this.options.signal;
    const onAbort = () => attempt.abort(outer?.reason);
    outer?.addEventListener('abort', onAbort, { once: true });
    this.attempt = attempt;
    attempt.signal.addEventListener('abort', () => outer?.removeEventListener('abort', onAbort), {
      once: true,
    });
    const response = await this.fetcher.open(
      this.position,
      this.etag,
      attempt.signal,
      this.options.probeEnd,
    );
    if (this.size < 0) {
      this.size = response.size;
      this.etag = response.etag;
    } else if (
      response.size !== this.size ||
      (this.etag !== undefined && response.etag !== undefined && response.etag !== this.etag)
    ) {
      response.cancel();
      throw new CheckpointChangedError(
        this.fetcher.location,
        this.position,
        `${this.etag ?? '(none)'} (${this.size} bytes)`,
        `${response.etag ?? '(none)'} (${response.size} bytes)`,
      );
    }
    this.response = response;
    this.iterator = response.body[Symbol.asyncIterator]();
  }

  private async nextChunk(): Promise<void> {
    if (this.iterator === undefined) await this.connect();
    const iterator = this.iterator!;
    let timer: NodeJS.Timeout | undefined;
    const stall = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Stalled(`no byte for ${this.policy.stallTimeoutMs} ms`)),
        this.policy.stallTimeoutMs,
      );
    });
    const next = iterator.next();
    // Once the race is lost the pending next() rejects when the response is cancelled.
    next.catch(() => undefined);
    try {
      const r = await Promise.race([next, stall]);
      if (r.done === true) {
        throw new Truncated(`response ended at byte ${this.position} of ${this.size}`);
      }
      if (r.value.length > 0) {
        this.pending = r.value;
        this.pendingAt = 0;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs `step`, retrying transient failures from the current position. */
  private async withRetries(step: () => Promise<void>): Promise<void> {
    for (;;) {
      this.throwIfAborted();
      try {
        await step();
        return;
      } catch (error) {
        this.throwIfAborted();
        if (!this.transient(error)) throw error;
        this.dropResponse();
        await this.backoff(error);
      }
    }
  }

  private transient(error: unknown): boolean {
    if (error instanceof Stalled || error instanceof Truncated) return true;
    // A body that fails mid-stream (reset, premature close) is the network's doing; an open
    // that fails is classified by the source (a 404 is final, a 503 is not).
    if (this.response === undefined && this.iterator === undefined) {
      return this.fetcher.isTransient(error);
    }
    return !(error instanceof CheckpointChangedError);
  }

  private async backoff(error: unknown): Promise<void> {
    if (this.progressSinceRetry) this.streak = 0;
    this.progressSinceRetry = false;
    this.streak++;
    this.retries++;
    const reason = (error as Error | undefined)?.message ?? String(error);
    const { maxRetries, backoffMs, maxBackoffMs, deadlineMs } = this.policy;
    if (this.streak > maxRetries) {
      throw new RemoteError(
        this.fetcher.location,
        `gave up after ${maxRetries} retries in a row at byte ${this.position}: ${reason}`,
        this.retries - 1,
        { cause: error },
      );
    }
    const base = Math.min(maxBackoffMs, backoffMs * 2 ** (this.streak - 1));
    const delayMs = Math.round(base / 2 + (Math.random() * base) / 2);
    if (performance.now() - this.started + delayMs > deadlineMs) {
      throw new RemoteError(
        this.fetcher.location,
        `deadline of ${deadlineMs} ms passed at byte ${this.position}: ${reason}`,
        this.retries - 1,
        { cause: error },
      );
    }
    this.options.onRetry?.({ retry: this.retries, offset: this.position, reason, delayMs });
    await abortableDelay(delayMs, this.options.signal);
  }

  private dropResponse(): void {
    this.pending = undefined;
    this.response?.cancel();
    this.attempt?.abort(new AbortedError(`${this.fetcher.location}: request dropped`));
    this.response = undefined;
    this.iterator = undefined;
    this.attempt = undefined;
  }
}

/**
 * Opens `fetcher`'s object for resumable sequential reading (the first request is made here).
 * The caller owns the result and must close it.
 *
 * @example
 * ```ts
 * const source = await openResumable(httpFetcher(url), { signal, onRetry: () => retries++ });
 * try { await source.read(buf, 0, buf.length, 0); } finally { await source.close(); }
 * ```
 */
export async function openResumable(
  fetcher: RangeFetcher,
  options: ResumableOptions = {},
): Promise<ResumableRead> {
  const read = new ResumableRead(fetcher, options);
  try {
    await read.start();
  } catch (error) {
    await read.close();
    throw error;
  }
  return read;
}

function abortableDelay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
