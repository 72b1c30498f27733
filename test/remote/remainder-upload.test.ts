/**
 * A checkpoint taken during recovery written to `s3://` by multipart upload, against a real
 * S3-compatible server: complete, it reads back as the remainder (G6: nothing delivered yet,
 * so every byte); failed or cancelled, the upload is aborted and the bucket holds no parts
 * afterwards — the object-store analogue of G1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecovery } from '../../src/recover.ts';
import type { CheckpointResult } from '../../src/index.ts';
import { CheckpointChangedError } from '../../src/services/errors.ts';
import { channelBytes, makeSmallCheckpoint, suiteCheckpoint } from '../helpers/checkpoints.ts';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.ts';
import { startLocalS3, testClient, type LocalS3 } from '../helpers/s3-server.ts';
import { expectSameBytes, useS3Credentials } from '../helpers/remote.ts';
import { makeTempRoot, spillFiles, waitFor } from '../e2e/harness.ts';

const MIB = 1024 * 1024;
const cp = suiteCheckpoint((dir) => makeSmallCheckpoint(dir, { kib: 20 * 1024, channels: 3 }));
let s3: LocalS3;
let original: Map<string, Buffer>;
useS3Credentials();

beforeAll(async () => {
  s3 = await startLocalS3(['ckpt']);
  original = await channelBytes(cp.path);
});
afterAll(async () => {
  await s3?.stop();
});

/** A recovery that takes checkpoint 1 to `out` before the first delivery. */
async function recoverWithCheckpoint(out: string, endpoint: string) {
  const spillRoot = await makeTempRoot();
  let checkpoint: Promise<CheckpointResult> | undefined;
  const recovery = startRecovery({
    checkpoint: cp.path,
    spillRoot,
    channels: () => ({ onBuffer() {}, onFinished() {} }),
    remote: { s3: { endpoint } },
    hooks: {
      beforeDrain() {
        checkpoint = recovery.checkpoint(1, { out });
        checkpoint.catch(() => undefined);
      },
    },
  });
  return { recovery, spillRoot, checkpoint: () => checkpoint! };
}

async function objectExists(key: string): Promise<boolean> {
  const { client, s3: sdk } = await testClient(s3.endpoint);
  try {
    await client.send(new sdk.HeadObjectCommand({ Bucket: 'ckpt', Key: key }));
    return true;
  } catch {
    return false;
  } finally {
    client.destroy();
  }
}

describe('checkpoint remainder to s3:// by multipart upload', () => {
  it('G6 a remainder uploaded in parts reads back as every undelivered byte', async () => {
    const r = await recoverWithCheckpoint('s3://ckpt/remainders/cp-1.spwc', s3.endpoint);
    await r.recovery.done;
    const result = await r.checkpoint();
    expect(result.file).toBe('s3://ckpt/remainders/cp-1.spwc');
    const got = await channelBytes(result.file!, { remote: { s3: { endpoint: s3.endpoint } } });
    expectSameBytes(got, original);
    expect(await s3.uploads('ckpt')).toEqual([]);
    expect(await spillFiles(r.spillRoot)).toEqual([]);
  });

  it('a cancelled multipart remainder is aborted: no parts left in the bucket (ListMultipartUploads)', async () => {
    // The first part's upload stalls half way: the upload is open when the task is cancelled.
    const proxy: FaultProxy = await startFaultProxy(s3.port, [
      { kind: 'stall', direction: 'request', afterBytes: 4 * MIB },
    ]);
    try {
      const r = await recoverWithCheckpoint('s3://ckpt/remainders/cancelled.spwc', proxy.url);
      await waitFor('an open multipart upload', async () =>
        proxy.fired.length > 0 && (await s3.uploads('ckpt')).length > 0 ? true : undefined,
      );
      r.recovery.cancel(new Error('cancelled by test'));
      await expect(r.recovery.done).rejects.toBeDefined();
      await expect(r.checkpoint()).rejects.toBeDefined();
      await waitFor('the upload to be aborted', async () =>
        (await s3.uploads('ckpt')).length === 0 ? true : undefined,
      );
      expect(await listUploads()).toEqual([]);
      expect(await objectExists('remainders/cancelled.spwc')).toBe(false);
      expect(await spillFiles(r.spillRoot)).toEqual([]);
    } finally {
      await proxy.stop();
    }
  });

  it('a failed multipart remainder (connection reset mid-part) is aborted; the task still recovers', async () => {
    const proxy = await startFaultProxy(s3.port, [
      { kind: 'reset', direction: 'request', afterBytes: 3 * MIB },
    ]);
    try {
      const r = await recoverWithCheckpoint('s3://ckpt/remainders/failed.spwc', proxy.url);
      const report = await r.recovery.done;
      expect(report.bytesDelivered).toBe(cp.made.payloadBytes);
      const failure = await r.checkpoint().catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(Error);
      expect(failure).not.toBeInstanceOf(CheckpointChangedError);
      expect(proxy.fired).toEqual(['reset']);
      expect(await listUploads()).toEqual([]);
      expect(await objectExists('remainders/failed.spwc')).toBe(false);
    } finally {
      await proxy.stop();
    }
  });
});

/** ListMultipartUploads through the SDK, as a user would check a bucket. */
async function listUploads(): Promise<string[]> {
  const { client, s3: sdk } = await testClient(s3.endpoint);
  try {
    const out = await client.send(new sdk.ListMultipartUploadsCommand({ Bucket: 'ckpt' }));
    return (out.Uploads ?? []).map((u) => `${u.Key}:${u.UploadId}`);
  } finally {
    client.destroy();
  }
}
