/**
 * The inspector page watching `spillway recover --inspect` of a real Flink checkpoint, in a real
 * headless Chromium at 1280×720 and 1600×1000 (issue 32): it names the checkpoint, operator and
 * subtask, shows each channel file with its bytes inside the panel (not cut off below it), no
 * label of the about rows, the channel rows or the panel headers is cut, and the page logs no
 * console error. The recovery is a real child process held after its end by `--inspect-hold`.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CHROMIUM, hasChromium, launchChromium } from '../helpers/chromium.ts';
import { makeTempRoot, repoRoot, spawnCli, waitFor, type Child } from '../e2e/harness.ts';

if (!hasChromium) console.warn(`skipping the Flink inspector layout test: ${CHROMIUM} is missing`);

let browser: Browser | undefined;
let child: Child | undefined;
let url = '';

beforeAll(async () => {
  if (!hasChromium) return;
  const root = await makeTempRoot();
  const spill = join(root, 'spill');
  await mkdir(spill);
  child = spawnCli([
    'recover',
    join(repoRoot, 'examples', 'flink-checkpoint', 'chk-3'),
    '--operator',
    'slow-join',
    '--subtask',
    '0',
    '--out',
    join(root, 'out'),
    '--spill-root',
    spill,
    '--inspect=0',
    '--inspect-hold',
    '600',
  ]);
  const running = child;
  await waitFor('the hold', () => /still serving/.test(running.stderr) || undefined, {
    child: running,
  });
  url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(running.stderr)![1]!;
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (child !== undefined) {
    child.proc.kill('SIGINT');
    await child.exited;
  }
});

describe.skipIf(!hasChromium)('the page of a Flink recover --inspect', () => {
  // One test for both sizes: the tracked child is ended after each test.
  test("at 1280×720 and 1600×1000: checkpoint, operator, subtask and every channel's bytes in view, no label cut, no console error", async () => {
    for (const [width, height] of [
      [1280, 720],
      [1600, 1000],
    ] as const) {
      const page = await browser!.newPage({ viewport: { width, height } });
      const errors: string[] = [];
      page.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
      await page.goto(url);
      await page.waitForSelector('.chan[data-bytes="2571"]');
      // Every channel's row, not only the one waited for: rows arrive as the inspector's
      // events do, and under load the last one came after that channel's bytes (a CI run).
      await page.waitForFunction(
        () => document.querySelectorAll('.chan[data-channel]').length >= 3,
      );
      expect(await page.textContent('[data-about="operator"]')).toBe('slow-join');
      expect(await page.textContent('[data-about="subtask"]')).toBe('0');
      const found = await page.evaluate(() => {
        const cut = (el: Element) => el.scrollWidth > el.clientWidth + 1;
        const labels = Array.from(
          document.querySelectorAll(
            '#context .k, #context [data-about="operator"], .chan .cname, .chan .cbytes, .panel h2 .muted',
          ),
        );
        const panel = document.querySelector('#actors-panel')!.getBoundingClientRect();
        const rows = Array.from(document.querySelectorAll('.chan[data-channel]')).map((r) => {
          const box = r.getBoundingClientRect();
          return { name: r.getAttribute('data-channel'), inside: box.bottom <= panel.bottom };
        });
        return {
          cut: labels.filter(cut).map((el) => el.textContent),
          rows,
          wide: document.documentElement.scrollWidth > window.innerWidth,
        };
      });
      expect(found.cut).toEqual([]);
      expect(found.rows).toEqual([
        { name: 'gate-0-channel-0', inside: true },
        { name: 'gate-0-channel-1', inside: true },
        { name: 'gate-1-channel-0', inside: true },
      ]);
      expect(found.wide).toBe(false);
      expect(errors).toEqual([]);
      await page.close();
    }
  });
});
