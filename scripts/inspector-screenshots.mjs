// Screenshots of the live inspector watching a real `spillway recover --inspect` of a 1 GiB
// checkpoint, mid-drain, at 1600×1000 and 1280×720, into test-artifacts/:
//
//   npm run build && node scripts/inspector-screenshots.mjs [--mb 1024]
//
// The checkpoint is made with the repo's own generator in a temp dir (removed afterwards, also
// on failure). It is served to the recovery by a local HTTP store that holds the body after its
// first 64 MiB until both pages are open and live, so the pages see the run from its start.
// During the drain the recovery is run in short slices (SIGSTOP/SIGCONT, real signals) until a
// reading on the feed says ~30 % of the payload is delivered; then it is frozen (the pages keep
// what they were sent and draw it), both pages are photographed, and SIGCONT lets it finish: it
// must exit 0, its server closed.
// Needs Chromium at /usr/bin/chromium (or CHROMIUM=path) and playwright-core (a dev dependency).
import { spawn, execFileSync } from 'node:child_process';
import { createReadStream, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import WebSocket from 'ws';
import { CHROMIUM_FLAGS } from './chromium-flags.mjs';
import { sleep, until } from './wait.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin', 'spillway');
const artifacts = join(root, 'test-artifacts');
const mbArg = process.argv.indexOf('--mb');
const mb = mbArg > 0 ? Number(process.argv[mbArg + 1]) : 1024;
const HELD_AFTER = 64 * 1024 * 1024;
const SIZES = [
  [1600, 1000],
  [1280, 720],
];

const work = await mkdtemp(join(tmpdir(), 'spillway-shots-'));
let child;
let browser;
let store;
try {
  await mkdir(artifacts, { recursive: true });
  const file = join(work, 'cp.spwc');
  execFileSync(process.execPath, [bin, 'checkpoint', 'make', '--out', file, '--mb', String(mb)], {
    stdio: 'ignore',
  });
  const size = statSync(file).size;

  // The store: the whole body, held after its first 64 MiB until `release()`.
  let release;
  const released = new Promise((resolve) => (release = resolve));
  store = createServer((req, res) => {
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const start = m === null ? 0 : Number(m[1]);
    const last = m === null || m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    res.writeHead(m === null ? 200 : 206, {
      etag: '"shots"',
      'accept-ranges': 'bytes',
      'content-length': last + 1 - start,
      ...(m === null ? {} : { 'content-range': `bytes ${start}-${last}/${size}` }),
    });
    if (last + 1 - start <= HELD_AFTER)
      return void createReadStream(file, { start, end: last }).pipe(res);
    const head = createReadStream(file, { start, end: start + HELD_AFTER - 1 });
    head.pipe(res, { end: false });
    head.on(
      'end',
      () =>
        void released.then(() =>
          createReadStream(file, { start: start + HELD_AFTER, end: last }).pipe(res),
        ),
    );
  });
  await new Promise((resolve) => store.listen(0, '127.0.0.1', resolve));
  const checkpoint = `http://127.0.0.1:${store.address().port}/checkpoint-1gib.spwc`;

  await mkdir(join(work, 'spill'));
  child = spawn(
    process.execPath,
    [
      bin,
      'recover',
      checkpoint,
      '--out',
      join(work, 'out'),
      '--spill-root',
      join(work, 'spill'),
      '--inspect=0',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SPILLWAY_SPILL_ROOT: '' } },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.once('close', (code) => resolve(code)));
  const url = await until('the inspector URL', () => /live inspector at (\S+)/.exec(stderr)?.[1]);

  // Our own page socket: the readings tell when the drain is under way.
  const readings = [];
  const ws = new WebSocket(url.replace('http:', 'ws:') + 'ws');
  ws.on('message', (data) => {
    const msg = JSON.parse(String(data));
    if (msg.type === 'batch') for (const r of msg.records) if (r.k === 'owners') readings.push(r);
  });

  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: CHROMIUM_FLAGS,
  });
  const pages = [];
  for (const [width, height] of SIZES) {
    const page = await browser.newPage({ viewport: { width, height } });
    await page.goto(url);
    await page.waitForSelector('#conn[data-conn="live"]');
    pages.push({ page, width, height });
  }
  release();
  await until('the drain to start', () => readings.find((r) => r.stage === 'drain'));
  // A drain from the page cache takes about a second: run it in short slices (40 ms on,
  // 120 ms stopped) so that a reading lands well inside it, and freeze it there.
  const wanted = (r) => r.stage === 'drain' && r.delivered >= r.payload * 0.3;
  let mid;
  while ((mid = readings.find(wanted)) === undefined) {
    if (readings.some((r) => r.stage !== 'drain' && r.stage !== 'fetch' && r.stage !== 'gap')) {
      throw new Error('the drain ended before a reading inside it');
    }
    child.kill('SIGSTOP');
    await sleep(120);
    child.kill('SIGCONT');
    await sleep(40);
  }
  child.kill('SIGSTOP');
  // The pages draw what they were sent (a frame is at most 80 ms apart).
  await sleep(600);
  for (const { page, width, height } of pages) {
    const path = join(artifacts, `inspector-recover-${width}x${height}.png`);
    await page.screenshot({ path });
    console.log(
      `${path} (delivered ${((mid.delivered / mid.payload) * 100).toFixed(0)} % at the freeze)`,
    );
  }
  child.kill('SIGCONT');
  ws.close();
  const code = await exited;
  if (code !== 0) throw new Error(`recover exited ${code}: ${stderr}`);
} finally {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGCONT');
    child.kill('SIGTERM');
  }
  await browser?.close();
  await new Promise((resolve) => (store ? store.close(resolve) : resolve()));
  await rm(work, { recursive: true, force: true });
}
