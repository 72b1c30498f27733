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
  inspect(event: InspectionEvent): void;
  /** Reports spill usage for the plot (the demo calls it every 100–250 ms). */
  publishMetrics(metrics: { files: number; bytes: number; liveTasks: number; at?: number }): void;
  /** Resolves when the server and all sockets are closed. */
  close(): Promise<void>;
}

export interface InspectorServerOptions {
  /** TCP port on 127.0.0.1; 0 (the default) picks a free one. */
  port?: number;
  /** Also forward the stream to Stately's inspector (page `/stately`, socket `/stately/ws`). */
  stately?: boolean;
}

/** The server could not start (port in use, no permission). */
export class InspectorServerError extends SpillwayError {}

/** Bounds: the history the page can replay, metrics samples, Stately's replay buffer. */
export const HISTORY_LIMIT = 20_000;
const METRICS_LIMIT = 20_000;
const STATELY_BUFFER_LIMIT = 2_000;
/** Records reach the page in batches, so a busy demo cannot flood it. */
const BATCH_MS = 50;
/** A page that cannot keep up is dropped; it reconnects and replays. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
const REPLAY_CHUNK = 2_000;
const MAX_BATCH = 2_000;

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
  let pending: InspectorRecord[] = [];
  let flushTimer: NodeJS.Timeout | undefined;

  const clients = new Set<WebSocket>();
  const statelyClients = new Set<WebSocket>();
  const statelyBuffer: string[] = [];

  const sendTo = (ws: WebSocket, message: ServerMessage | string) => {
    if (ws.readyState !== WebSocket.OPEN) return;
    if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      ws.terminate();
      return;
    }
    ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  };

  const flush = () => {
    if (flushTimer !== undefined) clearTimeout(flushTimer);
    flushTimer = undefined;
    if (pending.length === 0) return;
    const batch = JSON.stringify({ type: 'batch', records: pending } satisfies ServerMessage);
    flushedSeq = pending[pending.length - 1]!.i;
    pending = [];
    for (const ws of clients) sendTo(ws, batch);
  };

  const relayStately = (json: string) => {
    statelyBuffer.push(json);
    if (statelyBuffer.length > STATELY_BUFFER_LIMIT) statelyBuffer.shift();
    for (const ws of statelyClients) sendTo(ws, json);
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
    pending.push(record);
    // A burst flushes early: messages and the pending list stay bounded.
    if (pending.length >= MAX_BATCH) flush();
    // unref: batching must never be what keeps the process alive.
    else flushTimer ??= setTimeout(flush, BATCH_MS).unref();
    forwarder?.forward(record);
  };

  const recorder = new Recorder(push);
  if (stately) {
    forwarder = createStatelyForwarder(
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

  const onPage = (ws: WebSocket) => {
    clients.add(ws);
    ws.on('close', () => clients.delete(ws));
    ws.on('error', () => clients.delete(ws));
    ws.on('message', () => undefined); // the page only listens
    sendTo(ws, { type: 'hello', server: serverId, startedAt, dropped, stately });
    // Everything already flushed to others; what is pending reaches this page with the batch.
    const replay: InspectorRecord[] = [...defs, ...metrics, ...history].filter(
      (r) => r.i <= flushedSeq,
    );
    replay.sort((a, b) => a.i - b.i);
    for (let at = 0; at < replay.length; at += REPLAY_CHUNK) {
      sendTo(ws, { type: 'batch', records: replay.slice(at, at + REPLAY_CHUNK) });
    }
  };

  // Compatible with `@statelyai/inspect/server`: each socket gets the buffered stream, and what
  // a client sends (e.g. `createWebSocketInspector({ url: 'ws://127.0.0.1:PORT/stately/ws' })`
  // in another process) is relayed to the others.
  const onStately = (ws: WebSocket) => {
    statelyClients.add(ws);
    ws.on('close', () => statelyClients.delete(ws));
    ws.on('error', () => statelyClients.delete(ws));
    for (const json of statelyBuffer) sendTo(ws, json);
    ws.on('message', (data) => {
      const json = data.toString();
      statelyBuffer.push(json);
      if (statelyBuffer.length > STATELY_BUFFER_LIMIT) statelyBuffer.shift();
      for (const other of statelyClients) if (other !== ws) sendTo(other, json);
    });
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
      const sockets = [...clients, ...statelyClients];
      const gone = sockets.map(
        (ws) =>
          new Promise<void>((resolve) => {
            if (ws.readyState === WebSocket.CLOSED) return resolve();
            ws.once('close', () => resolve());
            if (clients.has(ws)) sendTo(ws, { type: 'bye' });
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
    inspect(event: InspectionEvent) {
      if (closed) return;
      try {
        recorder.handle(event);
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
    close,
  };
}
