/**
 * One ordered stream of messages (page records, or Stately events) delivered to many sockets,
 * bounded per socket: the inspector server's protection against a client that stops reading.
 */
import { WebSocket } from 'ws';
import { MAX_BUFFERED_BYTES, REPLAY_HIGH_WATER } from './feed-limits.ts';

/** One socket's place in a {@link Feed}. */
interface Subscriber {
  ws: WebSocket;
  /** Sequence number of the last message it was sent (or that its replay reached). */
  sentSeq: number;
  /** Still being sent what came before it connected; live messages wait for it. */
  catchingUp: boolean;
  /** Live bytes published while it was catching up: how far it fell behind the stream. */
  behind: number;
}

/**
 * Delivers one ordered stream (page records, or Stately events) to its sockets, bounded per
 * socket. A new socket is first sent what the feed has (`after`, paced by how fast it reads),
 * then live messages; one that falls more than MAX_BUFFERED_BYTES behind is terminated.
 * Messages are Buffers built once and shared by every socket (a string would be copied for
 * each socket whose kernel buffer is full).
 */
export class Feed {
  readonly subscribers = new Map<WebSocket, Subscriber>();
  peakBufferedBytes = 0;
  dropped = 0;

  /** @param after the next message after seq `seq` from what the feed keeps, or undefined */
  constructor(private readonly after: (seq: number) => { data: Buffer; seq: number } | undefined) {}

  /** Adds a socket: `first` (the page's hello), then the replay, then live messages. */
  add(ws: WebSocket, first?: Buffer): void {
    const sub: Subscriber = { ws, sentSeq: 0, catchingUp: true, behind: 0 };
    this.subscribers.set(ws, sub);
    const gone = () => this.subscribers.delete(ws);
    ws.on('close', gone);
    ws.on('error', gone);
    if (first !== undefined) this.send(sub, first);
    this.replay(sub);
  }

  /** Sends a live message (the stream up to `seq`) to every socket but `except`. */
  publish(data: Buffer, seq: number, except?: WebSocket): void {
    for (const sub of this.subscribers.values()) {
      if (sub.ws === except) continue;
      if (!sub.catchingUp) {
        if (this.send(sub, data)) sub.sentSeq = seq;
      } else {
        // Its replay brings this message from the history; it only counts how far behind it is.
        sub.behind += data.length;
        if (sub.ws.bufferedAmount + sub.behind > MAX_BUFFERED_BYTES) this.drop(sub);
      }
    }
    this.peakBufferedBytes = Math.max(this.peakBufferedBytes, this.bufferedBytes());
  }

  /** Sends to every socket now, ignoring order (the `bye` before closing). */
  sendAll(data: Buffer): void {
    for (const sub of this.subscribers.values()) this.send(sub, data);
  }

  bufferedBytes(): number {
    let n = 0;
    for (const sub of this.subscribers.values()) n += sub.ws.bufferedAmount + sub.behind;
    return n;
  }

  /** Queues `data`, or terminates the socket if that would put it over its bound. */
  private send(sub: Subscriber, data: Buffer, written?: (error?: Error) => void): boolean {
    if (sub.ws.readyState !== WebSocket.OPEN) return false;
    const queued = sub.ws.bufferedAmount;
    // An empty queue always takes one message, however large: the bound is on what waits.
    if (queued > 0 && queued + data.length > MAX_BUFFERED_BYTES) {
      this.drop(sub);
      return false;
    }
    sub.ws.send(data, { binary: false }, written);
    return true;
  }

  private drop(sub: Subscriber): void {
    this.dropped++;
    this.subscribers.delete(sub.ws);
    sub.ws.terminate();
  }

  /** Sends the feed's messages after `sentSeq` as fast as the socket takes them, then goes live. */
  private replay(sub: Subscriber): void {
    for (;;) {
      if (!this.subscribers.has(sub.ws)) return;
      const next = this.after(sub.sentSeq);
      if (next === undefined) {
        // Caught up with everything published: the next live message is the next one it needs.
        sub.catchingUp = false;
        sub.behind = 0;
        return;
      }
      const full = sub.ws.bufferedAmount + next.data.length >= REPLAY_HIGH_WATER;
      // Full: go on once this chunk has been handed to the kernel (never, for a reader that
      // stopped: it stays here, holding one chunk, until the live stream leaves it behind).
      const resume = full ? (error?: Error) => void (error || this.replay(sub)) : undefined;
      if (!this.send(sub, next.data, resume)) return;
      sub.sentSeq = next.seq;
      if (full) return;
    }
  }
}
