/**
 * `spillway flink report` writes one self-contained page that renders offline: in a real headless
 * Chromium at 1280×720 and 1600×1000, with every network request blocked, the report of a real
 * Flink checkpoint loads without a request, without a console error, with no label cut (every
 * text element's content fits its box) and nothing wider than the viewport; it shows the totals,
 * each operator's subtasks as bars, the heat map and the top channels with Flink's byte counts,
 * and (made with --type) the record and watermark counts.
 * Screenshots go to test-artifacts/ (looked at by a person; not compared).
 */
import { mkdirSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, hasChromium, launchChromium } from '../helpers/chromium.ts';
import { listFlinkFixtures, readExpectedLs, withFlinkTotals } from '../helpers/flink-expected.ts';
import { repoRoot } from '../helpers/processes.ts';
import { runCli } from '../e2e/harness.ts';
import { formatBytes } from '../../src/services/human-bytes.ts';
import { listFlinkCheckpoint } from '../../src/index.ts';

if (!hasChromium) console.warn(`skipping the flink report browser test: ${CHROMIUM} is missing`);

const fixture = listFlinkFixtures().find((f) => f.name === '2.3.0-file');
/** The 2.3.0 fixtures' records (interop/flink Writer). */
const TYPE = 'Tuple<Long, String>';
let browser: Browser | undefined;
let html: string;
let work: string;

beforeAll(async () => {
  if (fixture === undefined) return;
  // One page for every test of the file (made once, removed in afterAll).
  work = await mkdtemp(join(tmpdir(), 'spillway-test-report-'));
  const out = join(work, 'report.html');
  // With --type: the record and watermark counts are on the page too (and must render).
  const r = await runCli(['flink', 'report', fixture.checkpoint, '--out', out, '--type', TYPE]);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toMatch(/^wrote .*report\.html: checkpoint 3, /);
  html = join(work, 'report.html');
  if (hasChromium) browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

describe('flink report: the page itself', () => {
  it('is one file, and names nothing to fetch (no src=, href=, url(, @import)', async () => {
    if (fixture === undefined) return;
    expect(await readdir(work)).toEqual(['report.html']);
    const text = await readFile(html, 'utf8');
    expect(text).toMatch(/^<!doctype html>/);
    expect(text).not.toMatch(/\bsrc=|\bhref=|url\(|@import|<script/i);
    const flink = withFlinkTotals(readExpectedLs(fixture.expected));
    const total = flink.inputBytes + flink.outputBytes;
    expect(text).toContain(`title="${total.toLocaleString('en-US')} bytes">${formatBytes(total)}`);
    const counted = await listFlinkCheckpoint(fixture.checkpoint, { type: TYPE });
    expect(counted.records).toBeGreaterThan(0);
    expect(text).toContain(
      `<div class="label">records</div><b>${counted.records!.toLocaleString('en-US')}</b>`,
    );
  });
});

describe.skipIf(!hasChromium)('flink report in headless Chromium, network blocked', () => {
  for (const [width, height] of [
    [1280, 720],
    [1600, 1000],
  ] as const) {
    it(`${width}×${height}: renders with no request, no console error, no label cut`, async () => {
      if (fixture === undefined) return;
      const context = await browser!.newContext({ viewport: { width, height } });
      const requests: string[] = [];
      await context.route('**/*', (route) => {
        const url = route.request().url();
        if (url.startsWith('file:')) return route.continue();
        requests.push(url);
        return route.abort();
      });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(pathToFileURL(html).href);
      const facts = await page.evaluate(() => {
        const cut: string[] = [];
        for (const el of Array.from(
          document.querySelectorAll<HTMLElement>(
            'h1,h2,h3,th,td,.card,.num,.meta,.sub,.bars > div,.legend,p',
          ),
        )) {
          if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === 'visible') {
            // A box whose text runs past its edge: the label is cut or overlaps its neighbour.
            cut.push(`${el.tagName} ${el.textContent?.slice(0, 40)}`);
          }
        }
        return {
          cut,
          pageWidth: document.documentElement.scrollWidth,
          operators: document.querySelectorAll('section.op').length,
          bars: document.querySelectorAll('.bar').length,
          heatCells: document.querySelectorAll('table.heat td').length,
          top: document.querySelectorAll('main > .scroll table tr').length - 1,
          h1: document.querySelector('h1')?.textContent,
          counts: document.querySelectorAll('p.counts').length,
        };
      });
      expect(requests).toEqual([]);
      expect(errors).toEqual([]);
      expect(facts.cut).toEqual([]);
      expect(facts.pageWidth).toBeLessThanOrEqual(width);
      expect(facts.h1).toBe('Flink checkpoint 3: what is in flight');
      // 2.3.0-file: three operators hold channel state (slow-join 3 subtasks, each source tail 2).
      expect(facts.operators).toBe(3);
      expect(facts.counts).toBe(3);
      expect(facts.bars).toBe(2 * (3 + 2 + 2));
      // One cell per subtask and per channel any subtask of the operator has.
      const listing = await listFlinkCheckpoint(fixture.checkpoint, { channels: true });
      const cells = listing.operators.reduce((sum, op) => {
        const kinds = new Set(
          op.subtasks.flatMap((st) =>
            (st.channels ?? []).map((c) =>
              JSON.stringify(c, ['side', 'gate', 'channel', 'partition', 'subpartition']),
            ),
          ),
        );
        return sum + op.parallelism * kinds.size;
      }, 0);
      expect(facts.heatCells).toBe(cells);
      expect(facts.top).toBe(10);
      const dir = join(repoRoot, 'test-artifacts');
      mkdirSync(dir, { recursive: true });
      await page.screenshot({
        path: join(dir, `flink-report-${width}x${height}.png`),
        fullPage: false,
      });
      await context.close();
    });
  }
});
