/**
 * `s3://bucket/key` checkpoints read by the real reader through the AWS SDK from a real
 * S3-compatible server (s3rver on 127.0.0.1), with the fault proxy in between for the faults.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RemoteAccessError, RemoteNotFoundError } from '../../src/services/errors.ts';
import type { RemoteOptions } from '../../src/services/locations/remote-options.ts';
import { channelBytes, makeSmallCheckpoint, suiteCheckpoint } from '../helpers/checkpoints.ts';
import { startFaultProxy, type Fault } from '../helpers/fault-proxy.ts';
import { S3_KEY_ID, S3_SECRET, startLocalS3, type LocalS3 } from '../helpers/s3-server.ts';
import { expectSameBytes, useS3Credentials } from '../helpers/remote.ts';

const cp = suiteCheckpoint((dir) => makeSmallCheckpoint(dir, { kib: 2048, channels: 4 }));
let s3: LocalS3;
let expected: Map<string, Buffer>;
useS3Credentials();

beforeAll(async () => {
  s3 = await startLocalS3(['ckpt']);
  await s3.put('ckpt', 'jobs/a.spwc', cp.path);
  expected = await channelBytes(cp.path);
});
afterAll(async () => {
  await s3?.stop();
});

function readAll(location: string, remote: RemoteOptions) {
  return channelBytes(location, {
    readChunkBytes: 64 * 1024,
    // The stall covers waiting for headers too: 1 s, so a loaded machine's slow answer is not one.
    remote: { stallTimeoutMs: 1000, backoffMs: 5, ...remote },
  });
}

describe('s3:// source through the AWS SDK against a real S3-compatible server', () => {
  it('reads an object byte-exact', async () => {
    expectSameBytes(
      await readAll('s3://ckpt/jobs/a.spwc', { s3: { endpoint: s3.endpoint } }),
      expected,
    );
  });

  it.each<[string, Fault[]]>([
    ['reset', [{ kind: 'reset', afterBytes: 600_000 }]],
    ['truncate', [{ kind: 'truncate', afterBytes: 800_000 }]],
    ['stall', [{ kind: 'stall', afterBytes: 500_000 }]],
    ['503', [{ kind: '503' }]],
  ])('through a %s: resumed, byte-exact, one retry counted', async (_n, plan) => {
    const proxy = await startFaultProxy(s3.port, [...plan]);
    try {
      let retries = 0;
      const got = await readAll('s3://ckpt/jobs/a.spwc', {
        s3: { endpoint: proxy.url },
        onRetry: () => retries++,
      });
      expect(proxy.fired).toEqual(plan.map((f) => f.kind));
      expect(retries).toBe(1);
      expectSameBytes(got, expected);
    } finally {
      await proxy.stop();
    }
  });

  it('a missing key and a missing bucket are RemoteNotFoundError', async () => {
    await expect(
      readAll('s3://ckpt/jobs/none.spwc', { s3: { endpoint: s3.endpoint } }),
    ).rejects.toThrow(RemoteNotFoundError);
    const e = await readAll('s3://no-bucket/a.spwc', { s3: { endpoint: s3.endpoint } }).catch(
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(RemoteNotFoundError);
    expect((e as Error).message).toMatch(/no such bucket/);
  });

  // s3rver checks the access key id, not SigV4 signatures: a wrong key is what it can refuse.
  it('bad credentials are a RemoteAccessError that does not contain the secret', async () => {
    process.env.AWS_ACCESS_KEY_ID = 'AKIAWRONGWRONGWRONG';
    process.env.AWS_SECRET_ACCESS_KEY = 'wrong-secret-0123456789';
    try {
      const e = await readAll('s3://ckpt/jobs/a.spwc', { s3: { endpoint: s3.endpoint } }).catch(
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(RemoteAccessError);
      expect((e as Error).message).not.toContain('wrong-secret-0123456789');
      expect((e as Error).message).toMatch(/access denied \(InvalidAccessKeyId/);
    } finally {
      process.env.AWS_ACCESS_KEY_ID = S3_KEY_ID;
      process.env.AWS_SECRET_ACCESS_KEY = S3_SECRET;
    }
  });
});
