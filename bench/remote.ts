/**
 * The remote figure: Spillway's validating read of `s3://bucket/key` (the SDK, ranged GET,
 * every entry's CRC checked) against a plain ranged GET of the same object through the same
 * local S3-compatible server, alternating order per run. Goal ≥ 0.85 (docs/remote.md).
 *
 * The server is `s3rver`, a devDependency, loaded only here and only when present: an
 * installed package's `spillway bench` reports the figure as skipped, with the reason.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { readCheckpoint } from '../src/services/formats/spwc/reader.ts';
import { s3Client } from '../src/services/locations/s3-client.ts';
import { round, spread, type Spread } from './stats.ts';

const MIB = 1024 * 1024;
const BUCKET = 'bench';
const KEY = 'ratio.spwc';
/** s3rver's built-in account. */
const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export type RemoteFigures =
  | {
      /** Plain ranged GET time ÷ Spillway's read time, per run. */
      s3VsRangedGet: Spread;
      /** MiB/s of the object. */
      throughput: { rangedGet: Spread; spillway: Spread };
      objectMiB: number;
    }
  | { skipped: string };

interface S3rverLike {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}

/**
 * Serves `checkpoint` from a local s3rver in `dir` and times both reads `runs` times.
 *
 * @example
 * ```ts
 * const figures = await measureRemote({ checkpoint: made.path, dir, runs: 5, signal });
 * ```
 */
export async function measureRemote(o: {
  checkpoint: string;
  dir: string;
  runs: number;
  signal: AbortSignal;
}): Promise<RemoteFigures> {
  // As `spillway recover` does (src/cli/remote-env.ts): the pinned SDK supports Node 20, and
  // its notice about later releases would be the only line on the bench's stderr.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const name = 's3rver';
  let S3rver: new (options: object) => S3rverLike;
  try {
    S3rver = ((await import(name)) as { default: typeof S3rver }).default;
  } catch {
    return { skipped: 's3rver (a devDependency) is not installed' };
  }
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    directory: join(o.dir, 's3rver'),
    silent: true,
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const s3Options = { endpoint, credentials };
  try {
    const size = (await stat(o.checkpoint)).size;
    const { client, s3 } = await s3Client(s3Options);
    await client.send(
      new s3.PutObjectCommand({
        Bucket: BUCKET,
        Key: KEY,
        Body: createReadStream(o.checkpoint),
        ContentLength: size,
      }),
    );
    client.destroy();

    const plain = async () => {
      // The same object, the same server, anonymous: one ranged GET, bytes counted and dropped.
      const response = await fetch(`${endpoint}/${BUCKET}/${KEY}`, {
        headers: { range: 'bytes=0-' },
      });
      let n = 0;
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        n += chunk.length;
      }
      if (n !== size) throw new Error(`plain GET read ${n} of ${size} bytes`);
    };
    const spillway = async () => {
      const summary = await readCheckpoint(
        `s3://${BUCKET}/${KEY}`,
        { onEntry() {}, onPayload() {} },
        { remote: { s3: s3Options }, signal: o.signal },
      );
      if (summary.fileBytes !== size) throw new Error('spillway read a different size');
    };
    await plain();
    await spillway();
    const ratios: number[] = [];
    const plainRates: number[] = [];
    const spillwayRates: number[] = [];
    const time = async (f: () => Promise<void>) => {
      const t = performance.now();
      await f();
      return performance.now() - t;
    };
    for (let run = 0; run < o.runs; run++) {
      if (o.signal.aborted) throw o.signal.reason;
      let a: number;
      let b: number;
      if (run % 2 === 0) {
        a = await time(plain);
        b = await time(spillway);
      } else {
        b = await time(spillway);
        a = await time(plain);
      }
      ratios.push(round(a / b, 3));
      plainRates.push(round(size / MIB / (a / 1000), 1));
      spillwayRates.push(round(size / MIB / (b / 1000), 1));
    }
    return {
      s3VsRangedGet: spread(ratios),
      throughput: { rangedGet: spread(plainRates), spillway: spread(spillwayRates) },
      objectMiB: round(size / MIB, 1),
    };
  } finally {
    await server.close();
  }
}
