/**
 * `spillway recover s3://…` end to end: the real CLI in a child process, a real S3-compatible
 * server (s3rver) on 127.0.0.1 and the fault proxy in front of it. One 256 MiB object,
 * uploaded once, recovered byte-exact through each fault kind; cancel mid-GET, a changed
 * object, a missing object or bucket and bad credentials end as docs/cli.md says, with no spill
 * file left and nothing secret printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { join } from 'node:path';
import { readdir } from 'node:fs/promises';
import { channelBytes, makeSmallCheckpoint, suiteCheckpoint } from '../helpers/checkpoints.ts';
import { startFaultProxy, type Fault, type FaultProxy } from '../helpers/fault-proxy.ts';
import { s3Env, startLocalS3, type LocalS3 } from '../helpers/s3-server.ts';
import { startFileServer } from '../helpers/http-file-server.ts';
import {
  expectByteExact,
  lines,
  makeTempRoot,
  peakRss,
  runCli,
  spawnCli,
  spillLeftovers,
  waitFor,
} from './harness.ts';

const MIB = 1024 * 1024;
const big = suiteCheckpoint((dir) =>
  makeCheckpoint({ out: join(dir, 'big.spwc'), mb: 256, seed: 17, gates: 2, channels: 4 }),
);
let s3: LocalS3;
let expected: Map<string, Buffer>;

beforeAll(async () => {
  s3 = await startLocalS3(['ckpt']);
  await s3.put('ckpt', 'jobs/big.spwc', big.path);
  expected = await channelBytes(big.path);
}, 120_000);
afterAll(async () => {
  await s3?.stop();
});

/**
 * A stall is detected in 3 s here (30 s by default), backoff kept short. The stall covers the
 * wait for headers too, so it stays above what a loaded machine takes to answer.
 */
const FAST = { SPILLWAY_REMOTE_STALL_MS: '3000', SPILLWAY_REMOTE_BACKOFF_MS: '20' };

async function recover(location: string, endpoint: string, env: Record<string, string> = {}) {
  const root = await makeTempRoot();
  const out = join(await makeTempRoot(), 'out');
  const args = ['recover', location, '--out', out, '--spill-root', root, '--s3-endpoint', endpoint];
  return { root, out, args, env: s3Env({ ...FAST, ...env }) };
}

