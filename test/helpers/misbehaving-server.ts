/**
 * HTTP servers of our own on 127.0.0.1 that misbehave the ways real ones do (issue 23, G11/G12):
 * - {@link startObjectServer}: one object whose bytes the test may replace at any time, served
 *   with a strong, weak or no ETag, optionally `Last-Modified`, optionally kept gzip-encoded (a
 *   store that answers gzip although identity was asked for, ranges over the encoded bytes),
 *   optionally ignoring `Range` (plain 200), optionally behind Basic auth, optionally dripping
 *   its body (or its whole answer) one byte at a time;
 * - {@link startSilentServer}: accepts connections and never answers.
 * Each records what the client sent, so a test can check the headers of every request.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';

export interface ObjectServerOptions {
  /** `strong`: `"v<n>"`; `weak`: `W/"v<n>"`; `none`: no ETag. `<n>` is the version number. */
  etag?: 'strong' | 'weak' | 'none';
  /** Send `Last-Modified` (it changes with each version). */
  lastModified?: boolean;
  /** Keep the object gzip-encoded and answer `Content-Encoding: gzip` whatever was asked for. */
  gzip?: boolean;
  /** Ignore `Range`: always a plain 200 with the whole object. */
  ignoreRange?: boolean;
  /** Require `Authorization: Basic` for this `user:password` (401 otherwise). */
  basicAuth?: string;
  /** Send the body one byte every this many ms (headers at once). */
  dripBodyMs?: number;
  /** Send the whole answer, headers included, one byte every this many ms. */
  dripAnswerMs?: number;
}

export interface ObjectServer {
  readonly url: string;
  readonly port: number;
  readonly requests: { headers: IncomingHttpHeaders }[];
  /** Serves `bytes` from now on as a new version (new ETag unless `keepEtag`). */
  replace(bytes: Buffer, options?: { keepEtag?: boolean; lastModified?: Date }): void;
  stop(): Promise<void>;
}

/** Starts a server for one object (any path serves it). */
export async function startObjectServer(
  initial: Buffer,
  options: ObjectServerOptions = {},
): Promise<ObjectServer> {
  let bytes = initial;
  let version = 1;
  let modified = new Date('2026-01-01T00:00:00Z');
  const requests: ObjectServer['requests'] = [];
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<Socket>();

  const drip = (res: ServerResponse, out: Buffer, ms: number, raw?: Socket) => {
    let at = 0;
    const tick = () => {
      timers.delete(timer);
      if (at >= out.length) {
        if (raw === undefined) res.end();
        else raw.end();
        return;
      }
      const one = out.subarray(at, ++at);
      if (raw === undefined) res.write(one);
      else raw.write(one);
      timer = setTimeout(tick, ms);
      timers.add(timer);
    };
    let timer = setTimeout(tick, ms);
    timers.add(timer);
  };

  const server = createServer((req, res) => {
    requests.push({ headers: req.headers });
    if (options.basicAuth !== undefined) {
      const want = `Basic ${Buffer.from(options.basicAuth).toString('base64')}`;
      if (req.headers.authorization !== want) {
        res.writeHead(401, { 'www-authenticate': 'Basic realm="ckpt"' }).end();
        return;
      }
    }
    const stored = options.gzip === true ? gzipSync(bytes) : bytes;
    const headers: Record<string, string | number> = { 'accept-ranges': 'bytes' };
    if (options.etag !== 'none') {
      headers.etag = options.etag === 'weak' ? `W/"v${version}"` : `"v${version}"`;
    }
    if (options.lastModified === true) headers['last-modified'] = modified.toUTCString();
    if (options.gzip === true) headers['content-encoding'] = 'gzip';
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const ranged = m !== null && options.ignoreRange !== true;
    const start = ranged ? Number(m[1]) : 0;
    const last =
      ranged && m[2] !== '' ? Math.min(Number(m[2]), stored.length - 1) : stored.length - 1;
    if (start >= stored.length && stored.length > 0) {
      res.writeHead(416, { 'content-range': `bytes */${stored.length}` }).end();
      return;
    }
    const body = stored.subarray(start, last + 1);
    headers['content-length'] = body.length;
    const status = ranged ? 206 : 200;
    if (ranged) headers['content-range'] = `bytes ${start}-${last}/${stored.length}`;
    if (options.dripAnswerMs !== undefined) {
      const head =
        `HTTP/1.1 ${status} ${status === 206 ? 'Partial Content' : 'OK'}\r\n` +
        Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('') +
        '\r\n';
      drip(res, Buffer.concat([Buffer.from(head), body]), options.dripAnswerMs, req.socket);
      return;
    }
    res.writeHead(status, headers);
    if (options.dripBodyMs !== undefined) drip(res, body, options.dripBodyMs);
    else res.end(body);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    replace(next, how = {}) {
      bytes = next;
      if (how.keepEtag !== true) version++;
      modified = how.lastModified ?? new Date(modified.getTime() + 60_000);
    },
    async stop() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface SilentServer {
  readonly url: string;
  readonly port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Connections still open (the client has not closed them). */
  readonly open: number;
  stop(): Promise<void>;
}

/** A TCP server on 127.0.0.1 that accepts, reads, and never answers. */
export async function startSilentServer(): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createTcpServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get connections() {
      return connections;
    },
    get open() {
      return sockets.size;
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * `spwc` with every payload byte changed and each entry's CRC made right again: a valid
 * checkpoint of exactly the same size and layout whose every channel has other bytes (v1).
 */
export function sameSizeOtherBytes(spwc: Buffer, crc32: (b: Buffer) => number): Buffer {
  const out = Buffer.from(spwc);
  let at = 8;
  while (at + 16 <= out.length) {
    const length = out.readInt32BE(at + 8);
    const payload = out.subarray(at + 16, at + 16 + length);
    for (let i = 0; i < payload.length; i++) payload[i]! ^= 0x5a;
    out.writeUInt32BE(crc32(payload), at + 12);
    at += 16 + length;
  }
  return out;
}
