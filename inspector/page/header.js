// @ts-check
// The header: counts, the connection pill, the pause button, the scrubber and the task filter.

/** @import { Model } from './model.js' */

import { $, byId, esc } from './dom.js';
import { actorName, leafPath } from './format.js';
import { store, relTime } from './model.js';

/** How many tasks the filter offers: the newest; older ones are still in the list. */
const FILTER_TASKS = 300;

/** @param {Model} m */
export function renderHeader(m) {
  let live = 0;
  for (const t of m.tasks.values()) if (t.status === 'active') live++;
  $('stat-tasks').textContent = String(m.tasks.size);
  $('stat-live').textContent = String(live);
  $('stat-events').textContent = m.events.toLocaleString('en-US');
  const conn = $('conn');
  const state = store.cursor !== null ? 'paused' : store.conn;
  conn.dataset.conn = state;
  conn.textContent =
    state === 'paused'
      ? `paused${store.newWhilePaused ? ` · ${store.newWhilePaused} new` : ''}`
      : state === 'live'
        ? 'live'
        : state === 'closed'
          ? 'disconnected · recorded history'
          : 'connecting…';
  conn.title = store.dropped
    ? `${store.dropped} early records were trimmed from the server's history`
    : '';
  const btn = $('pause');
  btn.dataset.paused = String(store.cursor !== null);
  btn.textContent = store.cursor !== null ? '▶ Resume' : '❚❚ Pause';

  renderScrubber();

  const select = byId('task-filter', HTMLSelectElement);
  const keys = [...store.live.tasks.keys()].reverse().slice(0, FILTER_TASKS);
  const sig = keys.join('|') + '#' + store.filter;
  if (select.dataset.sig !== sig) {
    select.dataset.sig = sig;
    select.innerHTML =
      `<option value="">All tasks · follow</option>` +
      keys.map((k) => `<option value="${esc(k)}">${esc(k)}</option>`).join('');
    select.value = store.filter;
  }
}

/** The slider and the label of the record the page is paused at; hidden while live. */
function renderScrubber() {
  const scrub = $('scrubber');
  scrub.hidden = store.cursor === null;
  if (store.cursor === null) return;
  const slider = byId('cursor', HTMLInputElement);
  slider.max = String(Math.max(0, store.records.length - 1));
  slider.value = String(store.cursor);
  const r = store.records[store.cursor];
  const what =
    r.k === 'event'
      ? `${r.source ?? '·'} → ${actorName(r.path)}  ${r.type}`
      : r.k === 'snap'
        ? `${actorName(r.path)} ${leafPath(r.value) || r.status}`
        : r.k;
  const label = $('cursor-label');
  label.textContent = `#${store.cursor + 1}/${store.records.length} · +${relTime(r.t)}`;
  label.title = `${'task' in r ? r.task : ''} · ${what}`;
}
