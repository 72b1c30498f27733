/**
 * Stately's stream (`stately: true`): one event a message, numbered, the newest kept in a
 * buffer bounded in count and bytes for sockets that come later, and relayed between the
 * sockets of `/stately/ws` as `@statelyai/inspect/server` does.
 */
import type { WebSocket } from 'ws';
import { Feed } from './feed.ts';

/**
 * Stately's replay buffer keeps the newest messages, at most this many and at most
 * {@link STATELY_BUFFER_BYTES} bytes: a client may relay messages of up to 1 MiB each, and
 * 2,000 of those would hold ~2 GiB (300 of them grew the relay by 318 MiB before).
 */
export const STATELY_BUFFER_LIMIT = 2_000;
export const STATELY_BUFFER_BYTES = 8 * 1024 * 1024;

/** What the server's `stately()` reports. */
export interface StatelyStats {
  /** Messages relayed since the start. */
  relayed: number;
  /** Of those, kept for a socket that comes later (the newest). */
  buffered: number;
  /** Their bytes: at most {@link STATELY_BUFFER_BYTES}. */
  bufferedBytes: number;
}

/**
 * What a Stately socket is sent first when the relay's buffer no longer holds the start of the
 * stream: how many messages it missed, and what the buffer keeps.
 */
export interface StatelyTrimmedMessage {
  type: '@spillway.trimmed';
  missed: number;
  keeps: { messages: number; bytes: number };
}

/**
 * The Stately relay's buffer and sockets.
 *
 * @example
 * ```ts
 * const relay = new StatelyRelay();
 * relay.add(ws);                                  // gets the buffer, then what others send
 * relay.relay(JSON.stringify(event));             // from our own forwarder
 * ```
 */
export class StatelyRelay {
  private readonly buffer: Buffer[] = [];
  private bufferBytes = 0;
  private seq = 0;
  readonly feed = new Feed((after) => this.replay(after));

  /** A `/stately/ws` socket: the buffered stream, then live; what it sends goes to the others. */
  add(ws: WebSocket): void {
    this.feed.add(ws);
    ws.on('message', (data) => this.relay(data.toString(), ws));
  }

  /** Relays one message to every socket but `from`, and keeps it in the buffer. */
  relay(json: string, from?: WebSocket): void {
    // One Buffer, shared by the buffer and every socket it is sent to.
    const data = Buffer.from(json);
    this.buffer.push(data);
    this.bufferBytes += data.length;
    while (this.buffer.length > STATELY_BUFFER_LIMIT || this.bufferBytes > STATELY_BUFFER_BYTES) {
      this.bufferBytes -= this.buffer.shift()!.length;
    }
    this.feed.publish(data, ++this.seq, from);
  }

  stats(): StatelyStats {
    return { relayed: this.seq, buffered: this.buffer.length, bufferedBytes: this.bufferBytes };
  }

  private replay(after: number): { data: Buffer; seq: number } | undefined {
    const first = this.seq - this.buffer.length + 1;
    if (after + 1 < first) {
      // Trimmed before this socket got them: say so once, in a message of the stream's own
      // shape (`type`) that Stately's clients ignore and our bridge page shows.
      const notice: StatelyTrimmedMessage = {
        type: '@spillway.trimmed',
        missed: first - 1 - after,
        keeps: { messages: STATELY_BUFFER_LIMIT, bytes: STATELY_BUFFER_BYTES },
      };
      return { data: Buffer.from(JSON.stringify(notice)), seq: first - 1 };
    }
    const data = this.buffer[Math.max(after + 1, first) - first];
    return data === undefined ? undefined : { data, seq: Math.max(after + 1, first) };
  }
}
