/**
 * `http(s)://` checkpoints through Node's built-in fetch: ranged GETs (`Range: bytes=N-`), the
 * ETag pinned by the first answer and sent back as `If-Match` when it is strong. A presigned
 * object-store URL works as it is; its query string (the signature) is never printed.
 *
 * Honest bytes (G12): the request asks for `Accept-Encoding: identity`, and an answer with any
 * other `Content-Encoding` is refused before its body is read. Node's fetch would decode it
 * silently, and the decoded bytes are neither the object's bytes nor as many as its
 * `Content-Length` says, so a range over them would be meaningless. The object's size comes
 * from `Content-Range` (or a full answer's `Content-Length`) and must agree with the answer's
 * own length. `user:password@` in the URL is sent as a Basic `Authorization` header (fetch
 * refuses such a URL) and, like the query string, never printed.
 */
import {
  CheckpointChangedError,
  RemoteAccessError,
  RemoteError,
  RemoteNotFoundError,
  RemoteUnsupportedError,
} from '../errors.ts';
import { redactLocation, redactText } from './redact.ts';
import { parseRemote, type RemoteUrl } from './schemes.ts';
import type { RangeFetcher, RangeResponse } from './range-fetcher.ts';

/** An HTTP answer retrying may change: a server busy or failing, a proxy timing out. */
function transientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** Thrown for a status retrying may change; `isTransient` recognises it. */
class TransientStatus extends Error {}

/** Options of {@link httpFetcher}. */
export interface HttpFetcherOptions {
  /**
   * `'follow'` (default): redirects are followed (the user named this URL). `'refuse'`: a
   * redirect is an error — for files a Flink checkpoint names, confined to their roots (a
   * redirect could lead anywhere, another host included).
   */
  redirects?: 'follow' | 'refuse';
}

/**
 * The {@link RangeFetcher} of an `http(s)://` URL.
 *
 * @example
 * ```ts
 * const source = await openResumable(httpFetcher('https://store/cp.spwc?X-Amz-Signature=…'));
 * ```
 */
export function httpFetcher(url: string, options: HttpFetcherOptions = {}): RangeFetcher {
  const location = redactLocation(url);
  const { target, authorization } = splitCredentials(url, location);
  return {
    location,
    async open(start, etag, signal, end): Promise<RangeResponse> {
      const headers: Record<string, string> = {
        range: `bytes=${start}-${end ?? ''}`,
        'accept-encoding': 'identity',
      };
      if (authorization !== undefined) headers.authorization = authorization;
      // If-Match compares strongly (RFC 9110 §13.1.1): a weak ETag would never match and every
      // resume would look like a changed object. resume.ts proves a weak one's object otherwise.
      if (etag !== undefined && !isWeakEtag(etag)) headers['if-match'] = etag;
      let response: Response;
      try {
        const redirect = options.redirects === 'refuse' ? 'manual' : 'follow';
        response = await fetch(target, { headers, signal, redirect });
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        // undici's "fetch failed" hides the errno in its cause.
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        throw new RemoteError(
          location,
          redactText(`request failed: ${cause?.code ?? cause?.message ?? String(error)}`),
          0,
          { cause: error },
        );
      }
      const status = response.status;
      const cancel = () => void response.body?.cancel().catch(() => undefined);
      if (status !== 200 && status !== 206) {
        cancel();
        if (status >= 300 && status < 400 && options.redirects === 'refuse') {
          // A file a checkpoint names is read where the confinement judged it, nowhere else.
          throw new RemoteUnsupportedError(
            location,
            `the server redirected (HTTP ${status}); a file a Flink checkpoint names is read ` +
              'only where it lies under the allowed roots, so redirects are not followed',
          );
        }
        if (status === 412) {
          throw new CheckpointChangedError(location, start, etag ?? '(none)', 'another (HTTP 412)');
        }
        if (status === 404 || status === 410) {
          throw new RemoteNotFoundError(location, `no such checkpoint (HTTP ${status})`);
        }
        if (status === 401 || status === 403) {
          throw new RemoteAccessError(location, `access denied (HTTP ${status})`);
        }
        if (status === 416 && start === 0) {
          // An empty object has no byte 0: the reader reports it as an empty checkpoint.
          return {
            body: emptyBody(),
            etag: response.headers.get('etag') ?? undefined,
            size: 0,
            cancel,
          };
        }
        if (transientStatus(status)) throw new TransientStatus(`HTTP ${status}`);
        throw new RemoteError(location, `unexpected answer HTTP ${status}`);
      }
      const encoding = encodingOf(response);
      if (encoding !== undefined) {
        cancel();
        throw new RemoteUnsupportedError(
          location,
          `the server sent the object ${encoding}-encoded (Content-Encoding: ${encoding}) although ` +
            "identity was asked for; its bytes are not the checkpoint's bytes, so it is refused " +
            '(serve it unencoded, e.g. turn off on-the-fly compression for this path)',
        );
      }
      const range = rangeOf(response, start);
      if (typeof range === 'string') {
        cancel();
        throw new RemoteUnsupportedError(location, range);
      }
      const body = response.body ?? emptyBody();
      return {
        body: body as AsyncIterable<Uint8Array>,
        etag: response.headers.get('etag') ?? undefined,
        size: range.size,
        offset: range.offset,
        cancel,
      };
    },
    isTransient(error) {
      if (error instanceof TransientStatus) return true;
      // A connection refused or reset before an answer: the network, worth another try.
      return error instanceof RemoteError && /request failed/.test(error.reason);
    },
  };
}

