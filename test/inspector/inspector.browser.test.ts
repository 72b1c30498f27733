/**
 * The live inspector in a real headless Chromium (Debian's /usr/bin/chromium through
 * playwright-core), driven by real recoveries: `spillway demo --inspect=0` once the demo
 * command exists, until then `spillway inspect --demo`. It checks what a person watching would
 * see: the task's states fetching → gap → draining lit in turn (live, and again by stepping
 * through the history), the ownership lane handing the fetched state from gap to drain and the
 * registry closing what a cancelled or failed task still owned, no request leaving 127.0.0.1,
 * and it writes screenshots to test-artifacts/.
 */
import { existsSync } from 'node:fs';
import type { DefRecord, InspectorRecord } from '../../inspector/protocol.ts';
import { startInspectorServer } from '../../inspector/server.ts';
import { startRecovery } from '../../src/recover.ts';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, hasChromium, launchChromium } from '../helpers/chromium.ts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  makeTempRoot,
  repoRoot,
  spawnCli,
  spillLeftovers,
  waitFor,
  type Child,
} from '../e2e/harness.ts';

if (!hasChromium) {
  console.warn(
    `skipping the inspector browser test: ${CHROMIUM} is missing (apt-get install -y chromium)`,
  );
}
const artifacts = join(repoRoot, 'test-artifacts');
/** The demo engineer's command, once it exists; our own paced loop until then. */
const withDemo = existsSync(join(repoRoot, 'src', 'cli', 'demo.ts'));
const driverArgs = withDemo
  ? [
      'demo',
      '--inspect=0',
      '--tasks',
      '2',
      '--loops',
      '24',
      '--state-mb',
      '4',
      // A clean run and a checkpoint end `finished`; the cancels leave the registry work to do.
      '--faults',
      'none,checkpoint,cancel-drain,cancel-gap',
      '--seed',
      '7',
    ]
  : ['inspect', '--demo', '--tasks', '4', '--concurrency', '2'];
/** What the driver prints once its run is over (the page keeps being served). */
const RUN_ENDED = withDemo ? /inspector still serving/ : /demo: \d+ tasks/;
/** The demo exits with its run's code after Ctrl-C once the run is over; inspect with 130. */
const exitAfterCtrlC = withDemo ? 0 : 130;

let browser: Browser | undefined;
beforeAll(async () => {
  if (!hasChromium) return;
  await mkdir(artifacts, { recursive: true });
  browser = await launchChromium(['--disable-quic']);
});
afterAll(async () => {
  await browser?.close();
});

/** Records every task state the statechart lights, as `task:state`, from the first paint on. */
const RECORD_STATES = () => {
  const seen: string[] = [];
  (window as unknown as { __seen: string[] }).__seen = seen;
  const look = () => {
    const el = document.querySelector<HTMLElement>(
      '#task-chart .st.active.leaf[data-machine="task"]',
    );
    const task = document.getElementById('chart-task')?.textContent ?? '';
    if (el === null || task === '') return;
    const entry = `${task}:${el.dataset.state}`;
    if (seen[seen.length - 1] !== entry) seen.push(entry);
  };
  new MutationObserver(look).observe(document, { subtree: true, childList: true });
};

/** The states (deduplicated, in order) one task went through in a `task:state` list. */
const statesOf = (seen: string[], task: string) =>
  seen
    .filter((e) => e.startsWith(`${task}:`))
    .map((e) => e.slice(task.length + 1))
    .filter((s, k, all) => s !== all[k - 1]);

const inOrder = (states: string[], wanted: string[]) => {
  let at = 0;
  for (const s of states) if (s === wanted[at]) at++;
  return at === wanted.length;
};

async function stats(page: Page) {
  return page.evaluate(() => ({
    tasks: Number(document.getElementById('stat-tasks')!.textContent),
    live: Number(document.getElementById('stat-live')!.textContent),
    events: document.getElementById('stat-events')!.textContent,
  }));
}

