/**
 * A remote checkpoint read as one sequential byte stream that survives a flaky network: a
 * reset connection, a 5xx, a stalled body or a truncated response is retried with a ranged
 * request from the next byte the reader has not consumed, with bounded retries, backoff and a
 * hard deadline. Two versions of an object are never spliced (G12): the first answer's size and
 * ETag are pinned, and a resume is made only when the object is proven unchanged —
 * - by a strong ETag: sent as `If-Match` and compared again (some stores ignore `If-Match`);
 * - without one (no ETag, or a weak `W/"…"` one, which says "equivalent", not "the same
 *   bytes"): by reading the object again from byte 0 and checking that the bytes already
 *   consumed have the same SHA-256 as the first time, before a single new byte is handed on.
 *   Then every byte handed on is the new answer's own (the old ones are proven equal to it).
 * Either way a {@link CheckpointChangedError} otherwise. The end of the object is where its
 * pinned size says, never where an answer happens to stop (an SPWC file cut at an entry
 * boundary is itself valid, and shorter).
 *
 * Bounded in time (G11): the stall timeout covers waiting for an answer's headers as well as
 * for each body chunk, and the deadline is one timer over the whole read that aborts whatever
 * is in flight, so a server that drips a byte every 100 ms or never answers ends the read by
 * then ({@link RemoteTimeoutError}).
 *
 * Where it resumes: at the exact byte after the last one handed to the checkpoint reader. That
 * byte is at or after the last entry boundary the reader verified (the reader checks an entry's
 * CRC over all its bytes, across any resume), and nothing the reader was given is ever given
 * again, so the spill writer never sees a byte twice (G6).
 *
 * Memory: one response chunk at a time (G8), whatever the object's size.
 */
import type { Hash } from 'node:crypto';
import { createHash } from '../node-crypto.ts';
import {
  AbortedError,
  CheckpointChangedError,
  RemoteError,
  RemoteTimeoutError,
  RemoteUnsupportedError,
} from '../errors.ts';
import type {
  RangeFetcher,
  RangeResponse,
  ResumableOptions,
  RetryPolicy,
} from './range-fetcher.ts';

const DEFAULTS = {
  maxRetries: 6,
  backoffMs: 100,
  maxBackoffMs: 5_000,
  stallTimeoutMs: 30_000,
  deadlineMs: 30 * 60_000,
};

/**
 * `ms` as a timer can take it: Node fires a timer above 2^31-1 ms (~24.8 days) after 1 ms, so a
 * huge or infinite deadline or stall timeout ("never") would fire at once.
 */
const timerMs = (ms: number): number => Math.min(ms, 2 ** 31 - 1);

class Stalled extends Error {}
class Truncated extends Error {}

