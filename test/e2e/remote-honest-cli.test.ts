/**
 * `spillway recover http://…` against servers of our own that misbehave (issue 23, points 3 and
 * 4): the real CLI in a child process ends in the exact bytes (exit 0) or one clean line with
 * the exit code docs/cli.md gives — a gzip-encoding store is bad input (2), an object replaced
 * without a strong ETag is a changed object (1), a deadline passed is a failed run (1) — never
 * exit 0 with wrong or fewer bytes, never a run without an end, and no spill file left.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { crc32 } from '../../src/services/crc32.ts';
import { channelBytes, makeSmallCheckpoint, suiteCheckpoint } from '../helpers/checkpoints.ts';
import { startFaultProxy, type Fault } from '../helpers/fault-proxy.ts';
import {
  sameSizeOtherBytes,
  startObjectServer,
  startSilentServer,
  type ObjectServerOptions,
} from '../helpers/misbehaving-server.ts';
import {
  expectByteExact,
  lines,
  makeTempRoot,
  runCli,
  spawnCli,
  spillLeftovers,
  waitFor,
} from './harness.ts';

const cp = suiteCheckpoint((dir) => makeSmallCheckpoint(dir, { kib: 2048, channels: 4 }));
let a: Buffer;
let expectedA: Map<string, Buffer>;
beforeAll(async () => {
  a = await readFile(cp.path);
  expectedA = await channelBytes(cp.path);
});

const stops: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s.stop();
});

/** A stall is detected in 3 s here (30 s by default; it covers the wait for headers too). */
const FAST = { SPILLWAY_REMOTE_STALL_MS: '3000', SPILLWAY_REMOTE_BACKOFF_MS: '20' };

async function serve(options: ObjectServerOptions, plan: Fault[] = []) {
  const server = await startObjectServer(a, options);
  stops.push(server);
  const proxy = await startFaultProxy(server.port, plan);
  stops.push(proxy);
  return { server, proxy };
}

async function dirs() {
  return { root: await makeTempRoot(), out: join(await makeTempRoot(), 'out') };
}

