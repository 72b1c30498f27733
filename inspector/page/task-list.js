// @ts-check
// The tasks panel: every task with its state or outcome and a bar of the phases it went
// through, and the outcome counts below.

/** @import { Model, TaskView } from './model.js' */

import { $, esc, setHTML } from './dom.js';
import { store, TASKS_KEPT } from './model.js';
import { C, namedColor, outcomeColor, stateColor } from './palette.js';

/** How many tasks the list shows, newest first. */
const LIST_TASKS = 150;

/**
 * @param {Model} m
 * @param {TaskView | undefined} focus
 */
export function renderTasks(m, focus) {
  /** @type {Record<string, number>} */
  const counts = {};
  for (const t of m.tasks.values()) {
    const k = t.status === 'active' ? 'running' : t.leaf || t.status;
    counts[k] = (counts[k] || 0) + 1;
  }
  setHTML(
    $('outcomes'),
    ['running', 'finished', 'failed', 'cancelled']
      .filter((k) => counts[k])
      .map(
        (k) =>
          `<span><b style="color:${k === 'running' ? C.active : namedColor(k)}">${counts[k]}</b> ${k === 'running' ? 'live' : k}</span>`,
      )
      .join(''),
  );
  renderTrim(m);
  const items = [...m.tasks.values()].reverse().slice(0, LIST_TASKS);
  if (items.length === 0) {
    setHTML($('task-list'), `<li class="empty">waiting for tasks…</li>`);
    return;
  }
  setHTML($('task-list'), items.map((t) => taskItem(t, focus)).join(''));
}

/**
 * @param {TaskView} t
 * @param {TaskView | undefined} focus
 */
function taskItem(t, focus) {
  /** @type {{ leaf: string; n: number }[]} */
  const runs = [];
  for (const s of t.steps) {
    const last = runs[runs.length - 1];
    if (last && last.leaf === s.leaf) last.n++;
    else runs.push({ leaf: s.leaf, n: 1 });
  }
  const total = runs.reduce((a, r) => a + r.n, 0) || 1;
  const bar = runs
    .map(
      (r) =>
        `<span style="width:${((r.n / total) * 100).toFixed(2)}%;background:${stateColor('task', r.leaf)}" title="${esc(r.leaf)}"></span>`,
    )
    .join('');
  const color = outcomeColor(t);
  const label = t.status === 'active' ? t.leaf || 'starting' : t.leaf || t.status;
  return `<li data-task="${esc(t.key)}" data-status="${esc(t.status)}" data-leaf="${esc(t.leaf)}" class="${focus && focus.key === t.key ? 'selected' : ''}">
          <div class="row"><span class="dot ${esc(t.status)}" style="background:${color}"></span><span class="label" title="${esc(t.key)}">${esc(t.label)}</span><span class="chip" style="color:${color}">${esc(label)}</span></div>
          <div class="phasebar">${bar}</div></li>`;
}

/**
 * What the page no longer holds, said on the page (not in a tooltip): the tasks it dropped to
 * stay bounded, the ones the list leaves out, and the records the server's history trimmed.
 *
 * @param {Model} m
 */
function renderTrim(m) {
  /** @type {string[]} */
  const lines = [];
  const kept = m.tasks.size;
  const seen = Math.max(store.tasksSeen, kept);
  if (seen > kept) {
    lines.push(
      `<b>${kept.toLocaleString('en-US')}</b> of <b>${seen.toLocaleString('en-US')}</b> tasks kept: the page keeps the newest ${TASKS_KEPT}`,
    );
  }
  if (kept > LIST_TASKS) lines.push(`the list shows the newest ${LIST_TASKS}`);
  if (store.dropped > 0) {
    lines.push(
      `the server's history dropped its first <b>${store.dropped.toLocaleString('en-US')}</b> records`,
    );
  }
  const el = $('trim');
  el.hidden = lines.length === 0;
  setHTML(el, lines.map((l) => `<div>${l}</div>`).join(''));
}