describe('spillway recover s3://', () => {
  it.each<[string, Fault[]]>([
    ['reset mid-body', [{ kind: 'reset', afterBytes: 96 * MIB }]],
    ['503', [{ kind: '503', afterConnections: 1 }]],
    ['stall mid-body', [{ kind: 'stall', afterBytes: 64 * MIB }]],
    ['truncated response', [{ kind: 'truncate', afterBytes: 160 * MIB }]],
  ])(
    'a 256 MiB object through a %s: byte-exact, the retry counted, no spill file left',
    async (_name, plan) => {
      const proxy = await startFaultProxy(s3.port, [...plan]);
      try {
        const r = await recover('s3://ckpt/jobs/big.spwc', proxy.url);
        const child = spawnCli([...r.args, '--json'], r.env);
        child.proc.stdin!.end();
        // G8: the object is streamed, never held whole (256 MiB would show in the peak RSS).
        let peak = 0;
        await waitFor('the recovery to end', () => {
          peak = Math.max(peak, peakRss(child.proc.pid!) ?? 0);
          return child.ended ? true : undefined;
        });
        const { code } = await child.exited;
        expect(child.stderr).toBe('');
        expect(code).toBe(0);
        expect(peak).toBeGreaterThan(0);
        expect(peak).toBeLessThan(200 * MIB);
        const report = JSON.parse(child.stdout) as { retries: number; bytes: number };
        expect(proxy.fired).toEqual(plan.map((f) => f.kind));
        expect(report.retries).toBe(plan.length);
        expect(report.bytes).toBe(big.made.payloadBytes);
        await expectByteExact(r.out, expected);
        expect(await spillLeftovers(r.root)).toEqual([]);
      } finally {
        await proxy.stop();
      }
    },
    120_000,
  );

  it('cancel mid-GET (SIGINT): exit 130, 0 files, the request aborted (socket closed)', async () => {
    const proxy = await startFaultProxy(s3.port, [{ kind: 'stall', afterBytes: 48 * MIB }]);
    try {
      // No stall detection within the test: the GET is in flight, blocked, when SIGINT comes.
      const r = await recover('s3://ckpt/jobs/big.spwc', proxy.url, {
        SPILLWAY_REMOTE_STALL_MS: '600000',
      });
      const child = spawnCli(r.args, r.env);
      await waitFor('the stall to fire', () => (proxy.fired.length > 0 ? true : undefined), {
        child,
      });
      child.proc.kill('SIGINT');
      const { code } = await child.exited;
      expect(code).toBe(130);
      expect(await spillLeftovers(r.root)).toEqual([]);
      expect(await readdir(r.out).catch(() => [])).toEqual([]);
      await waitFor('the client to close the socket', () =>
        proxy.clientClosedMidResponse >= 1 ? true : undefined,
      );
    } finally {
      await proxy.stop();
    }
  }, 60_000);

  it('an object changed mid-read: CheckpointChangedError, exit 1, never spliced', async () => {
    const small = await makeTempRoot();
    const v1 = await makeSmallCheckpoint(small, { kib: 8192, seed: 1, name: 'v1.spwc' });
    const v2 = await makeSmallCheckpoint(small, { kib: 8192, seed: 2, name: 'v2.spwc' });
    await s3.put('ckpt', 'jobs/changing.spwc', v1.path);
    const proxy = await startFaultProxy(s3.port, [{ kind: 'stall', afterBytes: 2 * MIB }]);
    try {
      const r = await recover('s3://ckpt/jobs/changing.spwc', proxy.url);
      const child = spawnCli(r.args, r.env);
      await waitFor('the stall to fire', () => (proxy.fired.length > 0 ? true : undefined), {
        child,
      });
      await s3.put('ckpt', 'jobs/changing.spwc', v2.path);
      const { code } = await child.exited;
      expect(code).toBe(1);
      const err = lines(child.stderr);
      expect(err[0]).toMatch(
        /^spillway recover: failed: s3:\/\/ckpt\/jobs\/changing\.spwc: the object changed while it was read/,
      );
      expect(await spillLeftovers(r.root)).toEqual([]);
      expect(await readdir(r.out).catch(() => [])).toEqual([]);
    } finally {
      await proxy.stop();
    }
  }, 60_000);

  it.each([
    ['s3://ckpt/jobs/none.spwc', /s3:\/\/ckpt\/jobs\/none\.spwc: no such key$/],
    ['s3://no-such-bucket/big.spwc', /s3:\/\/no-such-bucket\/big\.spwc: no such bucket$/],
  ])(
    'a missing object or bucket (%s): one line, exit 2, nothing created',
    async (location, line) => {
      const r = await recover(location, s3.endpoint);
      const done = await runCli(r.args, r.env);
      expect(done.code).toBe(2);
      expect(lines(done.stderr)).toHaveLength(1);
      expect(lines(done.stderr)[0]).toMatch(line);
      expect(await readdir(r.out).catch(() => 'absent')).toBe('absent');
      expect(await spillLeftovers(r.root)).toEqual([]);
    },
  );

  it('bad credentials: exit 1, the secret appears nowhere in the output', async () => {
    const secret = 'wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY';
    const r = await recover('s3://ckpt/jobs/big.spwc', s3.endpoint, {
      AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE',
      AWS_SECRET_ACCESS_KEY: secret,
    });
    const done = await runCli([...r.args], { ...r.env, SPILLWAY_DEBUG: '1' });
    expect(done.code).toBe(1);
    expect(lines(done.stderr)[0]).toMatch(/access denied \(InvalidAccessKeyId/);
    expect(done.stderr + done.stdout).not.toContain(secret);
    expect(await spillLeftovers(r.root)).toEqual([]);
  });
});

describe('spillway recover http(s)://', () => {
  it('a presigned-style URL through a reset: byte-exact, and its query string is printed nowhere', async () => {
    const dir = await makeTempRoot();
    const made = await makeSmallCheckpoint(dir, { kib: 4096, channels: 3, name: 'cp.spwc' });
    const server = await startFileServer(dir);
    const proxy = await startFaultProxy(server.port, [{ kind: 'reset', afterBytes: 1 * MIB }]);
    try {
      const secret = 'X-Amz-Signature=6f1e9a0c2b7d4e8f';
      const url = `${proxy.url}/cp.spwc?X-Amz-Credential=AKIAEXAMPLE&${secret}`;
      const root = await makeTempRoot();
      const out = join(await makeTempRoot(), 'out');
      const done = await runCli(
        ['recover', url, '--out', out, '--spill-root', root, '--json'],
        FAST,
      );
      expect(done.stderr).toBe('');
      expect(done.code).toBe(0);
      const report = JSON.parse(done.stdout) as { checkpoint: string; retries: number };
      expect(report.checkpoint).toBe(`${proxy.url}/cp.spwc?<redacted>`);
      expect(report.retries).toBe(1);
      expect(done.stdout + done.stderr).not.toContain('6f1e9a0c2b7d4e8f');
      expect(done.stdout + done.stderr).not.toContain('AKIAEXAMPLE');
      await expectByteExact(out, await channelBytes(made.path));
      expect(await spillLeftovers(root)).toEqual([]);
      // A missing one is bad input, one line, still without the query string.
      const missing = await runCli(
        ['recover', `${server.url}/gone.spwc?${secret}`, '--out', out + '2', '--spill-root', root],
        FAST,
      );
      expect(missing.code).toBe(2);
      expect(lines(missing.stderr)).toEqual([
        `spillway recover: ${server.url}/gone.spwc?<redacted>: no such checkpoint (HTTP 404)`,
      ]);
    } finally {
      await proxy.stop();
      await server.stop();
    }
  });
});
