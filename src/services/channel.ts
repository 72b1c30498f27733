/**
 * An input channel as the checkpoint names it, and what recovers into it: the one definition of
 * a channel's identity, its key, and the consumer contract every layer shares.
 */

/**
 * An input channel, identified as in the checkpoint: (gate, channel).
 *
 * @example
 * ```ts
 * const channels = ({ gate, channel }: ChannelInfo) => createWriteStream(`${gate}-${channel}.bin`);
 * ```
 */
export interface ChannelInfo {
  readonly gate: number;
  readonly channel: number;
}

/**
 * `gate-<g>-channel-<c>`: the key used for maps and output file names (recovered data goes to
 * `gate-<g>-channel-<c>.bin`).
 *
 * @example
 * ```ts
 * channelKey({ gate: 0, channel: 3 }); // 'gate-0-channel-3'
 * ```
 */
export function channelKey(info: ChannelInfo): string {
  return `gate-${info.gate}-channel-${info.channel}`;
}

/**
 * The consumer of one input channel's recovered bytes.
 *
 * @example A borrowing consumer: it copies what it needs, so the drain may reuse its memory.
 * ```ts
 * const consumer: ChannelConsumer = {
 *   borrows: true,
 *   onBuffer: (buffer) => void (crc = crc32(buffer, crc)),
 *   onFinished: () => console.log(crc),
 * };
 * ```
 */
export interface ChannelConsumer {
  /**
   * The consumer reads or copies each buffer before `onBuffer` returns (or before the promise
   * it returns settles) and keeps no reference; the drainer may then reuse the memory. When
   * every consumer of a drainer borrows, its reads go into one reused buffer instead of a
   * fresh 1 MiB one per read (no page faults, no external memory waiting for a GC).
   */
  readonly borrows?: boolean;
  /**
   * Takes ownership of `buffer`, even when it throws, unless the consumer
   * {@link ChannelConsumer.borrows}: then the buffer is only lent until `onBuffer` returns, or
   * until the promise it returns settles. May return a promise (backpressure).
   */
  onBuffer(buffer: Buffer): void | Promise<void>;
  /** No more recovered bytes for this channel. Called exactly once, after every delivery. */
  onFinished(): void | Promise<void>;
  /**
   * A checkpoint barrier: everything delivered before it belongs to the checkpoint's in-flight
   * part, everything after it is in the snapshot remainder. Must not block.
   */
  onBarrier?(checkpointId: number): void;
}

/**
 * A channel as one number, `gate × 65536 + channel`: what maps and sets key channels by, so
 * that per-channel bookkeeping costs a number, not a string (G8: hundreds of thousands of
 * channels).
 *
 * @example
 * ```ts
 * channelId({ gate: 1, channel: 2 }); // 65538
 * ```
 */
export function channelId(info: ChannelInfo): number {
  return info.gate * 65536 + info.channel;
}

/**
 * The channel a {@link channelId} names.
 *
 * @example
 * ```ts
 * channelOfId(65538); // { gate: 1, channel: 2 }
 * ```
 */
export function channelOfId(id: number): ChannelInfo {
  return { gate: Math.floor(id / 65536), channel: id % 65536 };
}
