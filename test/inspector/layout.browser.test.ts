/**
 * The inspector page's layout in a real headless Chromium, at 1280×720, 1400×900 and 1600×1000,
 * while a real recovery is held mid-drain by its own consumer (the caller's seam): no two labels
 * of the statechart overlap, the stage strips below it are in view without scrolling, the spill
 * plot's labels neither overlap nor are cut off, nothing runs out of the viewport horizontally,
 * and the actors panel shows per owner its task dir, each spill file with its bytes, and the
 * bytes delivered so far (live, before the drain's end).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, hasChromium, launchChromium } from '../helpers/chromium.ts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startInspectorServer, type InspectorServer } from '../../inspector/server.ts';
import { startRecovery, type StartedRecovery } from '../../src/recover.ts';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { spillLeftovers, waitFor } from '../e2e/harness.ts';

if (!hasChromium) console.warn(`skipping the inspector layout test: ${CHROMIUM} is missing`);

let browser: Browser | undefined;
let server: InspectorServer | undefined;
let recovery: StartedRecovery | undefined;
let releaseDrain: () => void = () => undefined;
let work: string;

beforeAll(async () => {
  if (!hasChromium) return;
  work = await mkdtemp(join(tmpdir(), 'spillway-test-layout-'));
  browser = await launchChromium();
  server = await startInspectorServer();
  const made = await makeCheckpoint({ out: join(work, 'cp.spwc'), mb: 2, seed: 21 });
  const held = new Promise<void>((resolve) => (releaseDrain = resolve));
  let buffers = 0;
  recovery = startRecovery({
    checkpoint: made.path,
    spillRoot: work,
    inspect: server.inspect,
    limits: { maxSpillFileBytes: 256 * 1024, bufferBytes: 32 * 1024 },
    // The drain is held after 16 buffers until the pages have been measured.
    channels: () => ({
      onBuffer: () => (++buffers > 16 ? held : undefined),
      onFinished: () => undefined,
    }),
  });
  server.watch(recovery);
  // The plot's samples, as `recover --inspect` publishes them: up to ~1.5 GiB on disk, so the
  // axis has labels of different widths (`2 GiB`, `1.50 GiB`, `512 MiB`).
  const t = Date.now();
  for (let k = 0; k <= 8; k++) {
    server.publishMetrics({
      files: k,
      bytes: k * 190 * 1024 * 1024,
      liveTasks: 1,
      at: t - 8000 + k * 1000,
    });
  }
});

afterAll(async () => {
  releaseDrain();
  await recovery?.done.catch(() => undefined);
  await browser?.close();
  await server?.close();
  if (work !== undefined) {
    try {
      expect((await spillLeftovers(work)).filter((p) => /task-|spill-segment/.test(p))).toEqual([]);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
});

interface Box {
  what: string;
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** What the page looks like, measured in the page: every label's box and the overflows. */
async function measure(page: Page) {
  return page.evaluate(() => {
    const describe = (el: Element) =>
      `${el.getAttribute('class') || el.tagName} "${(el.textContent ?? '').trim().slice(0, 40)}"`;
    const chart = document.getElementById('task-chart')!;
    const labels = [
      ...Array.from(
        chart.querySelectorAll(
          '.st-name, .st-type, .tchip, .inv, .arrow .al, .arrow .aa, .strip-head b',
        ),
      ),
    ];
    const boxes: Box[] = [];
    for (const el of labels) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      boxes.push({
        what: describe(el),
        left: r.left,
        top: r.top,
        right: r.right,
        bottom: r.bottom,
      });
    }
    const overlaps: string[] = [];
    for (let a = 0; a < boxes.length; a++) {
      for (let b = a + 1; b < boxes.length; b++) {
        const A = boxes[a]!;
        const B = boxes[b]!;
        const w = Math.min(A.right, B.right) - Math.max(A.left, B.left);
        const h = Math.min(A.bottom, B.bottom) - Math.max(A.top, B.top);
        // One label inside another (a chip's bold event name) is not an overlap.
        const nested = labels[a]!.contains(labels[b]!) || labels[b]!.contains(labels[a]!);
        if (w > 0.5 && h > 0.5 && !nested) overlaps.push(`${A.what} × ${B.what}`);
      }
    }
    // A label that runs out of its own state box (a chip wider than the box draws over the
    // box beside it).
    const outOfBox: string[] = [];
    for (const el of Array.from(chart.querySelectorAll('.tchip, .inv, .st-name'))) {
      const box = el.closest('.st');
      if (box === null) continue;
      const r = el.getBoundingClientRect();
      const b = box.getBoundingClientRect();
      if (r.width > 0 && (r.left < b.left - 0.5 || r.right > b.right + 0.5)) {
        outOfBox.push(describe(el));
      }
    }
    // The spill plot's texts: inside the plot, none over another.
    const plot = document.getElementById('plot')!.getBoundingClientRect();
    const texts = Array.from(document.querySelectorAll('#plot text')).map((el) => ({
      el,
      r: el.getBoundingClientRect(),
    }));
    const plotOut = texts
      .filter(({ r }) => r.left < plot.left - 0.5 || r.right > plot.right + 0.5)
      .map(({ el }) => describe(el));
    const plotOverlaps: string[] = [];
    for (let a = 0; a < texts.length; a++) {
      for (let b = a + 1; b < texts.length; b++) {
        const A = texts[a]!.r;
        const B = texts[b]!.r;
        const w = Math.min(A.right, B.right) - Math.max(A.left, B.left);
        const h = Math.min(A.bottom, B.bottom) - Math.max(A.top, B.top);
        if (w > 0.5 && h > 0.5)
          plotOverlaps.push(`${describe(texts[a]!.el)} × ${describe(texts[b]!.el)}`);
      }
    }
    const panelsOut = Array.from(document.querySelectorAll('header, .panel'))
      .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 0.5)
      .map(describe);
    return {
      labels: boxes.length,
      overlaps,
      outOfBox,
      plotTexts: texts.length,
      plotOut,
      plotOverlaps,
      panelsOut,
      pageScrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
      chartHidden: chart.scrollHeight - chart.clientHeight,
      strips: chart.querySelectorAll('.strip').length,
      owners: Array.from(document.querySelectorAll('#owners .owner')).map((e) =>
        (e.textContent ?? '').trim(),
      ),
      dir: document.querySelector('#owners .odir .path')?.textContent ?? '',
      files: Array.from(document.querySelectorAll('#owners .file .fname')).map(
        (e) => e.textContent,
      ),
      delivered: Number(document.querySelector('[data-delivered]')?.getAttribute('data-delivered')),
    };
  });
}

