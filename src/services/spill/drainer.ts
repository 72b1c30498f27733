/**
 * Feeds spilled segments to the input channels in buffer-sized chunks, and cuts checkpoints
 * taken during recovery exactly between delivered bytes and the remainder. Flink's
 * `FetchedChannelStateDrainer` (docs §3.4, §5).
 */
import { AbortedError, ConsumerAbandonedError, MisuseError } from '../errors.ts';
import { channelId, channelKey, type ChannelConsumer } from '../channel.ts';
import type { FetchedChannelState } from './fetched-state.ts';
import { DEFAULT_ABANDON_AFTER_MS, DEFAULT_BUFFER_BYTES } from './limits.ts';
import { SpillReader } from './spill-reader.ts';
import type { ProgressCounters } from '../progress.ts';

export type DrainerPhase = 'ready' | 'draining' | 'drained' | 'fully-consumed';

export interface DrainReport {
  bytes: number;
  buffers: number;
  segments: number;
  channels: number;
}

/**
 * Demuxes segments to channel consumers.
 *
 * Delivering a buffer and committing the reader position happen in one synchronous step, and
 * {@link Drainer.snapshotAndInsertBarriers} is synchronous too: JavaScript cannot interleave
 * inside either, so every byte lands exactly once on one side of a barrier (G6) without a lock.
 *
 * @example
 * ```ts
 * const drainer = new Drainer(state, consumers);   // opens the main reader (one grant)
 * await drainer.drain();                           // delivers, then finishes every channel
 * await drainer.close();                           // releases the main reader's grant
 * ```
 */
export class Drainer {
  private readonly reader: SpillReader;
  /**
   * The consumer of each channel still in recovery, by {@link channelId}: a number per
   * channel, not a string, and a channel's entry goes as soon as it is finished (G8). The
   * map the constructor was given, adopted rather than copied: at hundreds of thousands of
   * channels a second map is tens of megabytes.
   */
  private readonly consumers: Map<number, ChannelConsumer>;
  /** Channels finished so far: those of `state.channels` from here on are still in recovery. */
  private finished = 0;
  private readonly bufferBytes: number;
  private readonly abandonAfterMs: number;
  private readonly progress:
    Pick<ProgressCounters, 'bytesDelivered' | 'channelsDelivered' | 'channelsFinished'> | undefined;
  /** How many of `state.channelEnds` the drain has passed (channels delivered whole). */
  private endsPassed = 0;
  private phaseNow: DrainerPhase = 'ready';
  private closing: Promise<void> | undefined;
  private readonly abort = new AbortController();
  /** How a consumer call the drain is waiting on is abandoned (G11), while there is one. */
  private abandonPending: ((error: Error) => void) | undefined;
  /** The call {@link abandonPending} waits on: which channel, which method. */
  private abandonWhat: { info: { gate: number; channel: number }; what: string } | undefined;
  private abandonTimer: NodeJS.Timeout | undefined;
  private readonly onConsumerError: ((error: unknown) => void) | undefined;

  /**
   * @param consumers one consumer per channel of `state.channels`, keyed by
   *   {@link channelId} (a missing one is an error now, not mid-drain). The drainer takes the
   *   map over: it deletes each channel's entry once the channel is finished.
   * @param options.abandonAfterMs after {@link stop}, how long a consumer call that has not
   *   returned is waited for before it is abandoned; default 3000
   */
  constructor(
    readonly state: FetchedChannelState,
    consumers: Map<number, ChannelConsumer>,
    options: {
      bufferBytes?: number;
      readChunkBytes?: number;
      abandonAfterMs?: number;
      /** Bumped per delivery and per finished channel (no event: whoever watches reads it). */
      progress?: Pick<
        ProgressCounters,
        'bytesDelivered' | 'channelsDelivered' | 'channelsFinished'
      >;
      /**
       * Told of every throw or rejection of a consumer's call (`onBuffer`, `onFinished`,
       * `onBarrier`) before it propagates: how the task tells the caller's errors from its own
       * without wrapping each of hundreds of thousands of consumers.
       */
      onConsumerError?: (error: unknown) => void;
    } = {},
  ) {
    this.onConsumerError = options.onConsumerError;
    this.bufferBytes = options.bufferBytes ?? DEFAULT_BUFFER_BYTES;
    if (this.bufferBytes < 1) throw new RangeError('bufferBytes must be ≥ 1');
    this.abandonAfterMs = options.abandonAfterMs ?? DEFAULT_ABANDON_AFTER_MS;
    this.progress = options.progress;
    let allBorrow = true;
    for (const info of state.channels) {
      const consumer = consumers.get(channelId(info));
      if (consumer === undefined) {
        throw new MisuseError(`no consumer for input channel ${channelKey(info)}`);
      }
      if (consumer.borrows !== true) allBorrow = false;
    }
    this.consumers = consumers;
    // Reuse is safe only if nobody keeps a slice: drain() awaits a returned promise before it
    // reads again, so a borrowing consumer is done with the last fill by then. Snapshot readers
    // (the checkpoint remainder) never reuse: the remainder writer keeps slices across awaits.
    this.reader = SpillReader.open(state, options.readChunkBytes, {
      reuseBuffers: allBorrow,
      maxPieceBytes: this.bufferBytes,
    });
  }

