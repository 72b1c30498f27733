// @ts-check
// Which task the statechart, the actors and the lane show: the filtered one, the one at the
// cursor, or in follow mode the newest live task (an ending stays up for a moment).

/** @import { Model, TaskView } from './model.js' */

import { store } from './model.js';

/** How long follow mode keeps showing a task that just ended, unless a newer one started. */
const HOLD_ENDED_MS = 1500;

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
  if (cur && cur.status === 'active') return cur;
  /** @type {TaskView | undefined} */
  let newest;
  for (const t of m.tasks.values()) {
    if (t.status === 'active' && (!newest || t.firstI > newest.firstI)) newest = t;
  }
  // An ending stays on screen for a moment, unless a task started after it: then that one.
  if (cur && store.cursor === null) {
    const startedSince = newest && newest.firstI > cur.lastI;
    if (!startedSince && (!newest || performance.now() - cur.endedWall < HOLD_ENDED_MS)) {
      return cur;
    }
  }
  let best = newest;
  if (!best) for (const t of m.tasks.values()) best = t;
  store.focus = best ? best.key : '';
  return best;
}
