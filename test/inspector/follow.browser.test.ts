/**
 * Follow mode and the trim notice in a real headless Chromium. Follow mode stays on a live task
 * until it ends and then holds its ending on screen even when another task starts meanwhile
 * (it used to jump to that one at once, so a hand-off's ending was never seen); a pinned task
 * stays whatever starts or ends. A page that keeps only the newest 400 of 3,000 tasks says so
 * on the page, not in a tooltip. Tasks are real XState actors inspected through the server.
 */
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, hasChromium, launchChromium } from '../helpers/chromium.ts';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createActor, createMachine, type AnyActorRef } from 'xstate';
import { startInspectorServer, type InspectorServer } from '../../inspector/server.ts';

if (!hasChromium) console.warn(`skipping the inspector follow test: ${CHROMIUM} is missing`);

/** The page's hold on an ended task, shortened for the test through its `?hold=` parameter. */
const HOLD_MS = 1500;

const job = createMachine({
  id: 'job',
  initial: 'working',
  states: { working: { on: { DONE: 'done' } }, done: { type: 'final' } },
});

let browser: Browser | undefined;
const servers: InspectorServer[] = [];
const actors: AnyActorRef[] = [];

beforeAll(async () => {
  if (!hasChromium) return;
  browser = await launchChromium();
});
afterEach(async () => {
  for (const a of actors.splice(0)) a.stop();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  await browser?.close();
});

async function open(query = '') {
  const server = await startInspectorServer();
  servers.push(server);
  const page = await browser!.newPage({ viewport: { width: 1280, height: 720 } });
  await page.goto(`${server.url}${query}`);
  await page.waitForSelector('#conn[data-conn="live"]');
  const start = (id: string) => {
    const actor = createActor(job, { id, inspect: server.inspect }).start();
    actors.push(actor);
    return actor;
  };
  return { server, page, start };
}

const shown = (page: Page) => page.locator('#chart-task').textContent();
const mode = (page: Page) => page.locator('#follow').getAttribute('data-mode');
const listed = (page: Page, key: string) => page.waitForSelector(`li[data-task="${key}"]`);
/** Waits until the chart shows task `key`. */
const showing = (page: Page, key: string) =>
  page.waitForFunction((k) => document.getElementById('chart-task')?.textContent === k, key);

describe.skipIf(!hasChromium)('follow mode and the trim notice in Chromium', () => {
  test('follow mode stays on a live task until it ends, then holds its ending although a newer task started, and only then goes to the newest live task', async () => {
    const { page, start } = await open(`?hold=${HOLD_MS}`);
    try {
      const a = start('task-A');
      await showing(page, 'task-A');
      start('task-B');
      await listed(page, 'task-B');
      // B started: A is still live, so A stays.
      expect(await shown(page)).toBe('task-A');
      expect(await mode(page)).toBe('following');

      a.send({ type: 'DONE' });
      await page.waitForSelector('li[data-task="task-A"][data-status="done"]');
      start('task-C');
      await listed(page, 'task-C');
      // C started after A ended: A's ending is still on screen, and the page says for how long.
      expect(await shown(page)).toBe('task-A');
      expect(await mode(page)).toBe('holding');
      expect(await page.locator('#follow').textContent()).toMatch(
        /^ended · next live task in \d s$/,
      );
      // Once the hold is over: the newest live task.
      await showing(page, 'task-C');
      expect(await mode(page)).toBe('following');
    } finally {
      await page.close();
    }
  });

  test('a pinned task stays on screen when it ends and others start, until it is unpinned', async () => {
    const { page, start } = await open(`?hold=${HOLD_MS}`);
    try {
      const a = start('task-A');
      await showing(page, 'task-A');
      await page.click('#pin');
      expect(await mode(page)).toBe('pinned');
      expect(await page.locator('#pin').getAttribute('data-pinned')).toBe('true');
      a.send({ type: 'DONE' });
      start('task-B');
      await listed(page, 'task-B');
      await page.waitForSelector('li[data-task="task-A"][data-status="done"]');
      // Longer than follow mode would hold it: a pin has no hold.
      await page.waitForTimeout(HOLD_MS * 2);
      expect(await shown(page)).toBe('task-A');
      expect(await mode(page)).toBe('pinned');
      await page.click('#pin');
      await showing(page, 'task-B');
    } finally {
      await page.close();
    }
  });

  test('of 3,000 tasks the page keeps the newest 400 and says so on the page, visible without hovering', async () => {
    const { server, page, start } = await open();
    try {
      for (let n = 1; n <= 3000; n++) {
        const actor = start(`task-${n}`);
        actor.send({ type: 'DONE' });
      }
      await page.waitForFunction(
        () => document.getElementById('stat-tasks')?.textContent === '400',
      );
      const trim = page.locator('#trim');
      await expect.poll(() => trim.textContent()).toContain('400 of 3,000 tasks kept');
      expect(await trim.isVisible()).toBe(true);
      expect(await trim.textContent()).toContain('the page keeps the newest 400');
      expect(await trim.textContent()).toContain('the list shows the newest 150');
      const box = (await trim.boundingBox())!;
      expect(box.height).toBeGreaterThan(10);
      expect(box.y + box.height).toBeLessThanOrEqual(720);
      expect(server.pages().open).toBe(1);
    } finally {
      await page.close();
    }
  });
});
