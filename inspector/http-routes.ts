/**
 * The inspector's HTTP side: which requests it answers (the page's files, `/history.json`, the
 * Stately bridge page) and the checks every request and upgrade passes first — only this
 * server's own Host and Origin (DNS rebinding), only GET and HEAD — with headers that let the
 * page load nothing from anywhere but this server.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PageFile } from './page-files.ts';
import { statelyBridgeHtml } from './stately.ts';

/** What the routes serve, read when a request comes (the port is known once listening). */
export interface RouteSources {
  pageFiles: ReadonlyMap<string, PageFile>;
  stately: boolean;
  port(): number;
  /** `/history.json`'s body. */
  history(): string;
}

/** The Host values this server answers to: 127.0.0.1 and localhost on its port. */
const allowedHosts = (port: number) => new Set([`127.0.0.1:${port}`, `localhost:${port}`]);

/**
 * DNS rebinding: a hostile web page may resolve its own name to 127.0.0.1; any Host that is
 * not this server is refused.
 */
export const hostAllowed = (req: IncomingMessage, port: number): boolean =>
  allowedHosts(port).has(req.headers.host ?? '');

/** A browser's Origin, when it sends one, must be this server too. */
export const originAllowed = (req: IncomingMessage, port: number): boolean => {
  const origin = req.headers.origin;
  return origin === undefined || [...allowedHosts(port)].some((h) => origin === `http://${h}`);
};

/**
 * The request handler for `createServer`.
 *
 * @example
 * ```ts
 * createServer(routes({ pageFiles, stately: false, port: () => port, history: () => '{}' }));
 * ```
 */
export function routes(src: RouteSources): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const port = src.port();
    if (!hostAllowed(req, port)) return respond(res, port, 403, 'text/plain', 'forbidden host\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return respond(res, port, 405, 'text/plain', 'method not allowed\n');
    }
    const path = (req.url ?? '/').split('?')[0]!;
    const page = src.pageFiles.get(path);
    if (page !== undefined) return respond(res, port, 200, page.type, page.body);
    if (path === '/history.json') {
      return respond(res, port, 200, 'application/json', src.history());
    }
    if (src.stately && path === '/stately') {
      return respond(res, port, 200, 'text/html; charset=utf-8', statelyBridgeHtml(), false);
    }
    respond(res, port, 404, 'text/plain', 'not found\n');
  };
}

function respond(
  res: ServerResponse,
  port: number,
  status: number,
  type: string,
  body: string | Buffer,
  strict = true,
): void {
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
}
