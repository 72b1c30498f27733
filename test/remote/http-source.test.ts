/**
 * `http(s)://` checkpoints read by the real reader through Node's fetch from a real node:http
 * server, with the fault proxy in between: every fault kind resumes with a ranged request and
 * If-Match and the bytes come out exactly once (G6); a changed object, a missing one and a
 * cancel behave as the contract says; nothing secret is in any message.
 */
import { utimes, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCheckpoint } from '../../src/services/formats/spwc/reader.ts';
import {
  CheckpointChangedError,
  CorruptCheckpointError,
  RemoteError,
  RemoteNotFoundError,
  RemoteTimeoutError,
} from '../../src/services/errors.ts';
import { channelBytes, makeSmallCheckpoint, suiteCheckpoint } from '../helpers/checkpoints.ts';
import { startFaultProxy, type Fault, type FaultProxy } from '../helpers/fault-proxy.ts';
import { etagOf, startFileServer, type FileServer } from '../helpers/http-file-server.ts';
import type { RetryInfo } from '../../src/services/locations/range-fetcher.ts';
import { waitFor } from '../helpers/processes.ts';
import { expectSameBytes } from '../helpers/remote.ts';

const cp = suiteCheckpoint((dir) => makeSmallCheckpoint(dir, { kib: 2048, channels: 4 }));
let server: FileServer;
let expected: Map<string, Buffer>;
const proxies: FaultProxy[] = [];

beforeAll(async () => {
  server = await startFileServer(cp.dir);
  expected = await channelBytes(cp.path);
});
afterAll(async () => {
  for (const p of proxies) await p.stop();
  await server.stop();
});

async function proxy(plan: Fault[] = []): Promise<FaultProxy> {
  const p = await startFaultProxy(server.port, plan);
  proxies.push(p);
  return p;
}

/** Reads `url` with the real reader into per-channel buffers, small stall timeout. */
function readAll(url: string, options: { signal?: AbortSignal; retries?: RetryInfo[] } = {}) {
  return channelBytes(url, {
    readChunkBytes: 64 * 1024,
    signal: options.signal,
    // The stall covers waiting for headers too: 2 s, so a loaded machine's slow answer is not one.
    remote: { stallTimeoutMs: 2000, backoffMs: 5, onRetry: (info) => options.retries?.push(info) },
  });
}

