/**
 * A real S3-compatible server for the remote tests: `s3rver` (npm, a devDependency) in this
 * process on 127.0.0.1, an ephemeral port and a temp dir of its own, started and stopped by the
 * tests. s3rver 3.7.1 answers GetObject with ranges, multipart uploads and SigV4 checks, but
 * not ListMultipartUploads nor AbortMultipartUpload; those two are added in front of its router
 * over its own store (the uploads dir of a bucket holds one dir per open upload), so the
 * client's abort really removes the parts and the listing shows what really is there. And as
 * S3 does, a part for an upload that is not open is refused (NoSuchUpload), and one still in
 * flight when its upload was aborted is dropped, where s3rver would recreate the aborted upload
 * around it.
 */
import { createReadStream } from 'node:fs';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import S3rver from 's3rver';
import { loadS3Sdk } from '../../src/services/locations/s3-client.ts';
import { removeDir, tempDir } from './temp.ts';

/** s3rver's built-in account. */
export const S3_KEY_ID = 'S3RVER';
export const S3_SECRET = 'S3RVER';

/** The environment a child needs to reach the server through the standard credential chain. */
export function s3Env(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    AWS_ACCESS_KEY_ID: S3_KEY_ID,
    AWS_SECRET_ACCESS_KEY: S3_SECRET,
    AWS_REGION: 'us-east-1',
    AWS_EC2_METADATA_DISABLED: 'true',
    ...overrides,
  };
}

export interface LocalS3 {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  readonly port: number;
  readonly dir: string;
  /** Open multipart uploads of `bucket`, as the store holds them: `{ uploadId, key }`. */
  uploads(bucket: string): Promise<{ uploadId: string; key: string }[]>;
  /** Uploads a local file as `s3://bucket/key`. */
  put(bucket: string, key: string, file: string): Promise<void>;
  stop(): Promise<void>;
}

interface Store {
  getResourcePath(bucket: string, key: string | undefined, resource: string): string;
}

/** Starts s3rver with `buckets` created. */
export async function startLocalS3(buckets: string[]): Promise<LocalS3> {
  const dir = await tempDir();
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    directory: dir,
    silent: true,
    configureBuckets: buckets.map((name) => ({ name, configs: [] })),
  });
  const store = (server as unknown as { store: Store }).store;
  const uploadsDir = (bucket: string) => store.getResourcePath(bucket, undefined, 'uploads');
  const uploads = async (bucket: string) => {
    const ids = await readdir(uploadsDir(bucket)).catch(() => [] as string[]);
    return Promise.all(
      ids.map(async (uploadId) => ({
        uploadId,
        key: await readFile(join(uploadsDir(bucket), uploadId, 'key'), 'utf8').catch(() => '?'),
      })),
    );
  };
  const aborted = new Set<string>();
  // The two multipart calls s3rver lacks, ahead of its router (Koa composes on listen).
  const koa = server as unknown as {
    middleware: ((ctx: KoaCtx, next: () => Promise<void>) => Promise<void>)[];
  };
  koa.middleware.unshift(async (ctx, next) => {
    const url = new URL(ctx.url, 'http://x');
    const [bucket, ...rest] = url.pathname.slice(1).split('/');
    const uploadId = url.searchParams.get('uploadId');
    if (ctx.method === 'DELETE' && uploadId !== null && bucket) {
      aborted.add(uploadId);
      await rm(join(uploadsDir(bucket), uploadId), { recursive: true, force: true });
      ctx.status = 204;
      return;
    }
    if (ctx.method === 'PUT' && uploadId !== null && bucket && url.searchParams.has('partNumber')) {
      // S3 refuses a part for an upload that is not (or no longer) open; s3rver would create
      // the upload's dir again and keep the part, an orphan no real store would have.
      const open = await stat(join(uploadsDir(bucket), uploadId, 'key')).then(
        () => true,
        () => false,
      );
      if (!open || aborted.has(uploadId)) {
        ctx.status = 404;
        ctx.type = 'application/xml';
        ctx.body =
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code>' +
          '<Message>The specified upload does not exist.</Message></Error>';
        return;
      }
      await next();
      // A part that was in flight when its upload was aborted: s3rver has just written it into
      // a dir it made again. S3 keeps no upload an abort removed; neither does this server.
      if (aborted.has(uploadId)) {
        await rm(join(uploadsDir(bucket), uploadId), { recursive: true, force: true });
      }
      return;
    }
    if (ctx.method === 'GET' && url.searchParams.has('uploads') && rest.join('') === '' && bucket) {
      const list = await uploads(bucket);
      ctx.type = 'application/xml';
      ctx.body =
        `<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult><Bucket>${bucket}</Bucket>` +
        list
          .map((u) => `<Upload><Key>${u.key}</Key><UploadId>${u.uploadId}</UploadId></Upload>`)
          .join('') +
        `<IsTruncated>false</IsTruncated></ListMultipartUploadsResult>`;
      return;
    }
    await next();
  });
  const address = (await server.run()) as AddressInfo;
  const endpoint = `http://127.0.0.1:${address.port}`;
  return {
    endpoint,
    port: address.port,
    dir,
    uploads,
    async put(bucket, key, file) {
      const { client, s3 } = await testClient(endpoint);
      const size = (await stat(file)).size;
      await client.send(
        new s3.PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: createReadStream(file),
          ContentLength: size,
        }),
      );
      client.destroy();
    },
    async stop() {
      await server.close();
      await removeDir(dir);
    },
  };
}

interface KoaCtx {
  method: string;
  url: string;
  status: number;
  type: string;
  body: unknown;
}

/** A client for the tests' own calls, with s3rver's keys whatever this process's env says. */
export async function testClient(endpoint: string) {
  const s3 = await loadS3Sdk();
  const client = new s3.S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: S3_KEY_ID, secretAccessKey: S3_SECRET },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return { client, s3 };
}
