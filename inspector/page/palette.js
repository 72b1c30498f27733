// @ts-check
// Colors of owners, stages and outcomes. Mirrors style.css: SVG presentation attributes and
// inline styles cannot read CSS variables.

/** @import { TaskStatus } from './model.js' */

export const C = {
  fetch: '#4ea1ff',
  gap: '#e3a93b',
  drain: '#3ccf7a',
  checkpoint: '#b48cff',
  task: '#8a9bb0',
  running: '#2cc2c9',
  finished: '#3ccf7a',
  failed: '#ff5d5d',
  cancelled: '#ff9a3c',
  active: '#2cc2c9',
  line: '#243041',
  faint: '#56657a',
  muted: '#8494a8',
  text: '#e3e9f1',
};

/** @type {Record<string, string>} */
const BY_NAME = C;

/**
 * The color of an owner (`fetch`, `gap`, `drain`, `task`, `checkpoint-N`) or of a source.
 *
 * @param {string | null | undefined} owner
 */
export function ownerColor(owner) {
  if (!owner) return C.faint;
  if (owner.startsWith('checkpoint')) return C.checkpoint;
  return namedColor(owner) || C.task;
}

/** @type {Record<string, string>} */
const TASK_STATE_COLORS = {
  fetching: C.fetch,
  gap: C.gap,
  draining: C.drain,
  running: C.running,
  finished: C.finished,
  failed: C.failed,
  cancelled: C.cancelled,
};

/**
 * The color of a state: by stage for the task machine, by machine for the stage machines.
 *
 * @param {string} machine the machine definition key
 * @param {string} key the state's key
 */
export function stateColor(machine, key) {
  if (machine === 'task') return TASK_STATE_COLORS[key] || C.active;
  if (machine === 'fetch') return C.fetch;
  if (machine === 'gap') return C.gap;
  if (machine === 'drain') return C.drain;
  return C.active;
}

/**
 * The color named like a stage or an ending (`gap`, `running`, `finished`, …), if there is one.
 *
 * @param {string} name
 * @returns {string | undefined}
 */
export const namedColor = (name) => (Object.hasOwn(BY_NAME, name) ? BY_NAME[name] : undefined);

/**
 * The dot and chip color of a task in the list: its stage while live, its ending after.
 *
 * @param {{ status: TaskStatus; leaf: string }} task
 */
export const outcomeColor = (task) =>
  task.status === 'active'
    ? stateColor('task', task.leaf)
    : namedColor(task.leaf) || (task.status === 'error' ? C.failed : C.muted);