describe('spillway recover http:// from a server that misbehaves (issue 23)', () => {
  it.each([
    ['ranged answers', false],
    ['plain 200 answers', true],
  ])(
    'a store that answers gzip (%s): exit 2, one line saying why, nothing created',
    async (_name, ignoreRange) => {
      const { proxy } = await serve({ gzip: true, ignoreRange });
      const { root, out } = await dirs();
      const done = await runCli(
        ['recover', `${proxy.url}/cp.spwc`, '--out', out, '--spill-root', root],
        FAST,
      );
      expect(done.code).toBe(2);
      expect(lines(done.stderr)).toEqual([
        `spillway recover: ${proxy.url}/cp.spwc: the server sent the object gzip-encoded ` +
          `(Content-Encoding: gzip) although identity was asked for; its bytes are not the ` +
          `checkpoint's bytes, so it is refused (serve it unencoded, e.g. turn off on-the-fly ` +
          `compression for this path)`,
      ]);
      expect(done.stdout).toBe('');
      expect(await readdir(out).catch(() => 'absent')).toBe('absent');
      expect(await spillLeftovers(root)).toEqual([]);
    },
  );

  it('no ETag, the object replaced by another of the same size before a resume: exit 1, never spliced', async () => {
    const { server, proxy } = await serve({ etag: 'none' }, [
      { kind: 'stall', afterBytes: 700_000 },
    ]);
    const { root, out } = await dirs();
    const child = spawnCli(
      ['recover', `${proxy.url}/cp.spwc`, '--out', out, '--spill-root', root],
      FAST,
    );
    await waitFor('the stall', () => (proxy.fired.length > 0 ? true : undefined), { child });
    server.replace(sameSizeOtherBytes(a, crc32));
    const { code } = await child.exited;
    expect(code).toBe(1);
    expect(lines(child.stderr)[0]).toMatch(
      /^spillway recover: failed: http:\/\/127\.0\.0\.1:\d+\/cp\.spwc: the object changed while it was read \(at byte \d+: ETag \(none\) \(no strong ETag; bytes 0-\d+: sha256 [0-9a-f]{16}…\)/,
    );
    expect(await readdir(out).catch(() => [])).toEqual([]);
    expect(await spillLeftovers(root)).toEqual([]);
  }, 60_000);

  it.each<[string, ObjectServerOptions]>([
    ['no ETag, only Last-Modified changed (same bytes)', { etag: 'none', lastModified: true }],
    ['a weak ETag, the object unchanged', { etag: 'weak' }],
  ])(
    '%s, through a stall: exit 0, byte-exact, the retry counted',
    async (_name, options) => {
      const { server, proxy } = await serve(options, [{ kind: 'stall', afterBytes: 700_000 }]);
      const { root, out } = await dirs();
      const child = spawnCli(
        ['recover', `${proxy.url}/cp.spwc`, '--out', out, '--spill-root', root, '--json'],
        FAST,
      );
      await waitFor('the stall', () => (proxy.fired.length > 0 ? true : undefined), { child });
      server.replace(Buffer.from(a), { keepEtag: true });
      const { code } = await child.exited;
      expect(child.stderr).toBe('');
      expect(code).toBe(0);
      expect((JSON.parse(child.stdout) as { retries: number }).retries).toBe(1);
      await expectByteExact(out, expectedA);
      expect(await spillLeftovers(root)).toEqual([]);
    },
    60_000,
  );

  it('user:password@ in the URL: sent as Basic auth, byte-exact, the password printed nowhere; a wrong one is exit 1', async () => {
    const password = 'hunter2-9c4e7a1b';
    const { server } = await serve({ etag: 'strong', basicAuth: `ckpt:${password}` });
    const host = server.url.slice('http://'.length);
    const { root, out } = await dirs();
    const done = await runCli(
      [
        'recover',
        `http://ckpt:${password}@${host}/cp.spwc`,
        '--out',
        out,
        '--spill-root',
        root,
        '--json',
      ],
      FAST,
    );
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect((JSON.parse(done.stdout) as { checkpoint: string }).checkpoint).toBe(
      `http://<redacted>@${host}/cp.spwc`,
    );
    await expectByteExact(out, expectedA);
    const wrong = await runCli(
      [
        'recover',
        `http://ckpt:x${password}@${host}/cp.spwc`,
        '--out',
        `${out}2`,
        '--spill-root',
        root,
      ],
      { ...FAST, SPILLWAY_DEBUG: '1' },
    );
    expect(wrong.code).toBe(1);
    expect(lines(wrong.stderr)[0]).toBe(
      `spillway recover: failed: http://<redacted>@${host}/cp.spwc: access denied (HTTP 401)`,
    );
    expect(done.stdout + done.stderr + wrong.stdout + wrong.stderr).not.toContain(password);
    expect(await spillLeftovers(root)).toEqual([]);
  }, 60_000);
});

describe('spillway recover http:// ends by its deadline (G11, issue 23 point 4)', () => {
  /** The issue's own settings: stall 2 s, deadline 8 s (the run was still going at 30 s). */
  const BOUNDS = { SPILLWAY_REMOTE_STALL_MS: '2000', SPILLWAY_REMOTE_DEADLINE_MS: '8000' };
  /**
   * Generous: process start-up (seconds on a loaded machine) on top of the 8 s deadline, and
   * still below the 30 s at which the issue found the run going on.
   */
  const UPPER_MS = 8000 + 14_000;

  it.each([
    ['drips one byte every 100 ms', 'drip'],
    ['accepts and never answers', 'silent'],
  ])(
    'a server that %s: exit 1, one line naming the deadline, well before 30 s, nothing left',
    async (_name, kind) => {
      let url: string;
      if (kind === 'drip') {
        const server = await startObjectServer(a, { etag: 'strong', dripBodyMs: 100 });
        stops.push(server);
        url = `${server.url}/cp.spwc`;
      } else {
        const silent = await startSilentServer();
        stops.push(silent);
        url = `${silent.url}/cp.spwc`;
      }
      const { root, out } = await dirs();
      const started = performance.now();
      const done = await runCli(['recover', url, '--out', out, '--spill-root', root], BOUNDS);
      const elapsed = performance.now() - started;
      expect(done.code).toBe(1);
      expect(lines(done.stderr)).toHaveLength(1);
      expect(lines(done.stderr)[0]).toMatch(
        kind === 'drip'
          ? /^spillway recover: failed: http:\/\/127\.0\.0\.1:\d+\/cp\.spwc: deadline of 8000 ms passed at byte \d+ of \d+$/
          : /^spillway recover: failed: http:\/\/127\.0\.0\.1:\d+\/cp\.spwc: deadline of 8000 ms passed at byte 0 \(last retry: no answer for 2000 ms\)$/,
      );
      expect(elapsed).toBeLessThan(UPPER_MS);
      expect(await readdir(out).catch(() => [])).toEqual([]);
      expect(await spillLeftovers(root)).toEqual([]);
    },
    60_000,
  );
});
