/**
 * The inspector relay without a browser: what it serves, to whom, what it relays about a real
 * recovery, how it sanitizes, how it bounds its history, the Stately interop stream, and that
 * it never keeps the process alive once closed.
 */
import { request } from 'node:http';
import { networkInterfaces } from 'node:os';
import { extname, join } from 'node:path';
import { connect, createServer, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { assign, createActor, createMachine, type AnyActorRef } from 'xstate';
import {
  HISTORY_LIMIT,
  MAX_BUFFERED_BYTES,
  STATELY_BUFFER_BYTES,
  STATELY_BUFFER_LIMIT,
  startInspectorServer,
  type InspectorRecord,
  type InspectorServer,
  type ServerMessage,
} from '../../inspector/server.ts';
import { sanitize } from '../../inspector/sanitize.ts';
import { startRecovery } from '../../src/recover.ts';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { FetchedChannelState } from '../../src/services/spill/fetched-state.ts';
import { channelId } from '../../src/services/channel.ts';
import { Drainer } from '../../src/services/spill/drainer.ts';
import { addSuppressed } from '../../src/services/errors.ts';
import {
  makeTempRoot,
  spawnCli,
  spawnTracked,
  spillLeftovers,
  type Child,
} from '../e2e/harness.ts';

// One spill root for the in-process recoveries of this file. SpillRoot caches open roots by
// device and inode, and a fresh temp dir often reuses the inode of the one just deleted, which
// would hand a later test the stale root.
let spillRoot: string;
beforeAll(async () => {
  spillRoot = await mkdtemp(join(tmpdir(), 'spillway-test-inspector-'));
});
afterAll(async () => {
  try {
    // This process's owner dir stays until it exits; no task dir or spill file may.
    const left = await spillLeftovers(spillRoot);
    expect(left.filter((p) => /task-|spill-segment/.test(p))).toEqual([]);
  } finally {
    await rm(spillRoot, { recursive: true, force: true });
  }
});

const servers: InspectorServer[] = [];
const sockets: (WebSocket | Socket)[] = [];
const actors: AnyActorRef[] = [];
afterEach(async () => {
  for (const actor of actors.splice(0)) actor.stop();
  for (const s of sockets.splice(0)) {
    if (s instanceof WebSocket) s.terminate();
    else s.destroy();
  }
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start(options?: Parameters<typeof startInspectorServer>[0]) {
  const server = await startInspectorServer(options);
  servers.push(server);
  return server;
}

interface Get {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function get(port: number, path: string, headers: Record<string, string> = {}): Promise<Get> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * A page stand-in: collects everything the relay sends on `path`. `until(what, done)` resolves
 * on the message after which `done()` holds (no polling, no sleeping), and rejects if the
 * socket closes first.
 */
async function listen(port: number, path = '/ws', headers: Record<string, string> = {}) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, { headers });
  sockets.push(ws);
  const messages: unknown[] = [];
  const onMessage = new Set<() => void>();
  ws.on('message', (data) => {
    messages.push(JSON.parse(data.toString()));
    for (const check of [...onMessage]) check();
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const records = () =>
    (messages as ServerMessage[]).flatMap((m) => (m.type === 'batch' ? m.records : []));
  const until = (what: string, done: () => boolean) =>
    new Promise<void>((resolve, reject) => {
      const stop = () => {
        onMessage.delete(check);
        ws.off('close', closed);
      };
      const check = () => {
        if (!done()) return;
        stop();
        resolve();
      };
      const closed = () => {
        stop();
        reject(new Error(`the socket closed before ${what}`));
      };
      onMessage.add(check);
      ws.on('close', closed);
      check();
    });
  return { ws, messages, records, until };
}

/** Resolves with the first match of `pattern` in what `child` printed, as it prints it. */
function printed(child: Child, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const stop = () => {
      child.proc.stdout!.off('data', check);
      child.proc.off('exit', exited);
    };
    // The harness's own 'data' listener was added first: `child.stdout` has this chunk.
    const check = () => {
      const match = pattern.exec(child.stdout);
      if (match === null) return;
      stop();
      resolve(match);
    };
    const exited = () => {
      stop();
      reject(new Error(`the child exited before printing ${pattern}: ${child.stderr}`));
    };
    child.proc.stdout!.on('data', check);
    child.proc.once('exit', exited);
    check();
  });
}

const finalRootSnapshots = (records: InspectorRecord[]) =>
  records.filter((r) => r.k === 'snap' && r.path === '' && r.status === 'done').length;

let madeCount = 0;
async function recoverOnce(root: string, inspect: InspectorServer['inspect'], taskId?: string) {
  const made = await makeCheckpoint({
    out: join(root, `in-${++madeCount}.spwc`),
    mb: 0.5,
    seed: 5,
  });
  const recovery = startRecovery({
    checkpoint: made.path,
    spillRoot,
    inspect,
    ...(taskId ? { taskId } : {}),
    channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
  });
  await recovery.done;
  return recovery.taskId;
}

const EXTERNAL_URL = /(?:https?:)?\/\/(?!127\.0\.0\.1[:/]|localhost[:/])[a-z0-9.-]+/gi;

describe('serving the page', () => {
  test('the page, its script and its style load from the relay and name no external URL', async () => {
    const server = await start();
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/`);
    for (const path of ['/', '/app.js', '/style.css']) {
      const res = await get(server.port, path);
      expect(res.status, path).toBe(200);
      expect(res.body.length, path).toBeGreaterThan(100);
      // Neither http(s):// nor protocol-relative //host, except the relay itself.
      expect(res.body.match(EXTERNAL_URL) ?? [], path).toEqual([]);
      expect(String(res.headers['content-security-policy']), path).toContain("default-src 'self'");
    }
    expect((await get(server.port, '/stately')).status).toBe(404);
    expect((await get(server.port, '/nope')).status).toBe(404);
  });

  test('serves every file of the page dir with its type, and nothing outside it', async () => {
    const server = await start();
    const pageDir = join(import.meta.dirname, '..', '..', 'inspector', 'page');
    const types: Record<string, string> = {
      '.html': 'text/html; charset=utf-8',
      '.js': 'text/javascript; charset=utf-8',
      '.css': 'text/css; charset=utf-8',
    };
    const names = (await readdir(pageDir)).filter((n) => extname(n) in types);
    expect(names).toEqual(expect.arrayContaining(['index.html', 'app.js', 'style.css']));
    for (const name of names) {
      const res = await get(server.port, `/${name}`);
      expect(res.status, name).toBe(200);
      expect(res.headers['content-type'], name).toBe(types[extname(name)]);
      expect(res.body, name).toBe(await readFile(join(pageDir, name), 'utf8'));
    }
    // Only what is in the allowlist: no way up, encoded or not, and no source of the relay.
    for (const path of [
      '/../server.ts',
      '/..%2fserver.ts',
      '/%2e%2e/server.ts',
      '/page/app.js',
      '//etc/passwd',
      '/.hidden.js',
      '/server.ts',
      '/protocol.ts',
    ]) {
      expect((await get(server.port, path)).status, path).toBe(404);
    }
  });

  test('listens on 127.0.0.1 only: another address of this host is refused', async () => {
    const server = await start();
    const other = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    if (other === undefined) {
      console.warn('no non-loopback IPv4 address on this host: only the bound address is checked');
    } else {
      // An address of this host answers at once: nothing listens there on this port.
      const refused = await new Promise<string>((resolve) => {
        const req = request({ host: other, port: server.port, path: '/' }, () =>
          resolve('connected'),
        );
        req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
        req.end();
      });
      expect(refused).toBe('ECONNREFUSED');
    }
    // A port taken on 127.0.0.1 is a clear error, not a crash.
    await expect(startInspectorServer({ port: server.port })).rejects.toThrow(/in use/);
  });

  test('a foreign Host or Origin is refused (DNS rebinding)', async () => {
    const server = await start();
    expect((await get(server.port, '/', { host: 'evil.example' })).status).toBe(403);
    expect((await get(server.port, '/', { host: `localhost:${server.port}` })).status).toBe(200);
    await expect(listen(server.port, '/ws', { origin: 'http://evil.example' })).rejects.toThrow(
      /403/,
    );
    await expect(
      listen(server.port, '/ws', { origin: `http://127.0.0.1:${server.port}` }),
    ).resolves.toBeDefined();
  });
});

describe('relaying a real recovery', () => {
  test('a page sees definitions, the actor tree, the stages in order and the hand-offs with their sources', async () => {
    const root = await makeTempRoot();
    const server = await start();
    const page = await listen(server.port);
    const taskId = await recoverOnce(root, server.inspect);
    const task = `task-${taskId}`;
    await page.until('the final snapshot', () => finalRootSnapshots(page.records()) === 1);
    const records = page.records();

    const defs = records.flatMap((r) => (r.k === 'def' ? [r.def] : []));
    expect(defs.map((d) => d.key).sort()).toEqual(['drain', 'fetch', 'gap', 'task']);
    const taskDef = defs.find((d) => d.key === 'task')!;
    const restoring = taskDef.root.states[0]!.states.find((s) => s.key === 'restoring')!;
    expect(restoring.states.map((s) => s.key)).toEqual(['fetching', 'gap', 'draining']);
    expect(restoring.states[0]!.description).toMatch(/Stage 1/);
    expect(restoring.states[0]!.invoke).toEqual([{ id: 'fetch', src: 'fetchMachine' }]);

    const actors = records.flatMap((r) => (r.k === 'actor' ? [r] : []));
    expect(actors.every((a) => a.task === task)).toBe(true);
    expect(actors.map((a) => `${a.path}:${a.kind}`)).toEqual(
      expect.arrayContaining([
        ':machine',
        'registry:callback',
        'fetch:machine',
        'fetch/spill:promise',
        'gap:machine',
        'gap/buildDrainer:promise',
        'drain:machine',
        'drain/drainChannels:promise',
      ]),
    );

    const leaves = records
      .flatMap((r) => (r.k === 'snap' && r.path === '' ? [JSON.stringify(r.value)] : []))
      .filter((v, k, all) => v !== all[k - 1]);
    expect(leaves).toEqual([
      '{"alive":{"restoring":"fetching"}}',
      '{"alive":{"restoring":"gap"}}',
      '{"alive":{"restoring":"draining"}}',
      '"finished"',
    ]);

    const toTask = records.flatMap((r) => (r.k === 'event' && r.path === '' ? [r] : []));
    const sourceOf = (type: string) => toTask.find((e) => e.type === type);
    expect(sourceOf('SPILL.OWNED')).toMatchObject({ source: 'fetch', inferred: true });
    expect(sourceOf('FETCH.HANDOFF')).toMatchObject({ source: 'fetch', inferred: true });
    expect(sourceOf('DRAINER.READY')).toMatchObject({ source: 'gap', inferred: true });
    expect(sourceOf('SPILL.RELEASED')).toMatchObject({ source: 'drain', inferred: true });
    expect(sourceOf('xstate.done.actor.fetch')).toMatchObject({ source: 'fetch' });
    expect(sourceOf('xstate.done.actor.fetch')!.inferred).toBeUndefined();

    // Ownership as the lane draws it: fetch → gap → drain, nothing left at the end.
    const owners = records.flatMap((r) =>
      r.k === 'snap' && r.path === ''
        ? [JSON.stringify((r.context as { ownership: unknown }).ownership)]
        : [],
    );
    expect(owners).toEqual(
      expect.arrayContaining([
        '{"taskDir":"fetch"}',
        '{"fetchedState":"gap"}',
        '{"fetchedState":"gap","drainer":"gap"}',
        '{"fetchedState":"drain","drainer":"drain"}',
        '{}',
      ]),
    );

    // Sanitized: summaries, never services, handles or buffers.
    const handoff = sourceOf('FETCH.HANDOFF')!.data as { state: unknown };
    expect(handoff.state).toEqual({ files: expect.any(Number), refCount: 1, closed: false });
    const text = JSON.stringify(records);
    expect(text).not.toMatch(/"services"|"closeable"|"Buffer"|"fd"|"handle"/);
  });

  test('a page that connects after the run replays the whole history in order', async () => {
    const root = await makeTempRoot();
    const server = await start();
    const early = await listen(server.port);
    await recoverOnce(root, server.inspect, 'one');
    await recoverOnce(root, server.inspect, 'two');
    // A metrics sample after both runs marks the end: records arrive in order, so a page that
    // has the marker has everything before it.
    server.publishMetrics({ files: 0, bytes: 0, liveTasks: 0 });
    const hasMarker = (rs: InspectorRecord[]) => rs.some((r) => r.k === 'metrics');
    await early.until('the end of both runs', () => hasMarker(early.records()));
    expect(finalRootSnapshots(early.records())).toBe(2);
    const late = await listen(server.port);
    await late.until('the replay', () => hasMarker(late.records()));
    expect((late.messages[0] as ServerMessage).type).toBe('hello');
    const seq = (rs: InspectorRecord[]) => rs.map((r) => r.i);
    expect(seq(late.records())).toEqual(seq(early.records()));
    expect(new Set(late.records().map((r) => ('task' in r ? r.task : '')))).toEqual(
      new Set(['', 'task-one', 'task-two']),
    );
    // The same history can be downloaded.
    const download = JSON.parse((await get(server.port, '/history.json')).body) as {
      records: InspectorRecord[];
    };
    expect(download.records.length).toBe(
      late.records().filter((r) => r.k !== 'def' && r.k !== 'metrics').length,
    );
    // Live records reach a page in batches, not one message per inspection event.
    const batches = early.messages.filter((m) => (m as ServerMessage).type === 'batch');
    expect(batches.length).toBeLessThan(early.records().length / 4);
  });

  test('a task id that repeats gets its own key, so its runs are not merged', async () => {
    const root = await makeTempRoot();
    const server = await start();
    const page = await listen(server.port);
    await recoverOnce(root, server.inspect, 'again');
    await recoverOnce(root, server.inspect, 'again');
    await page.until('two roots', () => finalRootSnapshots(page.records()) === 2);
    const roots = page.records().flatMap((r) => (r.k === 'actor' && r.path === '' ? [r.task] : []));
    expect(roots).toEqual(['task-again', 'task-again#2']);
  });

  test('the history is bounded, says how much it dropped, and metrics are kept apart', async () => {
    const server = await start();
    const machine = createMachine({
      id: 'busy',
      initial: 'a',
      states: { a: { on: { TICK: 'b' } }, b: { on: { TICK: 'a' } } },
    });
    const actor = createActor(machine, { id: 'busy', inspect: server.inspect }).start();
    // One event record and one snapshot record per TICK.
    for (let k = 0; k < HISTORY_LIMIT / 2 + 1000; k++) actor.send({ type: 'TICK' });
    actor.stop();
    server.publishMetrics({ files: 3, bytes: 4096, liveTasks: 1, at: 1 });
    // The page joins while the last records may still be pending: it gets the replay, then the
    // batch. Records arrive in order and the metrics sample was the last one: with it, all.
    const page = await listen(server.port);
    await page.until('the metrics sample', () => page.records().some((r) => r.k === 'metrics'));
    const hello = page.messages[0] as Extract<ServerMessage, { type: 'hello' }>;
    expect(hello.dropped).toBeGreaterThan(0);
    const records = page.records();
    expect(records.filter((r) => r.k !== 'def' && r.k !== 'metrics').length).toBeLessThanOrEqual(
      HISTORY_LIMIT,
    );
    expect(records.find((r) => r.k === 'metrics')).toMatchObject({ files: 3, bytes: 4096, t: 1 });
    expect(records.find((r) => r.k === 'def')).toMatchObject({ def: { key: 'busy' } });
  });

  test('inspect and publishMetrics after close are no-ops, and close is idempotent', async () => {
    const server = await startInspectorServer();
    await server.close();
    await server.close();
    const actor = createActor(createMachine({ id: 'late' }), { inspect: server.inspect });
    expect(() => actor.start()).not.toThrow();
    actor.stop();
    expect(() => server.publishMetrics({ files: 1, bytes: 1, liveTasks: 1 })).not.toThrow();
  });
});

describe('a client that stops reading', () => {
  /**
   * A raw WebSocket client that completes the upgrade and then never reads again: its socket is
   * paused, so what the relay sends piles up in the kernel and then in the relay.
   */
  function stalledClient(port: number): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () =>
        socket.write(
          `GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\n` +
            `Connection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n` +
            `Sec-WebSocket-Version: 13\r\n\r\n`,
        ),
      );
      sockets.push(socket);
      socket.once('error', reject);
      // ws registers the page before it answers: with the 101, the relay counts this client.
      socket.once('data', (chunk) => {
        socket.pause();
        if (chunk.toString('latin1').startsWith('HTTP/1.1 101')) resolve(socket);
        else reject(new Error(`upgrade refused: ${chunk.toString('latin1').split('\r\n')[0]}`));
      });
    });
  }

  const stalledClients = (port: number, n: number) =>
    Promise.all(Array.from({ length: n }, () => stalledClient(port)));

  /** Once a stalled client reads, it finds its connection ended by the relay. */
  const cutOff = (socket: Socket) =>
    new Promise<void>((resolve) => {
      socket.on('data', () => undefined);
      socket.once('close', () => resolve());
      socket.resume();
    });

  /**
   * A real stream: an inspected machine whose snapshots carry ~16 KB of context each, and a
   * page that reads it. `round()` sends ~1 MiB and resolves once the page has all of it.
   */
  async function fatStream(server: InspectorServer) {
    const payload = Array.from({ length: 40 }, (_, k) => `${k}`.padEnd(390, '.'));
    const machine = createMachine({
      id: 'fat',
      context: { payload, ticks: 0 },
      on: { TICK: { actions: assign({ ticks: ({ context }) => context.ticks + 1 }) } },
    });
    const actor = createActor(machine, { inspect: server.inspect }).start();
    actors.push(actor);
    const page = await listen(server.port);
    const ticksSeen = () => {
      const last = page.records().findLast((r) => r.k === 'snap');
      return last?.k === 'snap' ? (last.context as { ticks: number }).ticks : 0;
    };
    let ticks = 0;
    const round = async () => {
      for (let k = 0; k < 64; k++) actor.send({ type: 'TICK' });
      ticks += 64;
      await page.until(`tick ${ticks}`, () => ticksSeen() === ticks);
    };
    /**
     * Rounds until `done()`. A stalled client is dropped once MAX_BUFFERED_BYTES behind, after
     * what its kernel buffers took: 40 MiB of stream is plenty, one never dropped fails here.
     */
    const roundsUntil = async (done: () => boolean, each: () => void = () => undefined) => {
      let rounds = 0;
      while (!done()) {
        expect(rounds++, JSON.stringify(server.pages())).toBeLessThan(40);
        await round();
        each();
      }
      return rounds;
    };
    /** The page got every record since it connected, in order, without a gap. */
    const gapless = () => {
      const seqs = page.records().map((r) => r.i);
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, k) => seqs[0]! + k));
    };
    return { page, round, roundsUntil, gapless };
  }

  test('300 stalled clients are terminated once MAX_BUFFERED_BYTES behind; the relay stays small and a reading page gets every record', async () => {
    const STALLED = 300;
    const server = await start();
    const stream = await fatStream(server);
    const rssBefore = process.memoryUsage().rss;
    const stalled = await stalledClients(server.port, STALLED);
    expect(server.pages()).toMatchObject({ open: STALLED + 1, dropped: 0 });

    let peakRss = 0;
    await stream.roundsUntil(
      () => server.pages().dropped === STALLED,
      () => {
        // The bound holds at every step: no socket has more than MAX_BUFFERED_BYTES waiting.
        const pages = server.pages();
        expect(pages.bufferedBytes).toBeLessThanOrEqual(pages.open * MAX_BUFFERED_BYTES);
        peakRss = Math.max(peakRss, process.memoryUsage().rss);
      },
    );
    const after = server.pages();
    expect(after).toMatchObject({ open: 1, catchingUp: 0, dropped: STALLED, bufferedBytes: 0 });
    expect(after.peakBufferedBytes).toBeLessThanOrEqual((STALLED + 1) * MAX_BUFFERED_BYTES);
    // What the process really held. Messages are Buffers shared by every socket, so the
    // stalled ones cost little more than the sockets themselves (~60 MiB for both ends of 300
    // here, while the sockets' queues added up to ~1.2 GB). Sent as strings, each socket held
    // a private copy of what was in flight: 500 stalled clients grew the relay by ~570 MiB.
    expect(peakRss - rssBefore).toBeLessThan(200 * 1024 * 1024);
    expect(stream.page.ws.readyState).toBe(WebSocket.OPEN);
    stream.gapless();
    await Promise.all(stalled.slice(0, 10).map(cutOff));
  });

  test('a page that stalls in its replay is paced, then terminated once the live stream leaves it MAX_BUFFERED_BYTES behind; a reading late page catches up', async () => {
    const server = await start();
    const stream = await fatStream(server);
    // A history (~6 MiB) larger than what a stalled socket's kernel buffers take.
    for (let k = 0; k < 6; k++) await stream.round();
    const stalled = await stalledClients(server.port, 20);
    // The replay waits for them to read: they hold a chunk or two each (~160 KB), not the
    // history, and live batches are not queued for them either.
    expect(server.pages()).toMatchObject({ open: 21, catchingUp: 20, dropped: 0 });
    expect(server.pages().bufferedBytes).toBeLessThan(20 * 512 * 1024);
    const late = await listen(server.port);
    await stream.roundsUntil(() => server.pages().dropped === 20);
    expect(server.pages()).toMatchObject({ open: 2, catchingUp: 0, dropped: 20 });
    // The late page got the whole history, then the live stream, in order.
    const last = stream.page.records().at(-1)!.i;
    await late.until(`record ${last}`, () => late.records().at(-1)?.i === last);
    const seqs = late.records().map((r) => r.i);
    expect(seqs).toEqual(stream.page.records().map((r) => r.i));
    stream.gapless();
    await Promise.all(stalled.map(cutOff));
  });
});

