/**
 * G11 and G12 against real servers of our own that misbehave (issue 23, point 3 and 4): a store
 * that answers gzip although identity was asked for, objects without a strong ETag replaced
 * between the first read and a resume, weak ETags, a server that ignores `Range` or caps its
 * answers at an entry boundary, `user:password@` URLs, a server that drips and one that never
 * answers. Each ends in the exact bytes or one clean typed error — never a splice, never a
 * shorter checkpoint taken for the whole, never a read without an end.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readCheckpoint } from '../../src/services/formats/spwc/reader.ts';
import type { RetryInfo, RetryPolicy } from '../../src/services/locations/range-fetcher.ts';
import { crc32 } from '../../src/services/crc32.ts';
import {
  AbortedError,
  CheckpointChangedError,
  RemoteAccessError,
  RemoteTimeoutError,
  RemoteUnsupportedError,
} from '../../src/services/errors.ts';
import { channelBytes, makeSmallCheckpoint, suiteCheckpoint } from '../helpers/checkpoints.ts';
import { startFaultProxy, type Fault, type FaultProxy } from '../helpers/fault-proxy.ts';
import {
  sameSizeOtherBytes,
  startObjectServer,
  startSilentServer,
  type ObjectServer,
  type ObjectServerOptions,
  type SilentServer,
} from '../helpers/misbehaving-server.ts';
import { waitFor } from '../helpers/processes.ts';
import { expectSameBytes } from '../helpers/remote.ts';

const cp = suiteCheckpoint((dir) => makeSmallCheckpoint(dir, { kib: 2048, channels: 4 }));
/** Version A (the suite checkpoint) and B: same size and layout, every channel's bytes other. */
let a: Buffer;
let b: Buffer;
let expectedA: Map<string, Buffer>;
let expectedB: Map<string, Buffer>;

beforeAll(async () => {
  a = await readFile(cp.path);
  b = sameSizeOtherBytes(a, crc32);
  const bPath = join(cp.dir, 'b.spwc');
  await writeFile(bPath, b);
  expectedA = await channelBytes(cp.path);
  expectedB = await channelBytes(bPath);
  // The two versions really differ in every channel, so a splice could not hide.
  for (const [key, bytes] of expectedA) expect(bytes.equals(expectedB.get(key)!)).toBe(false);
});

const stops: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s.stop();
});

async function object(options: ObjectServerOptions, bytes = a): Promise<ObjectServer> {
  const s = await startObjectServer(bytes, options);
  stops.push(s);
  return s;
}

async function proxy(port: number, plan: Fault[]): Promise<FaultProxy> {
  const p = await startFaultProxy(port, plan);
  stops.push(p);
  return p;
}

function read(
  url: string,
  remote: RetryPolicy & { retries?: RetryInfo[] } = {},
  signal?: AbortSignal,
) {
  return channelBytes(url, {
    readChunkBytes: 64 * 1024,
    signal,
    remote: {
      stallTimeoutMs: 2000,
      backoffMs: 5,
      ...remote,
      onRetry: (info) => remote.retries?.push(info),
    },
  });
}

/** Byte offsets in `spwc` where an entry starts (v1). */
function entryBoundaries(spwc: Buffer): number[] {
  const out: number[] = [];
  let at = 8;
  while (at + 16 <= spwc.length) {
    out.push(at);
    at += 16 + spwc.readInt32BE(at + 8);
  }
  return out;
}

describe('G12: an encoded body is refused, never decoded and never ranged over', () => {
  it.each([
    ['ranged answers (206 over the encoded bytes)', false],
    ['plain 200 answers (Range ignored)', true],
  ])(
    'a store that answers gzip despite Accept-Encoding: identity, %s: RemoteUnsupportedError before any entry',
    async (_name, ignoreRange) => {
      const server = await object({ gzip: true, ignoreRange });
      let entries = 0;
      const error = await readCheckpoint(
        `${server.url}/cp.spwc`,
        { onEntry: () => void entries++, onPayload() {} },
        { remote: { backoffMs: 5 } },
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RemoteUnsupportedError);
      expect(error).toMatchObject({ code: 'ERR_SPILLWAY_REMOTE_UNSUPPORTED' });
      expect((error as Error).message).toMatch(
        /gzip-encoded \(Content-Encoding: gzip\) although identity was asked for/,
      );
      expect(entries).toBe(0);
      // Asked for identity, and not retried: no retry can change what the store keeps.
      expect(server.requests).toHaveLength(1);
      expect(server.requests[0]!.headers['accept-encoding']).toMatch(/^identity(, identity)*$/);
    },
  );
});