  /** True when every consumer borrows, so the main reader reuses its read buffer. */
  get reusesBuffers(): boolean {
    return this.reader.reusesBuffers;
  }

  get phase(): DrainerPhase {
    return this.phaseNow;
  }

  /**
   * Delivers every segment, then finishes every channel once. Rejects with the first failure
   * (a consumer throwing, a truncated or corrupt spill file); after {@link close} or
   * {@link stop} it rejects with `AbortedError`.
   */
  async drain(): Promise<DrainReport> {
    if (this.phaseNow !== 'ready') throw new MisuseError(`drain() in phase ${this.phaseNow}`);
    this.phaseNow = 'draining';
    const report: DrainReport = { bytes: 0, buffers: 0, segments: 0, channels: 0 };
    const signal = this.abort.signal;
    this.countDelivered(0); // channels without bytes
    for (;;) {
      if (signal.aborted) throw new AbortedError('drain stopped');
      // A header already read costs no promise: at one-byte channels there is one per entry.
      let segment = this.reader.nextSegmentBuffered();
      if (segment === undefined) segment = await this.reader.nextSegment();
      if (segment === null) break;
      report.segments++;
      const consumer = this.consumers.get(channelId(segment));
      if (consumer === undefined) {
        throw new MisuseError(`spill segment for unknown input channel ${channelKey(segment)}`);
      }
      while (segment.remaining > 0) {
        if (signal.aborted) throw new AbortedError('drain stopped');
        const want = Math.min(this.bufferBytes, segment.remaining);
        // No promise round trip for bytes the reader already holds: only a refill awaits.
        let chunk = segment.readBuffered(want);
        if (chunk === undefined) chunk = await segment.read(want);
        if (chunk === null) break;
        // Critical section (docs/flink.md §5 rule 1): commit and hand over with no await between, so a
        // snapshot sees the buffer either delivered and committed, or neither. Commit first:
        // the consumer owns the buffer from the call on (even if it throws), and a checkpoint
        // it triggers from inside onBuffer must not put this buffer in the remainder too.
        segment.commit();
        let pending: void | Promise<void>;
        try {
          pending = consumer.onBuffer(chunk);
        } catch (error) {
          throw this.consumerFailed(error);
        }
        report.bytes += chunk.length;
        report.buffers++;
        if (this.progress !== undefined) this.progress.bytesDelivered += chunk.length;
        // Await only real backpressure: a sync consumer costs no microtask per buffer.
        if (isPromiseLike(pending)) await this.waitFor(pending, segment, 'onBuffer');
      }
      this.countDelivered(report.segments);
    }
    this.countDelivered(Infinity);
    // DRAINED before any channel is finished, so a concurrent snapshot never derives from a
    // reader that is about to be closed (docs/flink.md §5 rule 3).
    this.phaseNow = 'drained';
    const channels = this.state.channels;
    while (this.finished < channels.length) {
      if (signal.aborted) throw new AbortedError('drain stopped');
      const info = channels[this.finished]!;
      const consumer = this.consumers.get(channelId(info))!;
      // Out of recovery (no barrier any more) before its end is announced; forgotten after.
      this.finished++;
      let pending: void | Promise<void>;
      try {
        pending = consumer.onFinished();
      } catch (error) {
        throw this.consumerFailed(error);
      }
      if (isPromiseLike(pending)) await this.waitFor(pending, info, 'onFinished');
      this.consumers.delete(channelId(info));
      report.channels++;
      if (this.progress !== undefined) this.progress.channelsFinished++;
    }
    this.phaseNow = 'fully-consumed';
    return report;
  }

  /**
   * Counts the channels whose last segment is at or before `segments` (the ordinal just
   * delivered) as delivered: live progress, while `onFinished` waits for the whole drain.
   */
  private countDelivered(segments: number): void {
    if (this.progress === undefined) return;
    const ends = this.state.channelEnds;
    if (ends === undefined) {
      if (segments === Infinity) this.progress.channelsDelivered = this.state.channels.length;
      return;
    }
    while (this.endsPassed < ends.length && ends[this.endsPassed]! <= segments) {
      this.endsPassed++;
      this.progress.channelsDelivered++;
    }
  }