describe.skipIf(!hasChromium)('the live inspector in Chromium', () => {
  test('shows fetching → gap → draining live and in the history, the ownership hand-offs and the registry closing leftovers, offline', async () => {
    const root = await makeTempRoot();
    const page = await browser!.newPage({ viewport: { width: 1400, height: 900 } });
    const external: string[] = [];
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
    await page.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.hostname === '127.0.0.1' || url.protocol === 'data:') return route.continue();
      external.push(url.href);
      return route.abort();
    });
    await page.addInitScript(RECORD_STATES);

    // The browser is up before the driver starts, so the page sees the first task from its start.
    const driver: Child = spawnCli(driverArgs, { SPILLWAY_SPILL_ROOT: root });
    const url = await waitFor(
      'the inspector URL',
      () => /http:\/\/127\.0\.0\.1:\d+\//.exec(driver.stdout + driver.stderr)?.[0],
      { child: driver },
    );
    // hold=0: follow mode moves on as soon as its task ended, so the page lights as many states
    // of this short run as it can (the hold itself: follow.browser.test.ts).
    await page.goto(`${url}?hold=0`);
    await page.waitForSelector('#conn[data-conn="live"]');

    // The run has ended when the driver says so; the page is up to date once it counts every
    // event the relay recorded (events are never trimmed from a run this small).
    await waitFor('the run to end', () => (RUN_ENDED.test(driver.stderr) ? true : undefined), {
      child: driver,
      timeoutMs: 45_000,
    });
    const history = (await (await fetch(`${url}history.json`)).json()) as {
      defs: DefRecord[];
      records: InspectorRecord[];
    };
    const recorded = history.records.filter((r) => r.k === 'event').length;
    await page.waitForFunction(
      (n) => document.getElementById('stat-events')!.textContent === n,
      recorded.toLocaleString('en-US'),
    );
    const afterRun = await stats(page);
    expect(afterRun.live).toBe(0);
    expect(afterRun.tasks).toBeGreaterThanOrEqual(3);

    // Live: the lit state changed while the page watched. Our paced loop lets a person (and
    // this test) follow one task through fetching → gap → draining; the demo pool may run a
    // task faster than a frame, so there the history below is the proof of the order.
    const seen = await page.evaluate(() => (window as unknown as { __seen: string[] }).__seen);
    expect(new Set(seen).size, `states seen live: ${seen.join(', ')}`).toBeGreaterThanOrEqual(3);
    if (!withDemo) {
      const tasks = [...new Set(seen.map((e) => e.slice(0, e.lastIndexOf(':'))))];
      const watched = tasks.filter((t) =>
        inOrder(statesOf(seen, t), ['fetching', 'gap', 'draining']),
      );
      expect(watched, `states seen live: ${seen.join(', ')}`).not.toEqual([]);
    }
    await page.screenshot({ path: join(artifacts, 'inspector-live.png') });

    // Transitions name their actions on the chart itself, as the task machine defines them
    // (named actions by name, inline ones by XState's name for them), not only in a tooltip.
    const alive = history.defs
      .find((d) => d.def.key === 'task')!
      .def.root.states.find((s) => s.key === 'alive')!;
    const aliveChips = (selector: string) =>
      page.$$eval(
        `#task-chart .st[data-machine="task"][data-state="alive"] > .st-notes ${selector}`,
        (els) => els.map((e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim()),
      );
    const shown = (action: string) => action.replace(/^xstate\./, '');
    const handledHere = await aliveChips('.tchip.on .on-ev');
    const selfTransitions = alive.transitions.filter((t) => t.targets.length === 0);
    expect(selfTransitions.map((t) => t.event)).toContain('FETCH.HANDOFF');
    for (const t of selfTransitions) {
      const item = handledHere.find((h) => h.split(' ')[0] === t.event);
      expect(item, `${t.event} among ${handledHere.join(' | ')}`).toBeDefined();
      for (const a of t.actions) expect(item, t.event).toContain(shown(a));
    }
    const chips = await aliveChips('.tchip:not(.on)');
    for (const t of alive.transitions.filter((u) => u.targets.length > 0)) {
      const chip = chips.find((c) => c.startsWith(`${t.event} →`));
      expect(chip, `${t.event} among ${chips.join(' | ')}`).toBeDefined();
      if (t.actions.length) expect(chip).toContain(`/ ${t.actions.map(shown).join(', ')}`);
    }

    // History: pick a finished task, pause, and step through it from the start.
    const finished = await page.getAttribute('#task-list li[data-leaf="finished"]', 'data-task');
    expect(finished).not.toBeNull();
    await page.click(`#task-list li[data-task="${finished}"]`);
    await page.click('#pause');
    await page.waitForSelector('#scrubber:not([hidden])');
    await page.evaluate(() => {
      const slider = document.getElementById('cursor') as HTMLInputElement;
      slider.value = '0';
      slider.dispatchEvent(new Event('input'));
    });
    const stepped: string[] = [];
    let handoffShot = false;
    for (let k = 0; k < 400; k++) {
      await page.keyboard.press('ArrowRight');
      const now = await page.evaluate(() => ({
        task: document.getElementById('chart-task')!.textContent,
        state:
          document.querySelector<HTMLElement>('#task-chart .st.active.leaf[data-machine="task"]')
            ?.dataset.state ?? '',
        cursor: (document.getElementById('cursor') as HTMLInputElement).value,
        max: (document.getElementById('cursor') as HTMLInputElement).max,
        drainerOwned: document.querySelector('#lane rect[data-resource="drainer"]') !== null,
      }));
      if (now.task === finished && now.state !== stepped[stepped.length - 1])
        stepped.push(now.state);
      if (!handoffShot && now.task === finished && now.state === 'gap' && now.drainerOwned) {
        // The moment the gap owns both the fetched state and the drainer it built.
        await page.screenshot({ path: join(artifacts, 'inspector-handoff.png') });
        handoffShot = true;
      }
      if (stepped.includes('finished')) break;
    }
    expect(inOrder(stepped, ['fetching', 'gap', 'draining', 'finished']), stepped.join(' → ')).toBe(
      true,
    );
    expect(handoffShot).toBe(true);
    await page.click('#live');
    await page.waitForSelector('#scrubber', { state: 'hidden' });

    // Ownership lane of the finished task: fetch → gap → drain, each hand-off at one step.
    const lane = await page.$$eval('#lane rect[data-resource]', (rects) =>
      rects.map((r) => ({
        resource: r.getAttribute('data-resource'),
        owner: r.getAttribute('data-owner'),
        from: Number(r.getAttribute('data-from')),
        to: Number(r.getAttribute('data-to')),
      })),
    );
    const seg = (resource: string, owner: string) =>
      lane.find((s) => s.resource === resource && s.owner === owner);
    expect(seg('taskDir', 'fetch'), JSON.stringify(lane)).toBeDefined();
    const stateGap = seg('fetchedState', 'gap');
    const stateDrain = seg('fetchedState', 'drain');
    expect(stateGap && stateDrain, JSON.stringify(lane)).toBeTruthy();
    expect(stateGap!.to).toBe(stateDrain!.from);
    expect(seg('taskDir', 'fetch')!.to).toBe(stateGap!.from);
    expect(seg('drainer', 'gap')!.to).toBe(seg('drainer', 'drain')!.from);
    await page.screenshot({ path: join(artifacts, 'inspector-finished.png') });

    // A cancelled or failed task: the registry closed what its stages still owned.
    const ended = await page.$$eval('#task-list li', (lis) =>
      lis
        .filter((li) => ['cancelled', 'failed'].includes(li.getAttribute('data-leaf') ?? ''))
        .map((li) => li.getAttribute('data-task')!),
    );
    expect(ended).not.toEqual([]);
    let closedShown: string[] = [];
    for (const task of ended) {
      await page.click(`#task-list li[data-task="${task}"]`);
      await page.waitForFunction(
        (t) => document.getElementById('chart-task')!.textContent === t,
        task,
      );
      closedShown = await page.$$eval('#lane [data-closed-by-registry]', (els) =>
        els.map((e) => e.getAttribute('data-closed-by-registry')!),
      );
      if (closedShown.length > 0) {
        const context = await page.textContent('#context');
        for (const r of closedShown) expect(context).toContain(r);
        break;
      }
    }
    expect(closedShown, `no closed-by-registry lane among ${ended.join(', ')}`).not.toEqual([]);
    await page.screenshot({ path: join(artifacts, 'inspector.png') });

    expect(external).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();

    // The page kept being served after the run; Ctrl-C ends it, cleaned up.
    driver.proc.kill('SIGINT');
    expect((await driver.exited).code).toBe(exitAfterCtrlC);
    expect((await spillLeftovers(root)).filter((p) => /task-|spill-segment/.test(p))).toEqual([]);
  });

  test('spillway inspect --demo paces its tasks so a person can follow one live through fetching → gap → draining', async () => {
    const root = await makeTempRoot();
    const page = await browser!.newPage({ viewport: { width: 1400, height: 900 } });
    await page.addInitScript(RECORD_STATES);
    const driver = spawnCli(
      ['inspect', '--demo', '--tasks', '2', '--concurrency', '1', '--wait-for-page'],
      {
        SPILLWAY_SPILL_ROOT: root,
      },
    );
    try {
      const url = await waitFor(
        'the inspector URL',
        () => /http:\/\/127\.0\.0\.1:\d+\//.exec(driver.stdout)?.[0],
        { child: driver },
      );
      // hold=0: the next task is followed from its first state (see the test above).
      await page.goto(`${url}?hold=0`);
      await waitFor(
        'the demo to end',
        () => (/demo: 2 tasks/.test(driver.stderr) ? true : undefined),
        {
          child: driver,
        },
      );
      const seen = await page.evaluate(() => (window as unknown as { __seen: string[] }).__seen);
      // One task at a time: follow mode shows each one from its first state to its last.
      for (const task of ['task-demo-1', 'task-demo-2']) {
        expect(statesOf(seen, task), seen.join(', ')).toEqual(
          expect.arrayContaining(['fetching', 'gap', 'draining']),
        );
        expect(
          inOrder(statesOf(seen, task), ['fetching', 'gap', 'draining']),
          seen.join(', '),
        ).toBe(true);
      }
      expect(statesOf(seen, 'task-demo-1').at(-1)).toBe('finished'); // checkpoint scenario
      expect(statesOf(seen, 'task-demo-2').at(-1)).toBe('cancelled'); // cancel while draining
    } finally {
      await page.close();
    }
    driver.proc.kill('SIGINT');
    expect((await driver.exited).code).toBe(130);
    expect((await spillLeftovers(root)).filter((p) => /task-|spill-segment/.test(p))).toEqual([]);
  });

  test("with stately: true the /stately bridge hands the stream to Stately's inspector after its handshake", async () => {
    const root = await makeTempRoot();
    const server = await startInspectorServer({ stately: true });
    const page = await browser!.newPage();
    try {
      // Stands in for https://stately.ai/inspect (no internet here): it answers the handshake
      // the way Stately's UI does and keeps what it is sent.
      await page.route('https://stately.ai/**', (route) =>
        route.fulfill({
          contentType: 'text/html',
          body: `<script>
            window.received = [];
            addEventListener('message', (e) => { if (e.data && e.data._version) received.push(e.data); });
            parent.postMessage({ type: '@statelyai.connected' }, '*');
          </script>`,
        }),
      );
      const made = await makeCheckpoint({ out: join(root, 'in.spwc'), mb: 0.25, seed: 9 });
      const recovery = startRecovery({
        checkpoint: made.path,
        spillRoot: root,
        taskId: 'bridge',
        inspect: server.inspect,
        channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
      });
      await recovery.done;
      await page.goto(`${server.url}stately`);
      const frame = await waitFor('the embedded inspector', () =>
        page.frames().find((f) => f.url().startsWith('https://stately.ai/')),
      );
      // The task's own final snapshot comes after everything else of the task.
      await frame.waitForFunction(() =>
        (
          window as unknown as {
            received: { type: string; sessionId: string; snapshot?: { status: string } }[];
          }
        ).received.some(
          (e) =>
            e.type === '@xstate.snapshot' &&
            e.sessionId === 'task-bridge#root' &&
            e.snapshot?.status === 'done',
        ),
      );
      const received = await frame.evaluate(
        () => (window as unknown as { received: Record<string, unknown>[] }).received,
      );
      const actors = received.filter((e) => e.type === '@xstate.actor').map((e) => e.name);
      expect(actors).toEqual(expect.arrayContaining(['task-bridge', 'fetch', 'gap', 'drain']));
      expect(new Set(received.map((e) => e._version))).toEqual(new Set(['0.7.2']));
    } finally {
      await page.close();
      await server.close();
    }
  });
});
