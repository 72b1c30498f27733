/**
 * A Flink `_metadata` read from an object store (DESIGN §7 "Input": local, http(s):// or s3://):
 * through the same resumable source as SPWC, `s3://bucket/…/chk-N` (a prefix, not an object),
 * `…/chk-N/` and `…/chk-N/_metadata` all read the checkpoint; a cut object is corrupt naming its
 * s3:// location; a missing one is the store's not-found error for what the user named.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CorruptCheckpointError, RemoteNotFoundError } from '../../src/services/errors.ts';
import { listFlinkCheckpoint } from '../../src/services/formats/flink/list.ts';
import { listFlinkFixtures } from '../helpers/flink-expected.ts';
import { useS3Credentials } from '../helpers/remote.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3-server.ts';
import { makeTempRoot } from '../helpers/temp.ts';

useS3Credentials();
let s3: LocalS3;
beforeAll(async () => {
  s3 = await startLocalS3(['ckpt']);
});
afterAll(async () => {
  await s3?.stop();
});

describe('flink ls of a checkpoint in S3', () => {
  const fixture = listFlinkFixtures()[0];

  it('the chk-N prefix, the prefix with a slash and the _metadata key list the same as the local copy', async () => {
    expect(fixture).toBeDefined();
    const metadata = join(fixture!.checkpoint, '_metadata');
    await s3.put('ckpt', 'job/chk-3/_metadata', metadata);
    const remote = { s3: { endpoint: s3.endpoint } };
    const local = await listFlinkCheckpoint(fixture!.checkpoint);
    expect(await listFlinkCheckpoint('s3://ckpt/job/chk-3', { remote })).toEqual(local);
    expect(await listFlinkCheckpoint('s3://ckpt/job/chk-3/', { remote })).toEqual(local);
    expect(await listFlinkCheckpoint('s3://ckpt/job/chk-3/_metadata', { remote })).toEqual(local);
  });

  it('a cut object is corrupt naming its s3:// location; a missing one is not found as named', async () => {
    const dir = await makeTempRoot();
    const cut = join(dir, 'cut');
    const bytes = readFileSync(join(fixture!.checkpoint, '_metadata'));
    await writeFile(cut, bytes.subarray(0, bytes.length - 3));
    await s3.put('ckpt', 'cut/chk-1/_metadata', cut);
    const remote = { s3: { endpoint: s3.endpoint } };
    const error = await listFlinkCheckpoint('s3://ckpt/cut/chk-1', { remote }).catch((e) => e);
    expect(error).toBeInstanceOf(CorruptCheckpointError);
    expect((error as CorruptCheckpointError).file).toBe('s3://ckpt/cut/chk-1/_metadata');
    expect((error as CorruptCheckpointError).offset).toBeLessThanOrEqual(bytes.length - 3);

    const missing = await listFlinkCheckpoint('s3://ckpt/none/chk-9', { remote }).catch((e) => e);
    expect(missing).toBeInstanceOf(RemoteNotFoundError);
    expect((missing as RemoteNotFoundError).location).toBe('s3://ckpt/none/chk-9');
  });
});