/** Short hex of a digest, for messages. */
const short = (digest: Buffer): string => `${digest.toString('hex').slice(0, 16)}…`;

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
  /** The next byte to hand on: every byte before it was consumed from some answer. */
  private position = 0;
  /** The object offset of the next byte the current answer's body gives. */
  private streamAt = 0;
  private etag: string | undefined;
  private size = -1;
  /**
   * Without a strong ETag: SHA-256 of bytes [0, position), the proof a resumed answer must
   * match; undefined when a strong ETag proves the object instead.
   */
  private hash: Hash | undefined;
  /** While an answer re-reads bytes before `position`: their SHA-256, checked at `position`. */
  private verify: Hash | undefined;
  private retries = 0;
  private streak = 0;
  private progressSinceRetry = true;
  private lastFailure: string | undefined;
  private closed = false;
  private readonly started = performance.now();
  /** Set once the deadline passed: every wait rejects with it from then on. */
  private expired: RemoteTimeoutError | undefined;
  private readonly deadline: NodeJS.Timeout;
  /** Rejects the wait in progress (deadline, close). */
  private interrupt: ((error: unknown) => void) | undefined;
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
    // One timer for the whole read, so no wait (headers, a dripping body, a backoff) outlives it.
    // unref: the socket in flight, not this timer, is what keeps a process alive.
    this.deadline = setTimeout(() => this.expire(), timerMs(this.policy.deadlineMs)).unref();
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
   * arrived or the object ended; returns the bytes read (0 at the end, which is where the pinned
   * size says). A position after the next one starts a new ranged request there (without a
   * strong ETag: reads on to it, so the proof covers every byte); an earlier one re-requests it,
   * which without a strong ETag is refused (it could not be proven to be the same object).
   */
  async read(buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
    if (this.closed) throw new AbortedError(`${this.fetcher.location}: read after close`);
    if (position < this.position) {
      if (this.hash !== undefined) {
        throw new RemoteUnsupportedError(
          this.fetcher.location,
          `cannot read byte ${position} again after byte ${this.position}: the server gives no ` +
            'strong ETag, so a second request could not be proven to read the same object',
        );
      }
      this.dropResponse();
      this.position = position;
    } else if (position > this.position) {
      if (this.hash === undefined) {
        this.dropResponse();
        this.position = position;
      } else {
        await this.consume(undefined, 0, position - this.position);
      }
    }
    return this.consume(buffer, offset, length);
  }

  /** Stops the request in flight; idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.deadline);
    this.interrupt?.(new AbortedError(`${this.fetcher.location}: read closed`));
    this.dropResponse();
    this.fetcher.dispose?.();
  }

  /** Hands on (copies, unless `buffer` is undefined: skips) up to `length` bytes. */
  private async consume(
    buffer: Buffer | undefined,
    offset: number,
    length: number,
  ): Promise<number> {
    let filled = 0;
    while (filled < length && this.position < this.size) {
      if (this.pending === undefined) {
        await this.withRetries(() => this.nextChunk());
        continue;
      }
      const take = Math.min(length - filled, this.pending.length - this.pendingAt);
      const bytes = this.pending.subarray(this.pendingAt, this.pendingAt + take);
      buffer?.set(bytes, offset + filled);
      this.hash?.update(bytes);
      this.pendingAt += take;
      this.position += take;
      filled += take;
      this.progressSinceRetry = true;
      if (this.pendingAt >= this.pending.length) this.pending = undefined;
    }
    return filled;
  }

  private throwIfAborted(): void {
    const signal = this.options.signal;
    if (signal?.aborted === true) {
      throw signal.reason ?? new AbortedError(`${this.fetcher.location}: read aborted`);
    }
  }

  /** The deadline passed: fail the wait in progress and every later one, close the socket. */
  private expire(): void {
    if (this.closed) return;
    const last = this.lastFailure === undefined ? '' : ` (last retry: ${this.lastFailure})`;
    this.expired = new RemoteTimeoutError(
      this.fetcher.location,
      `deadline of ${this.policy.deadlineMs} ms passed at byte ${this.position}` +
        `${this.size >= 0 ? ` of ${this.size}` : ''}${last}`,
      this.retries,
    );
    this.interrupt?.(this.expired);
    this.dropResponse();
  }

  /**
   * Waits for `work`, but never past the deadline or an abort, nor (with `stall`) longer than
   * the stall timeout; `work`'s late outcome is dropped.
   */
  private guarded<T>(work: Promise<T>, stall?: string): Promise<T> {
    work.catch(() => undefined);
    return new Promise<T>((resolve, reject) => {
      if (this.expired !== undefined) return reject(this.expired);
      const signal = this.options.signal;
      if (signal?.aborted === true) return reject(signal.reason);
      let timer: NodeJS.Timeout | undefined;
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (this.interrupt === fail) this.interrupt = undefined;
      };
      const fail = (error: unknown) => {
        settle();
        reject(error);
      };
      const onAbort = () => fail(signal!.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.interrupt = fail;
      if (stall !== undefined) {
        const ms = this.policy.stallTimeoutMs;
        timer = setTimeout(() => fail(new Stalled(`no ${stall} for ${ms} ms`)), timerMs(ms));
      }
      work.then((value) => {
        settle();
        resolve(value);
      }, fail);
    });
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
    if (this.fetcher.prepare !== undefined) await this.guarded(this.fetcher.prepare());
    // Without a strong ETag the object is proven by its bytes: read it again from byte 0.
    const from = this.hash !== undefined ? 0 : this.position;
    const response = await this.guarded(
      this.fetcher.open(from, this.etag, attempt.signal, this.options.probeEnd),
      'answer',
    );
    if (this.size < 0) {
      this.size = response.size;
      this.etag = response.etag;
      if (this.etag === undefined || /^W\//.test(this.etag)) this.hash = createHash('sha256');
    } else if (
      response.size !== this.size ||
      (this.etag !== undefined &&
        response.etag !== this.etag &&
        (response.etag !== undefined || this.hash === undefined))
    ) {
      // A strong ETag that is missing from a resumed answer proves nothing: refused as well.
      response.cancel();
      throw new CheckpointChangedError(
        this.fetcher.location,
        this.position,
        `${this.etag ?? '(none)'} (${this.size} bytes)`,
        `${response.etag ?? '(none)'} (${response.size} bytes)`,
      );
    }
    const offset = response.offset ?? from;
    if (offset > this.position) {
      response.cancel();
      throw new RemoteUnsupportedError(
        this.fetcher.location,
        `asked for byte ${from}, the answer starts at byte ${offset}`,
      );
    }
    this.response = response;
    this.iterator = response.body[Symbol.asyncIterator]();
    this.streamAt = offset;
    if (this.hash !== undefined && this.position > 0) this.verify = createHash('sha256');
  }

  private async nextChunk(): Promise<void> {
    if (this.iterator === undefined) await this.connect();
    const iterator = this.iterator!;
    for (;;) {
      const r = await this.guarded(iterator.next(), 'byte');
      if (r.done === true) {
        throw new Truncated(`response ended at byte ${this.streamAt} of ${this.size}`);
      }
      let chunk = r.value;
      if (this.streamAt < this.position) {
        // Bytes consumed before: skipped, and proven equal to those when no strong ETag can.
        const k = Math.min(chunk.length, this.position - this.streamAt);
        this.verify?.update(chunk.subarray(0, k));
        this.streamAt += k;
        chunk = chunk.subarray(k);
        if (this.streamAt === this.position) this.checkReRead();
      }
      this.streamAt += chunk.length;
      if (chunk.length > 0) {
        this.pending = chunk;
        this.pendingAt = 0;
        return;
      }
    }
  }

  /** The re-read bytes [0, position) must be those consumed the first time, byte for byte. */
  private checkReRead(): void {
    const verify = this.verify;
    if (verify === undefined) return;
    this.verify = undefined;
    const want = this.hash!.copy().digest();
    const got = verify.digest();
    if (!want.equals(got)) {
      const range = `bytes 0-${this.position - 1}`;
      throw new CheckpointChangedError(
        this.fetcher.location,
        this.position,
        `${this.etag ?? '(none)'} (no strong ETag; ${range}: sha256 ${short(want)})`,
        `${range}: sha256 ${short(got)}`,
      );
    }
  }

  /** Runs `step`, retrying transient failures from the current position. */
  private async withRetries(step: () => Promise<void>): Promise<void> {
    for (;;) {
      this.throwIfAborted();
      if (this.expired !== undefined) throw this.expired;
      try {
        await step();
        return;
      } catch (error) {
        this.throwIfAborted();
        if (this.expired !== undefined) throw this.expired;
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
    this.lastFailure = reason;
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
      // The retry could not even start before the deadline: fail now rather than sleep first.
      throw new RemoteTimeoutError(
        this.fetcher.location,
        `deadline of ${deadlineMs} ms passed at byte ${this.position}: ${reason}`,
        this.retries - 1,
        { cause: error },
      );
    }
    this.options.onRetry?.({ retry: this.retries, offset: this.position, reason, delayMs });
    let timer: NodeJS.Timeout | undefined;
    const wait = new Promise<void>((resolve) => (timer = setTimeout(resolve, delayMs)));
    try {
      await this.guarded(wait);
    } finally {
      clearTimeout(timer);
    }
  }

  private dropResponse(): void {
    this.pending = undefined;
    this.verify = undefined;
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
