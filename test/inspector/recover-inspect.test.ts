/**
 * `spillway recover --inspect[=PORT]`: a real recovery in a real child process, watched live
 * through the inspector it serves in-process. The checkpoint comes from a local HTTP store that
 * holds back the rest of its body until the test has seen the task on the page's live feed, so
 * "live" is a fact of the run, not of timing. Every ending closes the server and lets the
 * process exit: finished (0), cancelled by a signal (130), failed (a corrupt body).
 */
import { createReadStream } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import type { InspectorRecord, ServerMessage } from '../../inspector/protocol.ts';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { makeTempRoot, spawnCli, spillLeftovers, waitFor, type Child } from '../e2e/harness.ts';

/** The store holds a body after this much: enough for the fetch to have spilled some of it. */
const HELD_AFTER = 3 * 1024 * 1024;

interface HeldStore {
  url: string;
  /** Sends the rest of every held body: the file's own bytes, or garbage (a corrupt body). */
  release(how?: 'intact' | 'garbage'): void;
  /** True once a body is being held. */
  readonly holding: boolean;
  stop(): Promise<void>;
}

/** Serves `file` like an object store, holding every longer body after HELD_AFTER bytes. */
async function heldStore(file: string): Promise<HeldStore> {
  const size = (await stat(file)).size;
  let release!: (how: 'intact' | 'garbage') => void;
  const released = new Promise<'intact' | 'garbage'>((resolve) => (release = resolve));
  let holding = false;
  const server: Server = createServer((req, res) => {
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const start = m === null ? 0 : Number(m[1]);
    const last = m === null || m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    const headers = {
      etag: '"held-1"',
      'accept-ranges': 'bytes',
      'content-length': last + 1 - start,
      ...(m === null ? {} : { 'content-range': `bytes ${start}-${last}/${size}` }),
    };
    res.writeHead(m === null ? 200 : 206, headers);
    if (req.method === 'HEAD') return void res.end();
    const length = last + 1 - start;
    if (length <= HELD_AFTER) return void createReadStream(file, { start, end: last }).pipe(res);
    const head = createReadStream(file, { start, end: start + HELD_AFTER - 1 });
    head.pipe(res, { end: false });
    head.on('end', () => {
      holding = true;
      void released.then((how) => {
        if (how === 'garbage') res.end(Buffer.alloc(length - HELD_AFTER, 0xee));
        else createReadStream(file, { start: start + HELD_AFTER, end: last }).pipe(res);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/cp.spwc`,
    release: (how = 'intact') => release(how),
    get holding() {
      return holding;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const stores: HeldStore[] = [];
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  for (const s of stores.splice(0)) await s.stop();
});

async function setUp() {
  const root = await makeTempRoot();
  const made = await makeCheckpoint({ out: join(root, 'cp.spwc'), mb: 6, seed: 3 });
  const store = await heldStore(made.path);
  stores.push(store);
  const spill = join(root, 'spill');
  await mkdir(spill);
  return { root, made, store, out: join(root, 'out'), spill };
}

/** The inspector URL the child printed on stderr (one line). */
function inspectorUrl(child: Child): Promise<URL> {
  return waitFor(
    'the inspector URL on stderr',
    () => {
      const m = /^spillway recover: live inspector at (http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(
        child.stderr,
      );
      return m === null ? undefined : new URL(m[1]!);
    },
    { child },
  );
}

function get(url: URL): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

/** A page's socket: every record it was sent, and whether the server said bye and closed. */
function feed(url: URL) {
  const ws = new WebSocket(`ws://${url.host}/ws`);
  sockets.push(ws);
  const state = { records: [] as InspectorRecord[], bye: false, closed: false };
  ws.on('message', (data: Buffer) => {
    const m = JSON.parse(data.toString()) as ServerMessage;
    if (m.type === 'batch') state.records.push(...m.records);
    if (m.type === 'bye') state.bye = true;
  });
  ws.on('close', () => (state.closed = true));
  return state;
}

/** True once nothing listens on the URL's port any more. */
const refused = (url: URL) =>
  get(url).then(
    () => false,
    (e: NodeJS.ErrnoException) => e.code === 'ECONNREFUSED',
  );

/** `spillway recover URL --out OUT --spill-root SPILL` with the given `--inspect` flag. */
const recoverWatched = (url: string, out: string, spill: string, flag: string) =>
  spawnCli(['recover', url, '--out', out, '--spill-root', spill, flag]);

describe('spillway recover --inspect', () => {
  test('a real recovery is watched live: the page loads, its feed shows the task fetching, and once it finishes the server is closed and the process exits 0', async () => {
    const { store, out, spill, made } = await setUp();
    const child = recoverWatched(store.url, out, spill, '--inspect=0');
    const url = await inspectorUrl(child);
    const page = await get(url);
    expect(page.status).toBe(200);
    expect(page.body).toContain('<title>Spillway inspector</title>');
    const live = feed(url);
    await waitFor('the store to hold the body', () => (store.holding ? true : undefined), {
      child,
    });
    // While the store holds the body, the task is live and fetching: the feed says so.
    const fetching = await waitFor(
      'the task fetching on the live feed',
      () =>
        live.records.find(
          (r) => r.k === 'snap' && r.path === '' && JSON.stringify(r.value).includes('"fetching"'),
        ),
      { child },
    );
    expect(child.ended).toBe(false);
    expect(fetching.k === 'snap' && fetching.task).toMatch(/^task-/);
    expect(live.records.some((r) => r.k === 'actor' && r.path === 'fetch')).toBe(true);
    // And its ownership: the fetch stage owns the task dir it is writing, files and bytes.
    const owned = await waitFor(
      'the fetch owning the task dir on the live feed',
      () =>
        live.records.find(
          (r) =>
            r.k === 'owners' &&
            r.owners.some(
              (o) => o.owner === 'fetch' && o.resources.some((x) => x.resource === 'taskDir'),
            ) &&
            (r.files ?? []).length > 0,
        ),
      { child },
    );
    expect(owned.k === 'owners' && owned.dir?.startsWith(spill)).toBe(true);

    store.release();
    const { code } = await child.exited;
    expect(child.stderr).toContain('recovered');
    expect(code).toBe(0);
    // The page saw the whole run to its end, was told bye, and its socket was closed.
    expect(live.records.some((r) => r.k === 'snap' && r.path === '' && r.status === 'done')).toBe(
      true,
    );
    await waitFor('the page socket to close', () => (live.closed ? true : undefined));
    expect(live.bye).toBe(true);
    expect(await refused(url)).toBe(true);
    expect((await stat(join(out, 'gate-0-channel-0.bin'))).size).toBe(made.channels[0]!.bytes);
    expect((await spillLeftovers(spill)).filter((p) => /task-|spill-segment/.test(p))).toEqual([]);
  });

  test.each([
    ['cancelled by SIGINT', 130, 'signal'],
    ['failed on a corrupt body', 2, 'garbage'],
  ] as const)(
    'a recovery %s while watched closes the server and exits %i',
    async (_name, exit, how) => {
      const { store, out, spill } = await setUp();
      const child = recoverWatched(store.url, out, spill, '--inspect');
      const url = await inspectorUrl(child);
      const live = feed(url);
      await waitFor('the store to hold the body', () => (store.holding ? true : undefined), {
        child,
      });
      await waitFor(
        'the task on the live feed',
        () => (live.records.some((r) => r.k === 'actor' && r.path === '') ? true : undefined),
        { child },
      );
      if (how === 'signal') child.proc.kill('SIGINT');
      else store.release('garbage');
      const { code } = await child.exited;
      expect(code).toBe(exit);
      expect(
        live.records.some((r) => r.k === 'snap' && r.path === '' && r.status !== 'active'),
      ).toBe(true);
      expect(await refused(url)).toBe(true);
      expect((await spillLeftovers(spill)).filter((p) => /task-|spill-segment/.test(p))).toEqual(
        [],
      );
    },
  );

  test.each([['--inspect=http'], ['--inspect=70000'], ['--inspect=']])(
    'a bad port value (%s) is one line and exit 2',
    async (flag) => {
      const { out, root } = await setUp();
      const child = spawnCli(['recover', join(root, 'cp.spwc'), '--out', out, flag]);
      const { code } = await child.exited;
      expect(code).toBe(2);
      expect(child.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(/--inspect=PORT needs a port 0\.\.65535, got '/),
      ]);
    },
  );
});
