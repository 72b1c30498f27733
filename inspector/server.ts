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
import { WebSocket, WebSocketServer } from 'ws';
import type { InspectionEvent } from 'xstate';
import type { TaskInspectionEvent } from '../src/recovery-types.ts';
import { Feed } from './feed.ts';
import { MAX_BUFFERED_BYTES, REPLAY_CHUNK_BYTES } from './feed-limits.ts';
import { InspectorServerError, loadPage } from './page-files.ts';
import { Recorder, type UnnumberedRecord } from './recorder.ts';
import { watchOwners, type WatchedRecovery } from './owners.ts';
import { createStatelyForwarder, statelyBridgeHtml, type StatelyForwarder } from './stately.ts';
import type { DefRecord, InspectorRecord, MetricsRecord, ServerMessage } from './protocol.ts';

export type { InspectorRecord, ServerMessage } from './protocol.ts';
export { InspectorServerError, MAX_BUFFERED_BYTES };

export interface InspectorServer {
  /** `http://127.0.0.1:PORT/` */
  readonly url: string;
  readonly port: number;
  /** Pass as `recoverChannelState({ inspect })`: sanitizes and relays every inspection event. */
  inspect(event: TaskInspectionEvent): void;
  /**
   * Shows a recovery's ownership and progress on the page while it runs: per owner its task
   * dir, files and bytes, and the bytes delivered during the drain (pass the recovery whose
   * `inspect` is this server's). Stops by itself when the recovery has ended; returns a
   * function that stops sooner.
   */
  watch(recovery: WatchedRecovery & { readonly actor: object }): () => void;
  /** Reports spill usage for the plot (the demo calls it every 100–250 ms). */
  publishMetrics(metrics: { files: number; bytes: number; liveTasks: number; at?: number }): void;
  /** The page sockets now: how many, what is queued for them, and how many were cut off. */
  pages(): PageStats;
  /** The Stately relay's replay buffer now (undefined without `stately: true`). */
  stately(): StatelyStats | undefined;
  /** Resolves when the server and all sockets are closed. */
  close(): Promise<void>;
}

export interface InspectorServerOptions {
  /** TCP port on 127.0.0.1; 0 (the default) picks a free one. */
  port?: number;
  /** Also forward the stream to Stately's inspector (page `/stately`, socket `/stately/ws`). */
  stately?: boolean;
}

/** What {@link InspectorServer.stately} reports. */
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

/** Bounds: the history the page can replay, metrics samples, Stately's replay buffer. */
export const HISTORY_LIMIT = 20_000;
const METRICS_LIMIT = 20_000;
/**
 * Stately's replay buffer keeps the newest messages, at most this many and at most
 * {@link STATELY_BUFFER_BYTES} bytes: a client may relay messages of up to 1 MiB each, and
 * 2,000 of those would hold ~2 GiB (300 of them grew the relay by 318 MiB before).
 */
export const STATELY_BUFFER_LIMIT = 2_000;
export const STATELY_BUFFER_BYTES = 8 * 1024 * 1024;
/** Records reach the page in batches, so a busy demo cannot flood it. */
const BATCH_MS = 50;
/** A burst flushes early: no batch holds more records or bytes than this. */
const MAX_BATCH = 2_000;
const MAX_BATCH_BYTES = 256 * 1024;
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
  const statelyBuffer: Buffer[] = [];
  let statelyBufferBytes = 0;
  let statelySeq = 0;
  const statelyReplay = (after: number) => {
    const first = statelySeq - statelyBuffer.length + 1;
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
    const data = statelyBuffer[Math.max(after + 1, first) - first];
    return data === undefined ? undefined : { data, seq: Math.max(after + 1, first) };
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
    // One Buffer, shared by the buffer and every socket it is sent to.
    const data = Buffer.from(json);
    statelyBuffer.push(data);
    statelyBufferBytes += data.length;
    while (
      statelyBuffer.length > STATELY_BUFFER_LIMIT ||
      statelyBufferBytes > STATELY_BUFFER_BYTES
    ) {
      statelyBufferBytes -= statelyBuffer.shift()!.length;
    }
    statelyFeed.publish(data, ++statelySeq, from);
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
  const watchers = new Set<() => void>();
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
      for (const stop of watchers) stop();
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
    watch(recovery) {
      if (closed) return () => undefined;
      const task = recorder.taskOf(recovery.actor);
      const stop = watchOwners(recovery, (reading) => {
        if (!closed) push({ k: 'owners', t: Date.now(), task, ...reading });
      });
      watchers.add(stop);
      void recovery.done.catch(() => undefined).finally(() => watchers.delete(stop));
      return stop;
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
    stately() {
      return stately
        ? { relayed: statelySeq, buffered: statelyBuffer.length, bufferedBytes: statelyBufferBytes }
        : undefined;
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
