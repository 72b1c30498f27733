/**
 * Stately's stream (`stately: true`): one event a message, numbered, the newest kept in a
 * buffer bounded in count and bytes for sockets that come later, and relayed between the
 * sockets of `/stately/ws` as `@statelyai/inspect/server` does.
 */
import type { WebSocket } from 'ws';
import { Feed } from './feed.ts';
import {
  STATELY_BUFFER_BYTES,
  STATELY_BUFFER_LIMIT,
  type StatelyStats,
  type StatelyTrimmedMessage,
} from './server-types.ts';

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