  /**
   * Waits for a consumer's promise. After {@link stop} the wait is bounded (G11): a consumer
   * that has not returned `abandonAfterMs` later is abandoned — the drain rejects with
   * {@link ConsumerAbandonedError}, the promise's late outcome is ignored, and the consumer is
   * never called again.
   */
  private waitFor(
    pending: PromiseLike<unknown>,
    info: { gate: number; channel: number },
    what: 'onBuffer' | 'onFinished',
  ): Promise<unknown> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const settle = (done: () => void) => {
        if (settled) return;
        settled = true;
        if (this.abandonPending === abandon) this.abandonPending = undefined;
        // The call returned (or was abandoned): its clock must not hold the process any longer.
        clearTimeout(this.abandonTimer);
        this.abandonTimer = undefined;
        done();
      };
      const abandon = (error: Error) => settle(() => reject(error));
      this.abandonPending = abandon;
      this.abandonWhat = { info, what };
      pending.then(
        (value) => settle(() => resolve(value)),
        (error: unknown) => settle(() => reject(this.consumerFailed(error))),
      );
      if (this.abort.signal.aborted) this.armAbandon(info, what);
    });
  }

  /** A consumer's call threw or rejected with `error`: tells the owner, returns it to throw. */
  private consumerFailed(error: unknown): unknown {
    this.onConsumerError?.(error);
    return error;
  }

  /** Starts the abandonment clock for the call being waited on (once). */
  private armAbandon(info: { gate: number; channel: number }, what: string): void {
    if (this.abandonTimer !== undefined || this.abandonPending === undefined) return;
    this.abandonTimer = setTimeout(() => {
      this.abandonPending?.(
        new ConsumerAbandonedError(
          `${what} of input channel ${channelKey(info)} had not returned ${this.abandonAfterMs} ms ` +
            'after the task began to end; abandoned (its late result is ignored)',
        ),
      );
    }, this.abandonAfterMs);
    // Not unref'd: `done` is pending until this fires, and a process whose only work left is
    // that wait must stay alive for it. Once it fired, nothing of the consumer holds the loop.
  }

  /**
   * Atomically captures the undelivered remainder as a reader and sends a barrier to every
   * channel still in recovery. The returned reader holds its own grant: whoever receives it
   * owns it and must close it. Synchronous on purpose (see the class doc). Throws
   * `AbortedError` (the checkpoint is declined, no barrier sent) when the drainer or the state
   * was closed while bytes were still undelivered.
   */
  snapshotAndInsertBarriers(checkpointId: number): SpillReader {
    if (this.phaseNow === 'fully-consumed') return SpillReader.empty();
    const drained = this.phaseNow === 'drained';
    if (!drained && (this.reader.isClosed || this.state.isClosed)) {
      // Undelivered bytes exist but can no longer be read: an empty remainder behind barriers
      // would make the checkpoint silently lose them (G6). Decline it, as Flink's closed-reader
      // snapshot() does, before any barrier goes out.
      throw new AbortedError(
        `checkpoint ${checkpointId} declined: the spill state was closed before the drain finished`,
      );
    }
    // The cut comes before the barriers: a consumer reacting to its barrier (by cancelling the
    // task, say) must not find the reader closed under a checkpoint half taken.
    const snapshot = drained ? undefined : this.reader.snapshot();
    try {
      const channels = this.state.channels;
      for (let k = this.finished; k < channels.length; k++) {
        this.consumers.get(channelId(channels[k]!))?.onBarrier?.(checkpointId);
      }
    } catch (error) {
      void snapshot?.close().catch(() => undefined);
      throw this.consumerFailed(error);
    }
    return snapshot?.reader() ?? SpillReader.empty();
  }

  /**
   * Makes a running drain stop at its next buffer with `AbortedError`; a consumer call it is
   * waiting on is abandoned if it has not returned `abandonAfterMs` later.
   */
  stop(): void {
    this.abort.abort();
    // Labelled with the call being waited on: the channel the user must look at.
    if (this.abandonPending !== undefined && this.abandonWhat !== undefined) {
      this.armAbandon(this.abandonWhat.info, this.abandonWhat.what);
    }
  }

  /** Stops the drain and closes the main reader (releasing its grant). Idempotent. */
  close(): Promise<void> {
    this.stop();
    this.closing ??= this.reader.close();
    return this.closing;
  }
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}