describe('sanitizing', () => {
  test('contexts and events become plain data: summaries for state, drainer and errors; no services, functions or buffers', async () => {
    const root = await makeTempRoot();
    const state = new FetchedChannelState([join(root, 'a'), join(root, 'b')], undefined, [
      { gate: 0, channel: 0 },
    ]);
    state.acquire();
    const drainer = new Drainer(
      state,
      new Map([
        [
          channelId({ gate: 0, channel: 0 }),
          { onBuffer: () => undefined, onFinished: () => undefined },
        ],
      ]),
    );
    const cause = new Error('disk full');
    addSuppressed(cause, new Error('later'));
    class Handle {}
    const out = sanitize({
      services: { registry: {} },
      parent: { id: 'x' },
      state,
      drainer,
      cause,
      payload: Buffer.alloc(32768),
      map: new Map([[1, 2]]),
      handle: new Handle(),
      fn: () => 1,
      nested: { deep: { deeper: { deepest: { bottom: { floor: 1 } } } } },
      list: Array.from({ length: 60 }, (_, k) => k),
    });
    expect(out).toEqual({
      state: { files: 2, refCount: 2, closed: false },
      drainer: { phase: 'ready' },
      cause: { name: 'Error', message: 'disk full', suppressed: 1 },
      payload: '<32768 bytes>',
      map: '[Map 1]',
      handle: '[Handle]',
      nested: { deep: { deeper: { deepest: { bottom: '[…]' } } } },
      list: [...Array.from({ length: 50 }, (_, k) => k), '… 10 more'],
    });
    await drainer.close();
    await state.close();
  });
});

