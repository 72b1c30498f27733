/**
 * A plain node:http server of our own that serves the files of one dir the way an object store
 * does: `Range: bytes=N-` and `bytes=N-M` (206 with `Content-Range`), a strong `ETag` from the file's size and
 * mtime, `If-Match` (412 when it no longer matches), 404 for a missing file. It records each
 * request's headers so a test can check what the client sent (a resumed range, its If-Match).
 */
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export interface FileServer {
  readonly url: string;
  readonly port: number;
  readonly requests: { path: string; headers: IncomingHttpHeaders }[];
  stop(): Promise<void>;
}

/** The ETag the server gives a file: size and mtime, as many stores derive one. */
export async function etagOf(file: string): Promise<string> {
  const st = await stat(file);
  return `"${st.size.toString(16)}-${Math.round(st.mtimeMs).toString(16)}"`;
}

/**
 * `etag: false` serves without an `ETag` (a store that gives none: a resume must re-check);
 * `listings: true` answers a directory's path with an HTML listing of it (200, `text/html`), as
 * a web server with directory indexes does.
 */
export async function startFileServer(
  dir: string,
  options: { etag?: boolean; listings?: boolean } = {},
): Promise<FileServer> {
  const requests: FileServer['requests'] = [];
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    requests.push({ path, headers: req.headers });
    void (async () => {
      const file = join(dir, path);
      const st = await stat(file).catch(() => undefined);
      if (st?.isDirectory() === true && options.listings === true) {
        const names = await readdir(file);
        const body = `<!DOCTYPE html>\n<html><body><h1>Index of ${path}</h1><ul>${names
          .map((n) => `<li><a href="${n}">${n}</a></li>`)
          .join('')}</ul></body></html>\n`;
        res.writeHead(200, { 'content-type': 'text/html', 'content-length': body.length });
        res.end(body);
        return;
      }
      if (st === undefined || !st.isFile()) {
        res.writeHead(404).end();
        return;
      }
      const etag = options.etag === false ? undefined : await etagOf(file);
      const ifMatch = req.headers['if-match'];
      if (etag !== undefined && ifMatch !== undefined && ifMatch !== etag) {
        res.writeHead(412).end();
        return;
      }
      const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
      const start = m === null ? 0 : Number(m[1]);
      const last = m === null || m[2] === '' ? st.size - 1 : Math.min(Number(m[2]), st.size - 1);
      if (start >= st.size) {
        res.writeHead(416, { 'content-range': `bytes */${st.size}` }).end();
        return;
      }
      const headers = {
        ...(etag !== undefined ? { etag } : {}),
        'accept-ranges': 'bytes',
        'content-length': last + 1 - start,
      };
      if (m === null) res.writeHead(200, headers);
      else {
        res.writeHead(206, {
          ...headers,
          'content-range': `bytes ${start}-${last}/${st.size}`,
        });
      }
      if (st.size === 0) res.end();
      else createReadStream(file, { start, end: last }).pipe(res);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
