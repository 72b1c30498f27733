// @ts-check
// Which task the statechart, the actors and the lane show: the pinned one, the one at the
// cursor, or in follow mode one live task, kept until it ends and then held for a while with
// its ending on screen — whatever started meanwhile — so a whole hand-off and the registry's
// close can be watched; only then the newest live task.

/** @import { Model, TaskView } from './model.js' */

import { $, esc, setHTML } from './dom.js';
import { store } from './model.js';

/**
 * How long follow mode keeps showing a task that just ended (`?hold=MS` in the page's URL
 * changes it, e.g. for a test or a slow reader).
 */
export const HOLD_ENDED_MS = holdFromUrl(new URLSearchParams(location.search).get('hold'), 3000);

/**
 * @param {string | null} raw
 * @param {number} fallback
 */
function holdFromUrl(raw, fallback) {
  return raw !== null && /^\d{1,6}$/.test(raw) ? Number(raw) : fallback;
}

/**
 * @param {Model} m
 * @returns {TaskView | undefined}
 */
export function focusTask(m) {
  if (store.filter && m.tasks.has(store.filter)) return m.tasks.get(store.filter);
  if (store.cursor !== null) {
    const r = store.records[store.cursor];
    if (r && 'task' in r && m.tasks.has(r.task)) return m.tasks.get(r.task);
  }
  const cur = store.focus ? m.tasks.get(store.focus) : undefined;
  // The followed task stays until it ends, and its ending stays up for HOLD_ENDED_MS.
  if (cur && cur.status === 'active') return cur;
  if (cur && store.cursor === null && performance.now() - cur.endedWall < HOLD_ENDED_MS) {
    return cur;
  }
  /** @type {TaskView | undefined} */
  let newest;
  for (const t of m.tasks.values()) {
    if (t.status === 'active' && (!newest || t.firstI > newest.firstI)) newest = t;
  }
  let best = newest;
  if (!best) best = cur;
  if (!best) for (const t of m.tasks.values()) best = t;
  store.focus = best ? best.key : '';
  return best;
}

/**
 * The line beside the statechart's title that says how the task was chosen — pinned, at the
 * cursor, followed until it ends, or its ending held for a few more seconds — and the button
 * that pins it (or lets follow mode go on).
 *
 * @param {TaskView | undefined} task
 */
export function renderFollow(task) {
  const pin = $('pin');
  const pinned = Boolean(store.filter);
  pin.hidden = !task && !pinned;
  pin.textContent = pinned ? 'unpin · follow' : 'pin';
  pin.dataset.pinned = String(pinned);
  let mode = '';
  let text = '';
  if (pinned) {
    mode = 'pinned';
    text = 'pinned';
  } else if (store.cursor !== null) {
    mode = 'paused';
    text = 'at the cursor';
  } else if (task && task.status === 'active') {
    mode = 'following';
    text = 'following until it ends';
  } else if (task && task.endedWall) {
    const left = HOLD_ENDED_MS - (performance.now() - task.endedWall);
    mode = left > 0 ? 'holding' : 'ended';
    text = left > 0 ? `ended · next live task in ${Math.ceil(left / 1000)} s` : 'ended';
  } else if (task) {
    mode = 'ended';
    text = 'ended';
  }
  const follow = $('follow');
  follow.dataset.mode = mode;
  setHTML(follow, esc(text));
}