describe('Stately interop', () => {
  test('stately: true forwards the same stream in Stately format and serves the bridge page', async () => {
    const root = await makeTempRoot();
    const server = await start({ stately: true });
    const bridge = await get(server.port, '/stately');
    expect(bridge.status).toBe(200);
    expect(bridge.body).toContain('https://stately.ai/inspect');
    expect(bridge.body).toContain("'/stately/ws'");
    const stately = await listen(server.port, '/stately/ws');
    await recoverOnce(root, server.inspect, 'st');
    type Ev = { type: string; _version: string; [k: string]: unknown };
    const rootDone = (messages: unknown[]) =>
      (messages as Ev[]).some(
        (m) =>
          m.type === '@xstate.snapshot' &&
          m.sessionId === 'task-st#root' &&
          (m.snapshot as { status: string }).status === 'done',
      );
    await stately.until('the root snapshot in Stately format', () => rootDone(stately.messages));
    const events = stately.messages as Ev[];
    expect(new Set(events.map((e) => e._version))).toEqual(new Set(['0.7.2']));
    const fetch = events.find((e) => e.type === '@xstate.actor' && e.name === 'fetch')!;
    expect(fetch).toMatchObject({
      sessionId: 'task-st/fetch',
      parentId: 'task-st#root',
      rootId: 'task-st#root',
    });
    expect(JSON.parse(fetch.definition as string)).toMatchObject({
      id: 'fetch',
      states: { spilling: expect.any(Object), handedOff: expect.any(Object) },
    });
    expect(events).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          type: '@xstate.event',
          sourceId: 'task-st/fetch',
          event: expect.objectContaining({ type: 'FETCH.HANDOFF' }),
        }),
      ]),
    );
    expect(JSON.stringify(events)).not.toMatch(/"services"|"closeable"|"Buffer"/);
    // A late Stately client gets the buffered stream too.
    const late = await listen(server.port, '/stately/ws');
    await late.until('the buffered stream', () => rootDone(late.messages));
  });
});