describe.skipIf(!hasChromium)('the inspector page layout in Chromium', () => {
  test.each([
    [1280, 720],
    [1400, 900],
    [1600, 1000],
  ])(
    "at %i×%i the statechart labels do not overlap, its strips are in view, the spill plot's labels fit, nothing overflows horizontally, and per owner the task dir, files and bytes delivered so far show mid-drain",
    async (width, height) => {
      const page = await browser!.newPage({ viewport: { width, height } });
      try {
        await page.goto(server!.url);
        await page.waitForSelector('#task-chart .st.active.leaf[data-state="draining"]');
        await page.waitForSelector('#owners .file');
        await page.waitForFunction(
          () =>
            Number(document.querySelector('[data-delivered]')?.getAttribute('data-delivered')) > 0,
        );
        const m = await measure(page);
        expect(m.labels).toBeGreaterThan(30);
        expect(m.overlaps).toEqual([]);
        expect(m.outOfBox).toEqual([]);
        expect(m.plotTexts).toBeGreaterThanOrEqual(3);
        expect(m.plotOut).toEqual([]);
        expect(m.plotOverlaps).toEqual([]);
        expect(m.panelsOut).toEqual([]);
        expect(m.pageScrollWidth).toBeLessThanOrEqual(m.innerWidth);
        expect(m.strips).toBe(3);
        expect(m.chartHidden).toBeLessThanOrEqual(1);
        // Per owner: the drain holds the fetched state and the drainer, in the task dir.
        expect(m.owners.some((o) => /^drain\s*fetchedState · \d+ files · /.test(o))).toBe(true);
        expect(m.owners.some((o) => /drainer · .* to deliver/.test(o))).toBe(true);
        expect(m.dir).toMatch(/task-[^/]+$/);
        expect(m.files[0]).toBe('spill-segment-0.bin');
        expect(m.files.length).toBeGreaterThan(1);
        // Live: some bytes delivered, the drain not yet over (it is held).
        const { bytesDelivered } = recovery!.progress();
        expect(m.delivered).toBeGreaterThan(0);
        expect(m.delivered).toBeLessThanOrEqual(bytesDelivered);
        expect(recovery!.progress().stage).toBe('drain');
      } finally {
        await page.close();
      }
    },
  );

  test('the recovery it watched still finishes once released', async () => {
    releaseDrain();
    const report = await recovery!.done;
    expect(report.bytesDelivered).toBeGreaterThan(0);
    await waitFor('the last reading', () =>
      recovery!.progress().stage === 'finished' ? true : undefined,
    );
  });
});
