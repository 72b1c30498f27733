// Screenshots of the live inspector watching `spillway recover --inspect` of a real Flink
// checkpoint (the Flink 2.3.0 one shipped in examples/flink-checkpoint), at 1280×720 and
// 1600×1000, into test-artifacts/:
//
//   npm run build && node scripts/inspector-flink-screenshots.mjs
//
// The checkpoint is served to the recovery over HTTP by a local store that holds back its
// channel-state files until both pages are open and show the task (a slowed source: the page
// is photographed mid-fetch), then lets them through; `--inspect-hold` keeps the server up
// after the end, and the pages are photographed again showing the checkpoint, operator,
// subtask and each channel file's bytes. SIGINT ends the hold: the run must exit 0.
// Needs Chromium at /usr/bin/chromium (or CHROMIUM=path) and playwright-core (a dev dependency).
import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { CHROMIUM_FLAGS } from './chromium-flags.mjs';
import { sleep, until } from './wait.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin', 'spillway');
const chk = join(root, 'examples', 'flink-checkpoint', 'chk-3');
const artifacts = join(root, 'test-artifacts');
const SIZES = [
  [1280, 720],
  [1600, 1000],
];

const work = await mkdtemp(join(tmpdir(), 'spillway-flink-shots-'));
let child;
let browser;
let store;
try {
  await mkdir(artifacts, { recursive: true });
  let release;
  const released = new Promise((resolve) => (release = resolve));
  // A plain object store for the chk-3 dir: whole files, or one range of them.
  store = createServer((req, res) => {
    const name = basename(decodeURIComponent(new URL(req.url, 'http://x').pathname));
    const file = join(chk, name);
    let size;
    try {
      size = statSync(file).size;
    } catch {
      res.writeHead(404).end();
      return;
    }
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const start = m === null ? 0 : Number(m[1]);
    const last = m === null || m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    const send = () => {
      res.writeHead(m === null ? 200 : 206, {
        etag: `"${name}"`,
        'accept-ranges': 'bytes',
        'content-length': Math.max(0, last + 1 - start),
        ...(m === null ? {} : { 'content-range': `bytes ${start}-${last}/${size}` }),
      });
      res.end(readFileSync(file).subarray(start, last + 1));
    };
    if (name === '_metadata') send();
    else void released.then(send);
  });
  await new Promise((resolve) => store.listen(0, '127.0.0.1', resolve));
  const checkpoint = `http://127.0.0.1:${store.address().port}/job/chk-3/`;

  await mkdir(join(work, 'spill'));
  child = spawn(
    process.execPath,
    [
      bin,
      'recover',
      checkpoint,
      '--operator',
      'slow-join',
      '--subtask',
      '0',
      '--out',
      join(work, 'out'),
      '--spill-root',
      join(work, 'spill'),
      '--inspect=0',
      '--inspect-hold',
      '120',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.once('close', (code) => resolve(code)));
  const url = await until('the inspector URL', () => /live inspector at (\S+)/.exec(stderr)?.[1]);

  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: CHROMIUM_FLAGS,
  });
  const pages = [];
  for (const [width, height] of SIZES) {
    const page = await browser.newPage({ viewport: { width, height } });
    const errors = [];
    page.on('console', (msg) => msg.type() === 'error' && errors.push(msg.text()));
    await page.goto(url);
    await page.waitForSelector('#conn[data-conn="live"]');
    await page.waitForSelector('[data-about="operator"]');
    pages.push({ page, width, height, errors });
  }
  await sleep(400);
  for (const { page, width, height } of pages) {
    const path = join(artifacts, `inspector-flink-fetching-${width}x${height}.png`);
    await page.screenshot({ path });
    console.log(path);
  }
  release();
  await until('the end of the recovery', () => /still serving/.test(stderr));
  for (const { page } of pages) await page.waitForSelector('.chan[data-bytes="2571"]');
  await sleep(400);
  for (const { page, width, height, errors } of pages) {
    const path = join(artifacts, `inspector-flink-done-${width}x${height}.png`);
    await page.screenshot({ path });
    console.log(path);
    if (errors.length > 0) throw new Error(`console errors at ${width}x${height}: ${errors}`);
  }
  child.kill('SIGINT');
  const code = await exited;
  if (code !== 0) throw new Error(`recover exited ${code}: ${stderr}`);
} finally {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await browser?.close();
  await new Promise((resolve) => (store ? store.close(resolve) : resolve()));
  await rm(work, { recursive: true, force: true });
}
