/**
 * The offline live inspector: an HTTP + WebSocket relay bound to 127.0.0.1 that serves our own
 * page (no CDN, no external URL) and streams every task's actors, snapshots, events and spill
 * metrics to it. It keeps a bounded history, so a page opened after a run can replay it.
 *
 * Stately's hosted inspector needs the internet and `@xstate/inspect` does not work with
 * XState v5; `stately: true` additionally forwards the same (sanitized) stream in Stately's
 * format through `@statelyai/inspect`, for a person who is online (see inspector/README.md).
 *
 * This file is the lifecycle: start (listen), what the server offers its caller, close. The
 * concerns it composes live beside it: http-routes.ts (requests and their checks),
 * page-relay.ts (the page's numbered, batched, bounded stream), stately-relay.ts (Stately's),
 * feed.ts (per-socket delivery), recorder.ts and owners.ts (what becomes a record).
 */
import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { WebSocket, WebSocketServer } from 'ws';
import type { InspectionEvent } from 'xstate';
import type { TaskInspectionEvent } from '../src/recovery-types.ts';
import {
  MAX_BUFFERED_BYTES,
  PAGE_MAX_INBOUND_BYTES,
  STATELY_MAX_INBOUND_BYTES,
} from './feed-limits.ts';
import { hostAllowed, originAllowed, routes } from './http-routes.ts';
import { watchOwners, type WatchAbout, type WatchedRecovery } from './owners.ts';
import { InspectorServerError, loadPage } from './page-files.ts';
import { PageRelay } from './page-relay.ts';
import { Recorder } from './recorder.ts';
import { createStatelyForwarder, type StatelyForwarder } from './stately.ts';
import { StatelyRelay } from './stately-relay.ts';
import type { PageStats, StatelyStats } from './server-types.ts';
import type { ServerMessage } from './protocol.ts';

export type { InspectorRecord, ServerMessage } from './protocol.ts';
export {
  HISTORY_LIMIT,
  STATELY_BUFFER_BYTES,
  STATELY_BUFFER_LIMIT,
  type PageStats,
  type StatelyStats,
  type StatelyTrimmedMessage,
} from './server-types.ts';
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
   * `inspect` is this server's); with `about`, what it recovers and its files per channel. Stops by itself when the recovery has ended; returns a
   * function that stops sooner.
   */
  watch(recovery: WatchedRecovery & { readonly actor: object }, about?: WatchAbout): () => void;
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

/** A message to the pages, serialized once into the Buffer every socket is sent. */
const message = (m: ServerMessage) => Buffer.from(JSON.stringify(m));

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
  const stately = options.stately === true ? new StatelyRelay() : undefined;
  const relay = new PageRelay();
  const server = new RunningInspector(relay, stately);
  if (stately !== undefined) {
    server.forwarder = await createStatelyForwarder(
      (event) => stately.relay(JSON.stringify(event)),
      (key) => server.recorder.configFor(key),
    );
  }
  let port = options.port ?? 0;
  const httpServer = createServer(
    routes({
      pageFiles,
      stately: stately !== undefined,
      port: () => port,
      history: () =>
        JSON.stringify({
          startedAt: server.startedAt,
          dropped: relay.dropped,
          defs: relay.defs,
          records: relay.history,
          metrics: relay.metrics,
        }),
    }),
  );
  // Inbound frames are capped by size where they are parsed: the page sends nothing.
  const wss = new WebSocketServer({ noServer: true, maxPayload: PAGE_MAX_INBOUND_BYTES });
  const statelyWss = new WebSocketServer({
    noServer: true,
    maxPayload: STATELY_MAX_INBOUND_BYTES,
  });
  httpServer.on('upgrade', (req, socket, head) => {
    const path = (req.url ?? '').split('?')[0];
    const known = path === '/ws' || (stately !== undefined && path === '/stately/ws');
    if (server.closed || !known || !hostAllowed(req, port) || !originAllowed(req, port)) {
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n');
      return;
    }
    (path === '/ws' ? wss : statelyWss).handleUpgrade(req, socket, head, (ws) => {
      if (path === '/ws') server.addPage(ws);
      // Compatible with `@statelyai/inspect/server`: each socket gets the buffered stream, and
      // what a client sends (e.g. `createWebSocketInspector({ url:
      // 'ws://127.0.0.1:PORT/stately/ws' })` in another process) is relayed to the others.
      else stately!.add(ws);
    });
  });
  port = await listen(httpServer, port);
  server.listening(httpServer, [wss, statelyWss], port);
  return server;
}

/** Listens on 127.0.0.1:`port`; resolves with the port it got (`0`: a free one). */
function listen(httpServer: Server, port: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
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
      resolve((httpServer.address() as { port: number }).port);
    });
  });
}

