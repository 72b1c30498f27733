/**
 * A channel may be recovered into a Node `Writable` or a web `WritableStream` as well as into a
 * {@link ChannelConsumer}: this turns either stream into a consumer. Backpressure is the
 * stream's own (`write()` returning false, `desiredSize`); a stream error at any point — a
 * write, the end, the close — is the failure of the delivery that meets it, so it becomes the
 * task's first cause; and a stream is always ended (success) or destroyed / aborted (any other
 * ending), never left open.
 */
import type { Writable } from 'node:stream';
import type { ChannelConsumer } from './channel.ts';
import { MisuseError, toError } from './errors.ts';

/**
 * What `channels(info)` may return: a consumer, a Node `Writable`, or a web `WritableStream`.
 *
 * @example
 * ```ts
 * const channels = ({ gate, channel }: ChannelInfo): ChannelTarget =>
 *   createWriteStream(`gate-${gate}-channel-${channel}.bin`);
 * ```
 */
export type ChannelTarget = ChannelConsumer | Writable | WritableStream<Uint8Array>;

/** A consumer adapted from a stream: it can be ended early when the task ends otherwise. */
export interface StreamConsumer extends ChannelConsumer {
  /** Destroys (Node) or aborts (web) the stream unless it was finished; idempotent. */
  release(reason: unknown): void;
}

function isNodeWritable(target: object): target is Writable {
  return (
    typeof (target as Writable).write === 'function' &&
    typeof (target as Writable).end === 'function' &&
    typeof (target as Writable).on === 'function'
  );
}

function isWebWritable(target: object): target is WritableStream<Uint8Array> {
  return typeof (target as WritableStream).getWriter === 'function';
}

/**
 * The consumer for `target`: itself if it is one, an adapter if it is a stream.
 *
 * @throws MisuseError (`ERR_SPILLWAY_MISUSE`) when `target` is none of the three: a mistake in
 *   the caller's `channels`, not a fault of Spillway's (it was reported as an internal error).
 * @example
 * ```ts
 * const consumer = toChannelConsumer(createWriteStream('out.bin'));
 * await consumer.onBuffer(Buffer.from('AB'));
 * await consumer.onFinished();
 * ```
 */
export function toChannelConsumer(target: ChannelTarget): ChannelConsumer | StreamConsumer {
  if (target === null || typeof target !== 'object') {
    throw new MisuseError(
      `channels(info) returned ${target === null ? 'null' : typeof target}; it must return a ChannelConsumer ({ onBuffer, onFinished }), a Writable or a WritableStream`,
    );
  }
  if (isNodeWritable(target)) return new NodeWritableConsumer(target);
  if (isWebWritable(target)) return new WebWritableConsumer(target);
  const c = target as ChannelConsumer;
  if (typeof c.onBuffer === 'function' && typeof c.onFinished === 'function') return c;
  const has = Object.keys(c).filter(
    (k) => typeof (c as unknown as Record<string, unknown>)[k] === 'function',
  );
  throw new MisuseError(
    `channels(info) returned an object with ${has.length > 0 ? `only ${has.join(', ')}` : 'no methods'}; it must return a ChannelConsumer ({ onBuffer, onFinished }), a Writable or a WritableStream`,
  );
}

/** Whether a consumer is a stream adapter (it then needs releasing on an early ending). */
export function isStreamConsumer(c: ChannelConsumer): c is StreamConsumer {
  return typeof (c as StreamConsumer).release === 'function';
}

/** A Node Writable as a channel consumer. */
class NodeWritableConsumer implements StreamConsumer {
  // The stream keeps what it is given until it is written: the drain must not reuse it.
  readonly borrows = false;
  private failure: Error | undefined;
  private ended = false;

  constructor(private readonly stream: Writable) {
    // Listened to from the start: an error the stream reports between deliveries (a failed
    // write behind its buffer, say) fails the next delivery instead of crashing the process.
    stream.on('error', (error: unknown) => {
      this.failure ??= toError(error);
    });
  }

  onBuffer(buffer: Buffer): void | Promise<void> {
    this.check();
    if (this.stream.write(buffer)) return undefined;
    return this.waitFor('drain');
  }

  async onFinished(): Promise<void> {
    this.check();
    this.ended = true;
    this.stream.end();
    // 'finish' when everything was flushed; then 'close' once the resource is released, where
    // a stream closes one (fs.WriteStream closes its descriptor): a failure there fails too.
    await this.waitFor('finish');
    if (this.stream.writableFinished && emitsClose(this.stream) && !this.stream.closed) {
      await this.waitFor('close');
    }
    this.check();
  }

  release(): void {
    if (this.ended && this.stream.writableFinished) return;
    this.ended = true;
    if (!this.stream.destroyed) this.stream.destroy();
  }

  private check(): void {
    if (this.failure !== undefined) throw this.failure;
    if (this.stream.destroyed && !this.ended) {
      throw new Error('the channel stream was destroyed before the recovery ended');
    }
  }

  /** Resolves on `event`; rejects on the stream's error or an early close. */
  private waitFor(event: 'drain' | 'finish' | 'close'): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const stream = this.stream;
      const done = (error?: Error) => {
        stream.off(event, onEvent);
        stream.off('error', onError);
        stream.off('close', onClose);
        if (error !== undefined) reject(error);
        else resolve();
      };
      const onEvent = () => done();
      const onError = (error: unknown) => done(toError(error));
      const onClose = () => {
        if (event === 'close') return done(this.failure);
        done(this.failure ?? new Error(`the channel stream closed before '${event}'`));
      };
      if (this.failure !== undefined) return reject(this.failure);
      stream.once(event, onEvent);
      stream.once('error', onError);
      if (event !== 'close') stream.once('close', onClose);
    });
  }
}

/** Whether the stream will emit 'close' after 'finish' (it destroys itself, and says so). */
function emitsClose(stream: Writable): boolean {
  const state = (
    stream as Writable & { _writableState?: { emitClose?: boolean; autoDestroy?: boolean } }
  )._writableState;
  return state?.emitClose !== false && state?.autoDestroy !== false;
}

/** A web WritableStream as a channel consumer. */
class WebWritableConsumer implements StreamConsumer {
  readonly borrows = false;
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>;
  private failure: Error | undefined;
  private ended = false;

  constructor(stream: WritableStream<Uint8Array>) {
    this.writer = stream.getWriter();
    this.writer.closed.catch((error: unknown) => {
      this.failure ??= toError(error);
    });
  }

  onBuffer(buffer: Buffer): void | Promise<void> {
    this.check();
    // Not awaited one by one: the stream queues up to its high-water mark, and `ready` says
    // when it wants more. A write's failure also errors the stream, so `closed` reports it.
    this.writer.write(buffer).catch((error: unknown) => {
      this.failure ??= toError(error);
    });
    if ((this.writer.desiredSize ?? 1) > 0) return undefined;
    return this.writer.ready.then(
      () => this.check(),
      (error: unknown) => {
        this.failure ??= toError(error);
        throw this.failure;
      },
    );
  }

  async onFinished(): Promise<void> {
    this.check();
    this.ended = true;
    try {
      await this.writer.close();
    } catch (error) {
      this.failure ??= toError(error);
    }
    this.check();
  }

  release(reason: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.writer.abort(reason).catch(() => undefined);
  }

  private check(): void {
    if (this.failure !== undefined) throw this.failure;
  }
}
