// @ts-check
// What a person does: pause, resume, step through the history, scrub, filter to a task, click
// an event. Each handler changes the store and marks it dirty; app.js draws.

import { $, byId } from './dom.js';
import { isInternal } from './events.js';
import { S, build, indexOfSeq } from './model.js';

/** @import { InspectorRecord } from '../protocol.ts' */

/**
 * Freezes the page at record index `at` (default: the newest).
 *
 * @param {number} [at]
 */
export function pause(at) {
  if (S.records.length === 0) return;
  S.cursor =
    at === undefined ? S.records.length - 1 : Math.max(0, Math.min(at, S.records.length - 1));
  S.view = build(S.cursor);
  S.newWhilePaused = 0;
  S.dirty = true;
}

export function resume() {
  S.cursor = null;
  S.view = null;
  S.dirty = true;
}

/**
 * A record ← and → stop at: an event the log shows, or a task state.
 *
 * @param {InspectorRecord} r
 */
const isStep = (r) =>
  ((r.k === 'event' && (S.showInternal || !isInternal(r.type))) ||
    (r.k === 'snap' && r.path === '')) &&
  (!S.filter || ('task' in r && r.task === S.filter));

/** @param {1 | -1} dir */
function step(dir) {
  if (S.cursor === null) pause();
  if (S.cursor === null) return; // nothing recorded yet
  let k = S.cursor + dir;
  while (k >= 0 && k < S.records.length && !isStep(S.records[k])) k += dir;
  if (k >= 0 && k < S.records.length) pause(k);
}

/**
 * The record to show for a click on a log row: the state *after* the event, i.e. the target's
 * snapshot that it caused, if one follows.
 *
 * @param {number} seq
 */
function indexAfterEvent(seq) {
  let at = indexOfSeq(seq);
  const r = S.records[at];
  if (r && r.k === 'event') {
    for (let k = at + 1; k < Math.min(S.records.length, at + 400); k++) {
      const n = S.records[k];
      if (n.k === 'snap' && n.task === r.task && n.path === r.path && n.cause === r.type) {
        at = k;
        break;
      }
    }
  }
  return at;
}

/** The element an event started on, for delegated handlers. */
const targetOf = (/** @type {Event} */ e) => (e.target instanceof Element ? e.target : null);

/** Installs every handler of the header, the task list, the log and the keyboard. */
export function installControls() {
  $('pause').addEventListener('click', () => (S.cursor === null ? pause() : resume()));
  $('live').addEventListener('click', resume);
  $('step-back').addEventListener('click', () => step(-1));
  $('step-fwd').addEventListener('click', () => step(1));
  const slider = byId('cursor', HTMLInputElement);
  slider.addEventListener('input', () => pause(Number(slider.value)));
  const filter = byId('task-filter', HTMLSelectElement);
  filter.addEventListener('change', () => {
    S.filter = filter.value;
    S.dirty = true;
  });
  const internal = byId('show-internal', HTMLInputElement);
  internal.addEventListener('change', () => {
    S.showInternal = internal.checked;
    S.dirty = true;
  });
  // pointerdown, not click: a live list is redrawn often, and a click needs the same element
  // under both halves of the press.
  $('task-list').addEventListener('pointerdown', (e) => {
    const li = targetOf(e)?.closest('li[data-task]');
    if (!(li instanceof HTMLElement)) return;
    const key = li.dataset.task ?? '';
    S.filter = S.filter === key ? '' : key;
    S.dirty = true;
  });
  $('log').addEventListener('pointerdown', (e) => {
    const row = targetOf(e)?.closest('[data-seq]');
    if (!(row instanceof HTMLElement)) return;
    pause(indexAfterEvent(Number(row.dataset.seq)));
  });
  document.addEventListener('keydown', (e) => {
    if (e.target instanceof HTMLSelectElement || e.target instanceof HTMLInputElement) return;
    if (e.key === ' ') {
      e.preventDefault();
      if (S.cursor === null) pause();
      else resume();
    } else if (e.key === 'ArrowLeft') step(-1);
    else if (e.key === 'ArrowRight') step(1);
  });
  window.addEventListener('resize', () => (S.dirty = true));
  // Releases the hold on an ended task in follow mode.
  setInterval(() => {
    if (S.cursor === null && !S.filter) S.dirty = true;
  }, 500);
}
