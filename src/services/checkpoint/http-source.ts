/**
 * `http(s)://` checkpoints through Node's built-in fetch: ranged GETs (`Range: bytes=N-`), the
 * ETag pinned by the first answer and sent back as `If-Match`. A presigned object-store URL
 * works as it is; its query string (the signature) is never printed.
 */
import {
  CheckpointChangedError,
  RemoteAccessError,
  RemoteError,
  RemoteNotFoundError,
} from '../errors.ts';
import { redactLocation, redactText } from './redact.ts';
import type { RangeFetcher, RangeResponse } from './resume.ts';

/** An HTTP answer retrying may change: a server busy or failing, a proxy timing out. */
function transientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** Thrown for a status retrying may change; `isTransient` recognises it. */
class TransientStatus extends Error {}

/**
 * The {@link RangeFetcher} of an `http(s)://` URL.
 *
 * @example
 * ```ts
 * const source = await openResumable(httpFetcher('https://store/cp.spwc?X-Amz-Signature=…'));
 * ```
 */
export function httpFetcher(url: string): RangeFetcher {
  const location = redactLocation(url);
  return {
    location,
    async open(start, etag, signal, end): Promise<RangeResponse> {
      const headers: Record<string, string> = { range: `bytes=${start}-${end ?? ''}` };
      if (etag !== undefined) headers['if-match'] = etag;
      let response: Response;
      try {
        response = await fetch(url, { headers, signal, redirect: 'follow' });
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
      const size = sizeOf(response, start);
      if (size === undefined) {
        cancel();
        throw new RemoteError(
          location,
          status === 200
            ? `the server ignored the Range request at byte ${start} (HTTP 200), cannot resume`
            : 'the server sent no usable Content-Range / Content-Length',
        );
      }
      const body = response.body ?? emptyBody();
      return {
        body: body as AsyncIterable<Uint8Array>,
        etag: response.headers.get('etag') ?? undefined,
        size,
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

/** The whole object's size from a 206's `Content-Range`, or a 200's length at start 0. */
function sizeOf(response: Response, start: number): number | undefined {
  if (response.status === 206) {
    const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(response.headers.get('content-range') ?? '');
    if (m === null || Number(m[1]) !== start) return undefined;
    return Number(m[3]);
  }
  if (start !== 0) return undefined;
  const length = response.headers.get('content-length');
  return length === null ? undefined : Number(length);
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}