describe('G12: no splice without a strong ETag — a resume proves the object by its bytes', () => {
  it('no ETag, the object replaced by another of the same size before a resume: CheckpointChangedError, never a splice', async () => {
    const server = await object({ etag: 'none' });
    const p = await proxy(server.port, [{ kind: 'stall', afterBytes: 700_000 }]);
    let entries = 0;
    const reading = readCheckpoint(
      `${p.url}/cp.spwc`,
      { onEntry: () => void entries++, onPayload() {} },
      { remote: { stallTimeoutMs: 2000, backoffMs: 5 } },
    );
    reading.catch(() => undefined);
    await waitFor('the stall', () => (p.fired.length > 0 ? true : undefined));
    const before = entries;
    server.replace(b);
    const error = await reading.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointChangedError);
    expect((error as Error).message).toMatch(
      /the object changed while it was read \(at byte \d+: ETag \(none\) \(no strong ETag; bytes 0-\d+: sha256 [0-9a-f]{16}…\) when the read began, now bytes 0-\d+: sha256 [0-9a-f]{16}…\)/,
    );
    // Not one entry of version B was handed on after the resume.
    expect(entries).toBe(before);
    // The resume re-read from byte 0 (the proof), without an If-Match it could not honour.
    expect(server.requests.at(-1)!.headers.range).toBe('bytes=0-');
    expect(server.requests.every((r) => r.headers['if-match'] === undefined)).toBe(true);
  });

  it('no ETag, only Last-Modified changes (same bytes): the re-read proves the prefix, byte-exact', async () => {
    const server = await object({ etag: 'none', lastModified: true });
    const p = await proxy(server.port, [{ kind: 'stall', afterBytes: 700_000 }]);
    const retries: RetryInfo[] = [];
    const reading = read(`${p.url}/cp.spwc`, { retries });
    await waitFor('the stall', () => (p.fired.length > 0 ? true : undefined));
    server.replace(Buffer.from(a));
    expectSameBytes(await reading, expectedA);
    expect(retries).toHaveLength(1);
    expect(server.requests.at(-1)!.headers.range).toBe('bytes=0-');
  });

  it('a weak ETag does not make a resume fail as changed: an unchanged object through a reset is byte-exact', async () => {
    const server = await object({ etag: 'weak' });
    const p = await proxy(server.port, [{ kind: 'reset', afterBytes: 700_000 }]);
    const retries: RetryInfo[] = [];
    expectSameBytes(await read(`${p.url}/cp.spwc`, { retries }), expectedA);
    expect(retries).toHaveLength(1);
    // If-Match compares strongly: a weak ETag sent there would always fail (HTTP 412).
    expect(server.requests.every((r) => r.headers['if-match'] === undefined)).toBe(true);
  });

  it('a weak ETag kept while the bytes change: CheckpointChangedError from the re-read proof', async () => {
    const server = await object({ etag: 'weak' });
    const p = await proxy(server.port, [{ kind: 'stall', afterBytes: 700_000 }]);
    const reading = read(`${p.url}/cp.spwc`);
    reading.catch(() => undefined);
    await waitFor('the stall', () => (p.fired.length > 0 ? true : undefined));
    server.replace(b, { keepEtag: true });
    await expect(reading).rejects.toThrow(/ETag W\/"v1" \(no strong ETag; bytes 0-\d+: sha256/);
  });

  it('a weak ETag that changed on a resume: CheckpointChangedError without reading further', async () => {
    const server = await object({ etag: 'weak' });
    const p = await proxy(server.port, [{ kind: 'stall', afterBytes: 700_000 }]);
    const reading = read(`${p.url}/cp.spwc`);
    reading.catch(() => undefined);
    await waitFor('the stall', () => (p.fired.length > 0 ? true : undefined));
    server.replace(b);
    const error = await reading.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointChangedError);
    expect((error as Error).message).toMatch(
      /ETag W\/"v1" \(\d+ bytes\) when the read began, now W\/"v2"/,
    );
  });

  it('a strong ETag still resumes with If-Match and a ranged request (no re-read)', async () => {
    const server = await object({ etag: 'strong' });
    const p = await proxy(server.port, [{ kind: 'reset', afterBytes: 700_000 }]);
    const retries: RetryInfo[] = [];
    expectSameBytes(await read(`${p.url}/cp.spwc`, { retries }), expectedA);
    expect(retries).toHaveLength(1);
    const resumed = server.requests.at(-1)!.headers;
    expect(resumed['if-match']).toBe('"v1"');
    expect(resumed.range).toBe(`bytes=${retries[0]!.offset}-`);
  });

  it('a server that ignores Range (strong ETag): the resumed 200 skips what was consumed, byte-exact', async () => {
    const server = await object({ etag: 'strong', ignoreRange: true });
    const p = await proxy(server.port, [{ kind: 'reset', afterBytes: 700_000 }]);
    const retries: RetryInfo[] = [];
    expectSameBytes(await read(`${p.url}/cp.spwc`, { retries }), expectedA);
    expect(retries).toHaveLength(1);
    expect(retries[0]!.offset).toBeGreaterThan(0);
  });

  it('the end is proven by the size: an answer that stops cleanly at an entry boundary is resumed, not taken as the end', async () => {
    // A store that caps each answer: a valid 206 for bytes 0…(boundary-1) of the whole size.
    // What it sent is itself a valid, shorter checkpoint; only the size says it is not all.
    const boundary = entryBoundaries(a).find((o) => o > a.length / 3)!;
    const server = await object({ etag: 'strong' });
    const capped = await startCappedProxy(server, boundary);
    const retries: RetryInfo[] = [];
    expectSameBytes(await read(`${capped.url}/cp.spwc`, { retries }), expectedA);
    expect(retries.map((r) => r.offset)).toEqual([boundary]);
    expect(retries[0]!.reason).toMatch(
      new RegExp(`response ended at byte ${boundary} of ${a.length}`),
    );
  });
});

