/**
 * What the remote suites share: s3rver's credentials in this process's environment (the SDK's
 * standard chain reads them there) for one file's tests, and a byte-exact comparison of
 * per-channel bytes that stays fast at many MiB.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { S3_KEY_ID, S3_SECRET } from './s3-server.ts';

/** Sets s3rver's keys in `process.env` for the file's tests; restores the environment after. */
export function useS3Credentials(): void {
  const saved = { ...process.env };
  beforeAll(() => {
    process.env.AWS_ACCESS_KEY_ID = S3_KEY_ID;
    process.env.AWS_SECRET_ACCESS_KEY = S3_SECRET;
    process.env.AWS_REGION = 'us-east-1';
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  });
  afterAll(() => {
    process.env = saved;
  });
}

/** Same channels, each byte-identical (`Buffer.equals`: a deep `toEqual` of MiBs is slow). */
export function expectSameBytes(got: Map<string, Buffer>, want: Map<string, Buffer>): void {
  expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
  for (const [key, bytes] of want) expect(got.get(key)!.equals(bytes), `${key} differs`).toBe(true);
}