/** Whether an ETag is weak (`W/"…"`): equal ones say "equivalent", not "the same bytes". */
export function isWeakEtag(etag: string): boolean {
  return /^W\//.test(etag);
}

/** The answer's content coding unless it is none or `identity` (lower case). */
function encodingOf(response: Response): string | undefined {
  const header = response.headers.get('content-encoding');
  if (header === null) return undefined;
  const codings = header
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  return codings.length === 0 ? undefined : codings.join(', ');
}

/**
 * The URL fetch is given and the `Authorization` header for its user info: fetch refuses a URL
 * with credentials (a raw TypeError), so they travel as Basic auth, percent-decoded and with
 * their case kept (only the scheme and the host are case-insensitive). The URL is the one the
 * parser gives, which is what fetch would request anyway.
 */
function splitCredentials(
  url: string,
  location: string,
): { target: string; authorization?: string } {
  let parsed: RemoteUrl;
  try {
    parsed = parseRemote(url);
  } catch (error) {
    throw new RemoteUnsupportedError(location, (error as Error).message, { cause: error });
  }
  const c = parsed.credentials;
  if (c === undefined) return { target: parsed.href };
  return {
    target: parsed.href,
    authorization: `Basic ${Buffer.from(`${c.user}:${c.password}`, 'utf8').toString('base64')}`,
  };
}

/**
 * Where the answer's body starts and the whole object's size, or why the answer cannot be
 * used: a 206's `Content-Range` must start at the byte asked for and agree with the answer's
 * `Content-Length`; a 200 (the server ignored `Range`) is the whole object from byte 0 and
 * needs a `Content-Length`. Without a size the end of the object could not be proven (G12).
 */
function rangeOf(response: Response, start: number): { offset: number; size: number } | string {
  const length = response.headers.get('content-length');
  const declared = length === null ? undefined : Number(length);
  if (response.status === 206) {
    const range = response.headers.get('content-range') ?? '';
    const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(range);
    if (m === null) {
      return `the server answered a range without a usable Content-Range ('${range}')`;
    }
    const [first, last, size] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (first !== start || last < first || last >= size) {
      return `the server answered bytes ${first}-${last}/${size} when asked for byte ${start} on`;
    }
    if (declared !== undefined && declared !== last + 1 - first) {
      return `Content-Length ${declared} disagrees with Content-Range ${range}`;
    }
    return { offset: first, size };
  }
  if (declared === undefined || !Number.isSafeInteger(declared) || declared < 0) {
    return 'the server sent no Content-Length or Content-Range, so the end of the object cannot be proven';
  }
  return { offset: 0, size: declared };
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}