/**
 * A server that answers the first request's range only up to `cap` (exclusive), as a valid 206
 * (`Content-Range: bytes 0-(cap-1)/size`): a clean, short, well-formed answer.
 */
async function startCappedProxy(server: ObjectServer, cap: number): Promise<ObjectServer> {
  const { createServer } = await import('node:http');
  let first = true;
  const http = createServer((req, res) => {
    const range = first ? `bytes=0-${cap - 1}` : (req.headers.range ?? '');
    first = false;
    void fetch(`${server.url}${req.url}`, {
      headers: { range, 'accept-encoding': 'identity' },
    }).then(async (upstream) => {
      const body = Buffer.from(await upstream.arrayBuffer());
      const headers: Record<string, string> = {};
      for (const h of ['etag', 'content-range', 'content-length']) {
        const v = upstream.headers.get(h);
        if (v !== null) headers[h] = v;
      }
      res.writeHead(upstream.status, headers).end(body);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as { port: number }).port;
  const capped = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests: [],
    replace() {},
    async stop() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
  stops.push(capped);
  return capped;
}

describe('credentials in an http:// URL: sent as a Basic Authorization header, never printed', () => {
  it('user:password@ (percent-encoded) reads byte-exact; a wrong password is RemoteAccessError without it', async () => {
    const password = 'p@ss w0rd-7f3e9c';
    const server = await object({ etag: 'strong', basicAuth: `ckpt-user:${password}` });
    const host = server.url.slice('http://'.length);
    const encoded = encodeURIComponent(password);
    expectSameBytes(await read(`http://ckpt-user:${encoded}@${host}/cp.spwc`), expectedA);
    expect(server.requests[0]!.headers.authorization).toBe(
      `Basic ${Buffer.from(`ckpt-user:${password}`).toString('base64')}`,
    );
    const error = await read(`http://ckpt-user:wrong-${encoded}@${host}/cp.spwc`).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RemoteAccessError);
    expect((error as Error).message).toBe(
      `http://<redacted>@${host}/cp.spwc: access denied (HTTP 401)`,
    );
    expect(JSON.stringify({ ...(error as object), m: (error as Error).message })).not.toContain(
      encoded,
    );
    // User info that is not valid percent-encoding: one clean error, not a raw URIError.
    const bad = await read(`http://ckpt-user:%zz-secret@${host}/cp.spwc`).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(RemoteUnsupportedError);
    expect((bad as Error).message).toBe(
      `http://<redacted>@${host}/cp.spwc: the user info of the URL is not valid percent-encoding`,
    );
  });
});

describe('G11: a remote read ends by its deadline, whatever the server does', () => {
  /** The bound the tests allow: the deadline plus a generous margin for a loaded machine. */
  const MARGIN_MS = 4000;

  it('a server that drips one byte every 100 ms (never stalls): RemoteTimeoutError at the deadline', async () => {
    const server = await object({ etag: 'strong', dripBodyMs: 100 });
    const started = performance.now();
    const error = await read(`${server.url}/cp.spwc`, {
      stallTimeoutMs: 500,
      deadlineMs: 2000,
    }).catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    expect(error).toBeInstanceOf(RemoteTimeoutError);
    expect(error).toMatchObject({ code: 'ERR_SPILLWAY_REMOTE_TIMEOUT', retries: 0 });
    expect((error as Error).message).toMatch(/deadline of 2000 ms passed at byte \d+ of \d+/);
    expect(elapsed).toBeGreaterThanOrEqual(1900);
    expect(elapsed).toBeLessThan(2000 + MARGIN_MS);
  });

  it('a server that drips its answer headers included: each wait for headers stalls out, the read ends by the deadline', async () => {
    const server = await object({ etag: 'strong', dripAnswerMs: 100 });
    const retries: RetryInfo[] = [];
    const started = performance.now();
    const error = await read(`${server.url}/cp.spwc`, {
      stallTimeoutMs: 500,
      deadlineMs: 2000,
      retries,
    }).catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(2000 + MARGIN_MS);
    expect(error).toBeInstanceOf(RemoteTimeoutError);
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(retries[0]!.reason).toBe('no answer for 500 ms');
  });

  it('a server that accepts and never answers: RemoteTimeoutError by the deadline, every socket closed', async () => {
    const silent: SilentServer = await startSilentServer();
    stops.push(silent);
    const retries: RetryInfo[] = [];
    const started = performance.now();
    const error = await read(`${silent.url}/cp.spwc`, {
      stallTimeoutMs: 500,
      deadlineMs: 2000,
      retries,
    }).catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(2000 + MARGIN_MS);
    expect(error).toBeInstanceOf(RemoteTimeoutError);
    expect((error as Error).message).toMatch(
      /deadline of 2000 ms passed at byte 0.*no answer for 500 ms/,
    );
    expect(silent.connections).toBeGreaterThanOrEqual(retries.length + 1);
    await waitFor('the client to close its sockets', () => (silent.open === 0 ? true : undefined));
  });

  it('a silent server and no stall timeout to speak of: the deadline alone ends the wait for headers', async () => {
    const silent = await startSilentServer();
    stops.push(silent);
    const started = performance.now();
    const error = await read(`${silent.url}/cp.spwc`, {
      stallTimeoutMs: 600_000,
      deadlineMs: 1000,
    }).catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(1000 + MARGIN_MS);
    expect(error).toBeInstanceOf(RemoteTimeoutError);
    expect(silent.connections).toBe(1);
  });

  it('a deadline or stall timeout beyond what a timer holds means "never", not "at once"', async () => {
    const server = await object({ etag: 'strong' });
    const got = await read(`${server.url}/cp.spwc`, {
      stallTimeoutMs: Number.MAX_SAFE_INTEGER,
      deadlineMs: Infinity,
    });
    expectSameBytes(got, expectedA);
  });

  it('cancel while waiting for headers rejects with the reason at once', async () => {
    const silent = await startSilentServer();
    stops.push(silent);
    const controller = new AbortController();
    const reading = read(`${silent.url}/cp.spwc`, { stallTimeoutMs: 600_000 }, controller.signal);
    reading.catch(() => undefined);
    await waitFor('the connection', () => (silent.connections > 0 ? true : undefined));
    const reason = new AbortedError('cancelled by test');
    controller.abort(reason);
    await expect(reading).rejects.toBe(reason);
  });
});