/** Closes a socket with a close handshake; one that does not answer within 1 s is cut off. */
function closeSocket(ws: WebSocket): Promise<void> {
  return new Promise<void>((resolve) => {
    if (ws.readyState === WebSocket.CLOSED) return resolve();
    ws.once('close', () => resolve());
    ws.close(1001, 'inspector closed');
    setTimeout(() => ws.terminate(), 1000).unref();
  });
}

/**
 * A listening inspector: what the caller gets. Its methods are bound (arrow properties), so
 * `inspect: inspector.inspect` can be handed on as it is.
 */
class RunningInspector implements InspectorServer {
  readonly serverId = randomBytes(6).toString('hex');
  readonly startedAt = Date.now();
  readonly recorder: Recorder;
  forwarder: StatelyForwarder | undefined;
  closed = false;
  url = '';
  port = 0;
  private httpServer: Server | undefined;
  private wss: WebSocketServer[] = [];
  private readonly watchers = new Set<() => void>();
  private closing: Promise<void> | undefined;

  constructor(
    private readonly relay: PageRelay,
    private readonly statelyRelay: StatelyRelay | undefined,
  ) {
    this.recorder = new Recorder((record) => {
      const numbered = this.relay.push(record);
      this.forwarder?.forward(numbered);
    });
  }

  /** Called once listening: the server to close later, and where it is. */
  listening(httpServer: Server, wss: WebSocketServer[], port: number): void {
    this.httpServer = httpServer;
    this.wss = wss;
    this.port = port;
    this.url = `http://127.0.0.1:${port}/`;
  }

  /** A page socket: `hello`, the history, then live batches; the page only listens. */
  addPage(ws: WebSocket): void {
    // A page sends nothing: a client that does is not a page, and is closed at its first frame.
    ws.on('message', () => ws.close(1008, 'the inspector page sends nothing'));
    // A frame over maxPayload: ws closes with 1009 itself; its error is that, nothing more.
    ws.on('error', () => undefined);
    this.relay.feed.add(
      ws,
      message({
        type: 'hello',
        server: this.serverId,
        startedAt: this.startedAt,
        dropped: this.relay.dropped,
        stately: this.statelyRelay !== undefined,
      }),
    );
  }

  readonly inspect = (event: TaskInspectionEvent): void => {
    if (this.closed) return;
    try {
      // The public type is XState's InspectionEvent, typed loosely (src/recovery-types.ts).
      this.recorder.handle(event as InspectionEvent);
    } catch {
      // Inspection must never break the task it watches (an inspect callback that throws
      // would surface inside XState); a record we cannot build is simply not shown.
    }
  };

  readonly watch = (
    recovery: WatchedRecovery & { readonly actor: object },
    about?: WatchAbout,
  ): (() => void) => {
    if (this.closed) return () => undefined;
    const task = this.recorder.taskOf(recovery.actor);
    const stop = watchOwners(
      recovery,
      (reading) => {
        if (!this.closed) this.relay.push({ k: 'owners', t: Date.now(), task, ...reading });
      },
      about !== undefined ? { about } : {},
    );
    this.watchers.add(stop);
    void recovery.done.catch(() => undefined).finally(() => this.watchers.delete(stop));
    return stop;
  };

  readonly publishMetrics = (m: {
    files: number;
    bytes: number;
    liveTasks: number;
    at?: number;
  }): void => {
    if (this.closed) return;
    this.relay.push({
      k: 'metrics',
      t: m.at ?? Date.now(),
      files: m.files,
      bytes: m.bytes,
      liveTasks: m.liveTasks,
    });
  };

  readonly pages = (): PageStats => this.relay.stats();

  readonly stately = (): StatelyStats | undefined => this.statelyRelay?.stats();

  readonly close = (): Promise<void> => {
    this.closing ??= this.shutDown();
    return this.closing;
  };

  /** Flushes, says bye, closes every socket, then the servers. */
  private async shutDown(): Promise<void> {
    this.closed = true;
    for (const stop of this.watchers) stop();
    this.relay.flush();
    this.forwarder?.stop();
    this.relay.feed.sendAll(message({ type: 'bye' }));
    const sockets = [
      ...this.relay.feed.subscribers.keys(),
      ...(this.statelyRelay?.feed.subscribers.keys() ?? []),
    ];
    await Promise.all(sockets.map(closeSocket));
    const httpServer = this.httpServer;
    await Promise.all(
      this.wss.map((wss) => new Promise<void>((resolve) => wss.close(() => resolve()))),
    );
    if (httpServer !== undefined) {
      await new Promise<void>((resolve) => {
        httpServer.close(() => resolve());
        httpServer.closeAllConnections();
      });
    }
  }
}
