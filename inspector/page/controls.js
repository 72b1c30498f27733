// @ts-check
// What a person does: pause, resume, step through the history, scrub, filter to a task, click
// an event. Each handler changes the store and marks it dirty; app.js draws.

import { $, byId } from './dom.js';
import { isInternal } from './events.js';
import { store, build, indexOfSeq } from './model.js';

/** @import { InspectorRecord } from '../protocol.ts' */

/**
 * Freezes the page at record index `at` (default: the newest).
 *
 * @param {number} [at]
 */
export function pause(at) {
  if (store.records.length === 0) return;
  store.cursor =
    at === undefined
      ? store.records.length - 1
      : Math.max(0, Math.min(at, store.records.length - 1));
  store.view = build(store.cursor);
  store.newWhilePaused = 0;
  store.dirty = true;
}

export function resume() {
  store.cursor = null;
  store.view = null;
  store.dirty = true;
}

/**
 * A record ← and → stop at: an event the log shows, or a task state.
 *
 * @param {InspectorRecord} r
 */
const isStep = (r) =>
  ((r.k === 'event' && (store.showInternal || !isInternal(r.type))) ||
    (r.k === 'snap' && r.path === '')) &&
  (!store.filter || ('task' in r && r.task === store.filter));

/** @param {1 | -1} dir */
function step(dir) {
  if (store.cursor === null) pause();
  if (store.cursor === null) return; // nothing recorded yet
  let k = store.cursor + dir;
  while (k >= 0 && k < store.records.length && !isStep(store.records[k])) k += dir;
  if (k >= 0 && k < store.records.length) pause(k);
}

/**
 * The record to show for a click on a log row: the state *after* the event, i.e. the target's
 * snapshot that it caused, if one follows.
 *
 * @param {number} seq
 */
function indexAfterEvent(seq) {
  let at = indexOfSeq(seq);
  const r = store.records[at];
  if (r && r.k === 'event') {
    for (let k = at + 1; k < Math.min(store.records.length, at + 400); k++) {
      const n = store.records[k];
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
  $('pause').addEventListener('click', () => (store.cursor === null ? pause() : resume()));
  $('live').addEventListener('click', resume);
  $('step-back').addEventListener('click', () => step(-1));
  $('step-fwd').addEventListener('click', () => step(1));
  const slider = byId('cursor', HTMLInputElement);
  slider.addEventListener('input', () => pause(Number(slider.value)));
  const filter = byId('task-filter', HTMLSelectElement);
  filter.addEventListener('change', () => {
    store.filter = filter.value;
    store.dirty = true;
  });
  // Pins the task on screen (the filter); pressed again, follow mode goes on.
  $('pin').addEventListener('click', () => {
    store.filter = store.filter ? '' : store.focus;
    store.dirty = true;
  });
  const internal = byId('show-internal', HTMLInputElement);
  internal.addEventListener('change', () => {
    store.showInternal = internal.checked;
    store.dirty = true;
  });
  // pointerdown, not click: a live list is redrawn often, and a click needs the same element
  // under both halves of the press.
  $('task-list').addEventListener('pointerdown', (e) => {
    const li = targetOf(e)?.closest('li[data-task]');
    if (!(li instanceof HTMLElement)) return;
    const key = li.dataset.task ?? '';
    store.filter = store.filter === key ? '' : key;
    store.dirty = true;
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
      if (store.cursor === null) pause();
      else resume();
    } else if (e.key === 'ArrowLeft') step(-1);
    else if (e.key === 'ArrowRight') step(1);
  });
  window.addEventListener('resize', () => (store.dirty = true));
  // Counts down and then releases the hold on an ended task in follow mode.
  setInterval(() => {
    if (store.cursor === null && !store.filter) store.dirty = true;
  }, 250);
}