describe('Stately relay bounds (issue 23 point 7)', () => {
  test("the Stately relay's buffer is bounded in bytes: 300 × 1 MiB relayed keep at most STATELY_BUFFER_BYTES, and a late socket is told what it missed", async () => {
    const server = await start({ stately: true });
    const sender = await listen(server.port, '/stately/ws');
    const pad = 'x'.repeat(1024 * 1024 - 64);
    for (let k = 0; k < 300; k++) sender.ws.send(JSON.stringify({ type: 'big', k, pad }));
    await waitUntil('300 relayed', () => server.stately()!.relayed === 300);
    const stats = server.stately()!;
    expect(stats.bufferedBytes).toBeLessThanOrEqual(STATELY_BUFFER_BYTES);
    // ~1 MiB each: the byte bound, not the count, is what holds them to a handful.
    expect(stats.buffered).toBeGreaterThanOrEqual(STATELY_BUFFER_BYTES / (1024 * 1024) - 1);
    expect(stats.buffered).toBeLessThanOrEqual(STATELY_BUFFER_BYTES / (1024 * 1024));
    const late = await listen(server.port, '/stately/ws');
    type Big = { type: string; k?: number; missed?: number; keeps?: unknown };
    await late.until('the newest message', () => (late.messages as Big[]).some((m) => m.k === 299));
    const got = late.messages as Big[];
    expect(got[0]).toEqual({
      type: '@spillway.trimmed',
      missed: 300 - stats.buffered,
      keeps: { messages: STATELY_BUFFER_LIMIT, bytes: STATELY_BUFFER_BYTES },
    });
    expect(got.slice(1).map((m) => m.k)).toEqual(
      Array.from({ length: stats.buffered }, (_, i) => 300 - stats.buffered + i),
    );
    // Small messages are bounded by count as before.
    for (let k = 0; k < STATELY_BUFFER_LIMIT + 100; k++) {
      sender.ws.send(JSON.stringify({ type: 'small', k }));
    }
    await waitUntil(
      'all relayed',
      () => server.stately()!.relayed === 300 + STATELY_BUFFER_LIMIT + 100,
    );
    expect(server.stately()!.buffered).toBe(STATELY_BUFFER_LIMIT);
    expect(server.stately()!.bufferedBytes).toBeLessThan(64 * 1024);
    // The bridge page shows the notice instead of posting it into Stately's UI.
    const bridge = await get(server.port, '/stately');
    expect(bridge.body).toContain("event.type === '@spillway.trimmed'");
  });
});

