/**
 * The offline live inspector: an HTTP + WebSocket relay bound to 127.0.0.1 that serves our own
 * page (no CDN, no external URL) and streams every task's actors, snapshots, events and spill
 * metrics to it. It keeps a bounded history, so a page opened after a run can replay it.
 *
 * Stately's hosted inspector needs the internet and `@xstate/inspect` does not work with
 * XState v5; `stately: true` additionally forwards the same (sanitized) stream in Stately's
 * format through `@statelyai/inspect`, for a person who is online (see inspector/README.md).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket, WebSocketServer } from 'ws';
import type { InspectionEvent } from 'xstate';
import type { TaskInspectionEvent } from '../src/recovery-types.ts';
import { fsSeam } from '../src/services/fs.ts';
import { SpillwayError } from '../src/services/errors.ts';
import { Recorder, type UnnumberedRecord } from './recorder.ts';
import { createStatelyForwarder, statelyBridgeHtml, type StatelyForwarder } from './stately.ts';
import type { DefRecord, InspectorRecord, MetricsRecord, ServerMessage } from './protocol.ts';

export type { InspectorRecord, ServerMessage } from './protocol.ts';

export interface InspectorServer {
  /** `http://127.0.0.1:PORT/` */
  readonly url: string;
  readonly port: number;
  /** Pass as `recoverChannelState({ inspect })`: sanitizes and relays every inspection event. */
  inspect(event: TaskInspectionEvent): void;
  /** Reports spill usage for the plot (the demo calls it every 100–250 ms). */
  publishMetrics(metrics: { files: number; bytes: number; liveTasks: number; at?: number }): void;
  /** The page sockets now: how many, what is queued for them, and how many were cut off. */
  pages(): PageStats;
  /** Resolves when the server and all sockets are closed. */
  close(): Promise<void>;
}

export interface InspectorServerOptions {
  /** TCP port on 127.0.0.1; 0 (the default) picks a free one. */
  port?: number;
  /** Also forward the stream to Stately's inspector (page `/stately`, socket `/stately/ws`). */
  stately?: boolean;
}

/** What {@link InspectorServer.pages} reports. */
export interface PageStats {
  /** Page sockets open now. */
  open: number;
  /** Of those, still being sent the history (live batches wait until they have caught up). */
  catchingUp: number;
  /** Bytes queued for them in this process, plus live bytes those catching up are behind. */
  bufferedBytes: number;
  /** The most `bufferedBytes` has been, measured whenever records were sent. */
  peakBufferedBytes: number;
  /** Pages terminated for falling more than {@link MAX_BUFFERED_BYTES} behind. */
  dropped: number;
}

/** The server could not start (port in use, no permission). */
export class InspectorServerError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_INSPECTOR';
}

/** Bounds: the history the page can replay, metrics samples, Stately's replay buffer. */
export const HISTORY_LIMIT = 20_000;
const METRICS_LIMIT = 20_000;
const STATELY_BUFFER_LIMIT = 2_000;
/** Records reach the page in batches, so a busy demo cannot flood it. */
const BATCH_MS = 50;
/** A burst flushes early: no batch holds more records or bytes than this. */
const MAX_BATCH = 2_000;
const MAX_BATCH_BYTES = 256 * 1024;
/**
 * A socket more than this far behind (bytes queued for it here, plus live bytes it has not been
 * sent yet) is terminated: a client that stops reading would otherwise make the relay hold
 * everything it is sent (500 such clients grew it by ~570 MB). A page reconnects and replays.
 */
export const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
/**
 * The history is replayed in chunks of about this size, each queued only once the socket has
 * taken the ones before down to REPLAY_HIGH_WATER: a stalled reader holds one chunk or two, not
 * the whole history.
 */
const REPLAY_CHUNK_BYTES = 64 * 1024;
const REPLAY_HIGH_WATER = 128 * 1024;

const PAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), 'page');
/**
 * What the page dir may serve, by extension. The page is native ES modules loaded by the
 * browser from here (no build step), so every module must be served as JavaScript: a module
 * script with another type is refused by the browser (and `nosniff` forbids guessing).
 */
const PAGE_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};
/** A plain file name: no separator, no leading dot, so no request can leave the page dir. */
const PAGE_NAME = /^[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9_-]+)*$/i;

interface PageFile {
  type: string;
  body: Buffer;
}

/**
 * The page, read once at start: URL path → file, for the regular files of the page dir with a
 * known extension. Requests are looked up in this map and nothing else touches the disk, so a
 * path with `..`, an encoded slash or a symlink out of the dir is simply not found.
 */
async function loadPage(): Promise<Map<string, PageFile>> {
  const files = new Map<string, PageFile>();
  for (const name of (await fsSeam.readdir(PAGE_DIR)).sort()) {
    const type = PAGE_TYPES[extname(name)];
    if (type === undefined || !PAGE_NAME.test(name)) continue;
    const path = join(PAGE_DIR, name);
    if (!(await fsSeam.lstat(path)).isFile()) continue;
    files.set(`/${name}`, { type, body: await fsSeam.readFile(path) });
  }
  const index = files.get('/index.html');
  if (index === undefined) throw new InspectorServerError(`no index.html in ${PAGE_DIR}`);
  files.set('/', index);
  return files;
}

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
class Feed {
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

/** Index of the first record in `list` (sorted by `i`) with `i > seq`. */
function firstAfter(list: readonly { i: number }[], seq: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.i <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** `{"type":"batch","records":[…]}` from records already serialized one by one. */
const batchOf = (jsons: readonly string[]): Buffer =>
  Buffer.from(`{"type":"batch","records":[${jsons.join(',')}]}`);

/**
 * Starts the inspector on 127.0.0.1 and resolves once it listens.
 *
 * @example
 * ```ts
 * const inspector = await startInspectorServer({ port: 0 });
 * console.log(`inspector: ${inspector.url}`);
 * const recovery = recoverChannelState({ checkpoint, channels, inspect: inspector.inspect });
 * await recovery.done;
 * await inspector.close(); // the process can exit now
 * ```
 */
export async function startInspectorServer(
  options: InspectorServerOptions = {},
): Promise<InspectorServer> {
  const pageFiles = await loadPage();

  const serverId = randomBytes(6).toString('hex');
  const startedAt = Date.now();
  const stately = options.stately === true;
  let seq = 0;
  let flushedSeq = 0;
  let dropped = 0;
  let closed = false;
  let port = options.port ?? 0;

  const defs: DefRecord[] = [];
  const history: InspectorRecord[] = [];
  const metrics: MetricsRecord[] = [];
  /** Records not yet flushed, each serialized once: their size bounds the batch. */
  let pending: string[] = [];
  let pendingBytes = 0;
  let flushTimer: NodeJS.Timeout | undefined;

  /**
   * A page's replay: the records after `after`, up to what was flushed to live pages (what is
   * pending reaches it with the next batch), about REPLAY_CHUNK_BYTES of them at a time.
   */
  const pageReplay = (after: number) => {
    // defs, metrics and history are each in sequence order: merge them.
    const cursors = [defs, metrics, history].map((list) => ({ list, at: firstAfter(list, after) }));
    const head = (c: (typeof cursors)[number]): InspectorRecord | undefined => {
      const r = c.list[c.at];
      return r !== undefined && r.i <= flushedSeq ? r : undefined;
    };
    const jsons: string[] = [];
    let bytes = 0;
    let last = after;
    while (bytes < REPLAY_CHUNK_BYTES) {
      let next: (typeof cursors)[number] | undefined;
      for (const c of cursors) {
        const r = head(c);
        if (r !== undefined && (next === undefined || r.i < head(next)!.i)) next = c;
      }
      if (next === undefined) break;
      const record = head(next)!;
      next.at++;
      const json = JSON.stringify(record);
      jsons.push(json);
      bytes += json.length + 1;
      last = record.i;
    }
    return jsons.length === 0 ? undefined : { data: batchOf(jsons), seq: last };
  };
  const pages = new Feed(pageReplay);

  /** Stately's stream: one event a message; `statelySeq` numbers them, the buffer has the last. */
  const statelyBuffer: string[] = [];
  let statelySeq = 0;
  const statelyReplay = (after: number) => {
    const first = statelySeq - statelyBuffer.length + 1;
    const seq = Math.max(after + 1, first);
    const json = statelyBuffer[seq - first];
    return json === undefined ? undefined : { data: Buffer.from(json), seq };
  };
  const statelyFeed = new Feed(statelyReplay);

  const flush = () => {
    if (flushTimer !== undefined) clearTimeout(flushTimer);
    flushTimer = undefined;
    if (pending.length === 0) return;
    const batch = batchOf(pending);
    flushedSeq = seq;
    pending = [];
    pendingBytes = 0;
    pages.publish(batch, flushedSeq);
  };

  const relayStately = (json: string, from?: WebSocket) => {
    statelyBuffer.push(json);
    if (statelyBuffer.length > STATELY_BUFFER_LIMIT) statelyBuffer.shift();
    statelyFeed.publish(Buffer.from(json), ++statelySeq, from);
  };

  let forwarder: StatelyForwarder | undefined;
  const push = (unnumbered: UnnumberedRecord) => {
    const record = { ...unnumbered, i: ++seq } as InspectorRecord;
    if (record.k === 'def') defs.push(record);
    else if (record.k === 'metrics') {
      metrics.push(record);
      if (metrics.length > METRICS_LIMIT) metrics.splice(0, METRICS_LIMIT / 10);
    } else {
      history.push(record);
      if (history.length > HISTORY_LIMIT) {
        // Trim in chunks: shifting one at a time would make every event O(n).
        const cut = HISTORY_LIMIT / 10;
        history.splice(0, cut);
        dropped += cut;
      }
    }
    const json = JSON.stringify(record);
    pending.push(json);
    pendingBytes += json.length + 1;
    // A burst flushes early: messages and the pending list stay bounded.
    if (pending.length >= MAX_BATCH || pendingBytes >= MAX_BATCH_BYTES) flush();
    // unref: batching must never be what keeps the process alive.
    else flushTimer ??= setTimeout(flush, BATCH_MS).unref();
    forwarder?.forward(record);
  };

  const recorder = new Recorder(push);
  if (stately) {
    forwarder = await createStatelyForwarder(
      (event) => relayStately(JSON.stringify(event)),
      (key) => recorder.configFor(key),
    );
  }

  const allowedHosts = () => new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
  // DNS rebinding: a hostile web page may resolve its own name to 127.0.0.1; refuse any Host
  // (and any browser Origin) that is not this server.
  const hostAllowed = (req: IncomingMessage) => allowedHosts().has(req.headers.host ?? '');
  const originAllowed = (req: IncomingMessage) => {
    const origin = req.headers.origin;
    return origin === undefined || [...allowedHosts()].some((h) => origin === `http://${h}`);
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (!hostAllowed(req)) return void respond(res, 403, 'text/plain', 'forbidden host\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return void respond(res, 405, 'text/plain', 'method not allowed\n');
    }
    const path = (req.url ?? '/').split('?')[0]!;
    const page = pageFiles.get(path);
    if (page !== undefined) return void respond(res, 200, page.type, page.body);
    if (path === '/history.json') {
      const body = JSON.stringify({ startedAt, dropped, defs, records: history, metrics });
      return void respond(res, 200, 'application/json', body);
    }
    if (stately && path === '/stately') {
      return void respond(res, 200, 'text/html; charset=utf-8', statelyBridgeHtml(), false);
    }
    respond(res, 404, 'text/plain', 'not found\n');
  };

  const respond = (
    res: ServerResponse,
    status: number,
    type: string,
    body: string | Buffer,
    strict = true,
  ) => {
    res.writeHead(status, {
      'content-type': type,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      // Our page may load nothing from anywhere but this server.
      ...(strict
        ? {
            // Inline style attributes are how the page colors its SVG; scripts stay 'self'.
            'content-security-policy': `default-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self' ws://127.0.0.1:${port} ws://localhost:${port}; img-src 'self' data:; frame-ancestors 'none'`,
          }
        : {}),
    });
    res.end(body);
  };

  const httpServer = createServer(handle);
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  httpServer.on('upgrade', (req, socket, head) => {
    const path = (req.url ?? '').split('?')[0];
    const known = path === '/ws' || (stately && path === '/stately/ws');
    if (closed || !known || !hostAllowed(req) || !originAllowed(req)) {
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (path === '/ws') onPage(ws);
      else onStately(ws);
    });
  });

  const message = (m: ServerMessage) => Buffer.from(JSON.stringify(m));

  const onPage = (ws: WebSocket) => {
    ws.on('message', () => undefined); // the page only listens
    pages.add(ws, message({ type: 'hello', server: serverId, startedAt, dropped, stately }));
  };

  // Compatible with `@statelyai/inspect/server`: each socket gets the buffered stream, and what
  // a client sends (e.g. `createWebSocketInspector({ url: 'ws://127.0.0.1:PORT/stately/ws' })`
  // in another process) is relayed to the others.
  const onStately = (ws: WebSocket) => {
    statelyFeed.add(ws);
    ws.on('message', (data) => relayStately(data.toString(), ws));
  };

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(
        new InspectorServerError(
          error.code === 'EADDRINUSE'
            ? `port ${port} on 127.0.0.1 is in use`
            : `cannot listen on 127.0.0.1:${port}: ${error.message}`,
          { cause: error },
        ),
      );
    };
    httpServer.once('error', onError);
    httpServer.listen(port, '127.0.0.1', () => {
      httpServer.off('error', onError);
      resolve();
    });
  });
  port = (httpServer.address() as { port: number }).port;
  const url = `http://127.0.0.1:${port}/`;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      closed = true;
      flush();
      forwarder?.stop();
      pages.sendAll(message({ type: 'bye' }));
      const sockets = [...pages.subscribers.keys(), ...statelyFeed.subscribers.keys()];
      const gone = sockets.map(
        (ws) =>
          new Promise<void>((resolve) => {
            if (ws.readyState === WebSocket.CLOSED) return resolve();
            ws.once('close', () => resolve());
            ws.close(1001, 'inspector closed');
            // A page that does not answer the close handshake is cut off.
            setTimeout(() => ws.terminate(), 1000).unref();
          }),
      );
      await Promise.all(gone);
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => {
        httpServer.close(() => resolve());
        httpServer.closeAllConnections();
      });
    })();
    return closing;
  };

  return {
    url,
    port,
    inspect(event: TaskInspectionEvent) {
      if (closed) return;
      try {
        // The public type is XState's InspectionEvent, typed loosely (src/recovery-types.ts).
        recorder.handle(event as InspectionEvent);
      } catch {
        // Inspection must never break the task it watches (an inspect callback that throws
        // would surface inside XState); a record we cannot build is simply not shown.
      }
    },
    publishMetrics(m) {
      if (closed) return;
      push({
        k: 'metrics',
        t: m.at ?? Date.now(),
        files: m.files,
        bytes: m.bytes,
        liveTasks: m.liveTasks,
      });
    },
    pages() {
      return {
        open: pages.subscribers.size,
        catchingUp: [...pages.subscribers.values()].filter((s) => s.catchingUp).length,
        bufferedBytes: pages.bufferedBytes(),
        peakBufferedBytes: pages.peakBufferedBytes,
        dropped: pages.dropped,
      };
    },
    close,
  };
}