describe('http(s):// source: a flaky network does not fail the recovery', () => {
  it.each<[string, Fault[]]>([
    ['reset mid-body', [{ kind: 'reset', afterBytes: 700_000 }]],
    ['truncate mid-body', [{ kind: 'truncate', afterBytes: 900_000 }]],
    ['stall mid-body', [{ kind: 'stall', afterBytes: 500_000 }]],
    ['503', [{ kind: '503' }]],
    [
      'all four in a row',
      [
        { kind: 'reset', afterBytes: 300_000 },
        { kind: '503' },
        { kind: 'stall', afterBytes: 300_000 },
        { kind: 'truncate', afterBytes: 300_000 },
      ],
    ],
  ])('%s: resumed from the next unread byte with If-Match, byte-exact', async (_name, plan) => {
    const p = await proxy([...plan]);
    const retries: RetryInfo[] = [];
    const before = server.requests.length;
    const got = await readAll(`${p.url}/${basename(cp.path)}`, { retries });
    expect(p.fired).toEqual(plan.map((f) => f.kind));
    expectSameBytes(got, expected);
    expect(retries.length).toBe(plan.length);
    // Every resumed request asks for the next unread byte and pins the first answer's ETag.
    const etag = await etagOf(cp.path);
    // (A 503 never reached the server: then the first request it saw was the retry, at byte 0.)
    const resumed = server.requests.slice(before + 1);
    const reachedServer = plan.filter((f) => f.kind !== '503').length;
    expect(resumed.length).toBe(reachedServer);
    for (const r of resumed) expect(r.headers['if-match']).toBe(etag);
    const offsets = retries.map((r) => r.offset);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
  });

  it('a changed object mid-read is a CheckpointChangedError, never a splice', async () => {
    const p = await proxy([{ kind: 'stall', afterBytes: 400_000 }]);
    const read = readAll(`${p.url}/${basename(cp.path)}`);
    read.catch(() => undefined);
    await waitFor('the stall', () => (p.fired.length > 0 ? true : undefined));
    // Same bytes, new mtime: a new version as far as the store's ETag goes.
    await utimes(cp.path, new Date(), new Date(Date.now() + 60_000));
    await expect(read).rejects.toBeInstanceOf(CheckpointChangedError);
    await expect(read).rejects.toMatchObject({ code: 'ERR_SPILLWAY_CHECKPOINT_CHANGED' });
  });

  it('a missing object is a RemoteNotFoundError naming the URL without its query string', async () => {
    const url = `${server.url}/missing.spwc?X-Amz-Signature=deadbeefsecret&X-Amz-Credential=AKIA`;
    const error = await readAll(url).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RemoteNotFoundError);
    expect((error as Error).message).toContain('/missing.spwc?<redacted>');
    expect((error as Error).message).not.toContain('deadbeefsecret');
    expect((error as Error).message).not.toContain('AKIA');
  });

  it('retries are bounded: a server that always answers 503 fails with RemoteError', async () => {
    const p = await proxy(Array.from({ length: 10 }, () => ({ kind: '503' as const })));
    const error = await readCheckpoint(
      `${p.url}/${basename(cp.path)}`,
      { onEntry() {}, onPayload() {} },
      { remote: { maxRetries: 3, backoffMs: 1 } },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RemoteError);
    expect((error as Error).message).toMatch(/gave up after 3 retries/);
    expect(p.fired.length).toBe(4);
  });

  it('an overall deadline bounds the retries: once it has passed no retry starts (RemoteTimeoutError)', async () => {
    const p = await proxy([{ kind: '503' }, { kind: '503' }]);
    // The first backoff (500–1000 ms) would end past the 300 ms deadline: no retry starts.
    const error = await channelBytes(`${p.url}/${basename(cp.path)}`, {
      remote: { deadlineMs: 300, backoffMs: 1000 },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RemoteTimeoutError);
    expect(error).toMatchObject({ code: 'ERR_SPILLWAY_REMOTE_TIMEOUT', retries: 0 });
    expect((error as Error).message).toMatch(/deadline of 300 ms passed at byte 0/);
    expect(p.connections).toBeLessThanOrEqual(1);
  });

  it('corrupt bytes from a remote source are still a CorruptCheckpointError', async () => {
    const error = await readAll(`${server.url}/../../../etc/hostname`).catch((e: unknown) => e);
    // The server refuses paths outside its dir the way it refuses any missing file…
    expect(error).toBeInstanceOf(RemoteNotFoundError);
    // …and a real non-checkpoint served as one is corrupt at byte 0.
    await writeFile(`${cp.dir}/not-a-checkpoint.spwc`, 'hello, not SPWC');
    const bad = await readAll(`${server.url}/not-a-checkpoint.spwc?sig=s3cr3t`).catch(
      (e: unknown) => e,
    );
    expect(bad).toBeInstanceOf(CorruptCheckpointError);
    expect((bad as CorruptCheckpointError).offset).toBe(0);
    expect((bad as CorruptCheckpointError).file).toBe(
      `${server.url}/not-a-checkpoint.spwc?<redacted>`,
    );
  });

  it('cancel aborts the request in flight: the proxy sees the client close its socket', async () => {
    const p = await proxy([{ kind: 'stall', afterBytes: 600_000 }]);
    const controller = new AbortController();
    const reason = new Error('cancelled by test');
    const read = readAll(`${p.url}/${basename(cp.path)}`, {
      signal: controller.signal,
    });
    await p.whenForwarded(500_000);
    controller.abort(reason);
    await expect(read).rejects.toBe(reason);
    await waitForValue(() => p.clientClosedMidResponse, 1);
  });
});

async function waitForValue(read: () => number, atLeast: number): Promise<void> {
  await waitFor('the client to close its socket', () => (read() >= atLeast ? true : undefined));
}