async function waitUntil(what: string, done: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('the process exits', () => {
  test.each([
    ['plain', 'nosocket'],
    ['stately', 'nosocket'],
    ['plain', 'socket'],
    ['stately', 'socket'],
  ])(
    'after close() with inspection on (%s, page socket: %s): nothing keeps Node alive',
    async (mode, socket) => {
      const root = await makeTempRoot();
      const child = spawnTracked(process.execPath, [
        '--import',
        'tsx',
        join(import.meta.dirname, 'fixtures', 'close-child.ts'),
        root,
        mode,
        socket,
      ]);
      // A process kept alive by the inspector never exits: the test times out (below).
      const { code } = await child.exited;
      expect(child.stderr).toBe('');
      expect(code).toBe(0);
      const result = JSON.parse(child.stdout.trim()) as {
        closed: boolean;
        pageSocket: number | null;
      };
      expect(result.closed).toBe(true);
      // An open page socket is closed by close(), not left to keep the process alive.
      if (socket === 'socket') expect(result.pageSocket).not.toBe(WebSocket.OPEN);
      expect((await spillLeftovers(root)).filter((p) => !p.endsWith('.spwc'))).toEqual([]);
    },
    20_000,
  );
});

describe('spillway inspect', () => {
  test('prints the URL, serves the page, and exits 143 on SIGTERM (130 on SIGINT)', async () => {
    for (const [signal, exit] of [
      ['SIGTERM', 143],
      ['SIGINT', 130],
    ] as const) {
      const child = spawnCli(['inspect']);
      const url = await printed(child, /spillway inspector: (http:\/\/127\.0\.0\.1:(\d+)\/)/);
      expect((await get(Number(url[2]), '/')).body).toContain('<title>Spillway inspector</title>');
      child.proc.kill(signal);
      expect((await child.exited).code).toBe(exit);
    }
  });

  test('a port in use is one line and exit 2', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const child = spawnCli(['inspect', '--port', String(port)]);
      const { code } = await child.exited;
      expect(code).toBe(2);
      expect(child.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(new RegExp(`port ${port} on 127\\.0\\.0\\.1 is in use`)),
      ]);
    } finally {
      taken.close();
    }
  });
});
