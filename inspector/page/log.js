// @ts-check
// The event log: newest first, `source → target`, the type, and a one-line reading of the
// payload; task state changes are rows of their own. The row at the cursor is marked.

/**
 * @import {
 *   EventRecord, RegistryEventData, RegistryEventType, TaskEventData, TaskEventType
 * } from '../protocol.ts'
 */
/** @import { LogRow, Model, StateRow } from './model.js' */

import { $, esc, setHTML } from './dom.js';
import { isInternal, isOwnershipEvent, OWNERSHIP_MOVES } from './events.js';
import { actorName, brief, bytes, errText } from './format.js';
import { store, relTime } from './model.js';
import { ownerColor } from './palette.js';

/** How many rows the log draws: the newest, after the filter. */
const LOG_ROWS = 300;

/** @type {TaskEventType} The outside world failing the task: its row reads as an error. */
const FAIL_EVENT = 'FAIL';

/**
 * How each task event reads in the log. Keyed by every `TaskEventType`: tsc fails if an event is
 * added to the task without a reading here, or if one here no longer exists.
 *
 * @type {{ [T in TaskEventType]: (d: TaskEventData<T>) => string }}
 */
const TASK_EVENT_DETAIL = {
  'SPILL.OWNED': (d) =>
    `${d.resource} → ${d.owner}${d.detail ? ` · ${String(d.detail).split('/').slice(-1)[0]}` : ''}`,
  'FETCH.HANDOFF': (d) =>
    `fetchedState → gap · ${d.spillFiles} files, ${bytes(d.spilledBytes ?? NaN)}`,
  'DRAINER.READY': () => 'drainer → gap',
  'TRIGGER.INSTALLED': () => 'checkpoints now cut the spill state',
  'SNAPSHOT.OWNED': (d) => `snapshot-${d.checkpointId} → checkpoint-${d.checkpointId}`,
  'SPILL.RELEASED': (d) => `${d.resource} released`,
  CHECKPOINT: (d) => `#${d.checkpointId}`,
  CANCEL: (d) => (d.reason ? String(d.reason) : ''),
  FAIL: (d) => errText(d.error),
  FINISH: () => '',
  'FETCH.RETRY': (d) => `retry ${d.retry} from byte ${d.offset} in ${d.delayMs} ms · ${d.reason}`,
};

/**
 * How the task's messages to its registry read.
 *
 * @type {{ [T in RegistryEventType]: (d: RegistryEventData<T>, type: T) => string }}
 */
const REGISTRY_EVENT_DETAIL = {
  own: (d, type) => `${type} ${d.resource}`,
  disown: (d, type) => `${type} ${d.resource}`,
  close: () => '',
};

/**
 * @template {TaskEventType} T
 * @param {T} type
 * @param {unknown} data
 */
function taskDetail(type, data) {
  // The recorder sanitized this event's payload: the protocol says what remains of it.
  return TASK_EVENT_DETAIL[type](/** @type {TaskEventData<T>} */ (data ?? {}));
}

/**
 * @template {RegistryEventType} T
 * @param {T} type
 * @param {unknown} data
 */
function registryDetail(type, data) {
  return REGISTRY_EVENT_DETAIL[type](/** @type {RegistryEventData<T>} */ (data ?? {}), type);
}

/**
 * @param {string} type
 * @returns {type is TaskEventType}
 */
const isTaskEvent = (type) => Object.hasOwn(TASK_EVENT_DETAIL, type);

/**
 * @param {string} type
 * @returns {type is RegistryEventType}
 */
const isRegistryEvent = (type) => Object.hasOwn(REGISTRY_EVENT_DETAIL, type);

/**
 * The one-line reading of an event's payload.
 *
 * @param {EventRecord} r
 */
function detailOf(r) {
  if (isTaskEvent(r.type)) return taskDetail(r.type, r.data);
  if (isRegistryEvent(r.type)) return registryDetail(r.type, r.data);
  const d = /** @type {{ error?: unknown; output?: unknown } | undefined} */ (r.data);
  if (r.type.startsWith('xstate.error.actor.')) return errText(d?.error);
  if (r.type.startsWith('xstate.done.actor.')) return brief(d?.output, 90);
  return r.data ? brief(r.data, 90) : '';
}

/**
 * The sequence number the log marks: the record at the cursor, or when the cursor sits on a
 * snapshot, the event that caused it.
 */
function markedSeq() {
  if (store.cursor === null) return -1;
  const at = store.records[store.cursor];
  if (at.k !== 'snap') return at.i;
  for (let k = store.cursor - 1; k >= Math.max(0, store.cursor - 400); k--) {
    const r = store.records[k];
    if (r.k === 'event' && r.task === at.task && r.path === at.path && r.type === at.cause) {
      return r.i;
    }
  }
  return at.i;
}

/** @param {Model} m */
export function renderLog(m) {
  const host = $('log');
  const atSeq = markedSeq();
  /** @type {string[]} */
  const rows = [];
  for (let k = m.log.length - 1; k >= 0 && rows.length < LOG_ROWS; k--) {
    const r = m.log[k];
    if (store.filter && r.task !== store.filter) continue;
    if (r.k === 'event' && !store.showInternal && isInternal(r.type)) continue;
    rows.push(r.k === 'state' ? stateRow(r, r.i === atSeq) : eventRow(r, r.i === atSeq));
  }
  setHTML(host, rows.length ? rows.join('') : `<div class="empty">no events yet</div>`);
  if (store.cursor !== null) {
    const cur = host.querySelector('.ev.at');
    if (cur) cur.scrollIntoView({ block: 'nearest' });
  }
}

/**
 * @param {StateRow} r
 * @param {boolean} marked
 */
function stateRow(r, marked) {
  const task = r.task.replace(/^task-/, '');
  const err = r.to === 'failed' ? ' err' : '';
  const from = esc(r.from ? `from ${r.from}` : 'started');
  const cause = r.to === 'failed' && r.error ? ` · ${esc(errText(r.error))}` : '';
  return `<div class="ev state${err}${marked ? ' at' : ''}" data-seq="${r.i}"><span class="time">${esc(relTime(r.t))}</span><span class="task">${esc(task)}</span><span class="route">task</span><span class="type">⟶ ${esc(r.to || r.status)}</span><span class="detail">${from}${cause}</span></div>`;
}

/**
 * @param {EventRecord} r
 * @param {boolean} marked
 */
function eventRow(r, marked) {
  const task = r.task.replace(/^task-/, '');
  const src = r.source === null ? '·' : r.source === '' ? 'task' : r.source;
  const internal = isInternal(r.type) ? ' internal' : '';
  // Ownership events in the color of who now owns: the releaser hands back to the task.
  const color = isOwnershipEvent(r.type)
    ? ` style="color:${ownerColor(OWNERSHIP_MOVES[r.type].move === 'release' ? 'task' : r.source || 'task')}"`
    : '';
  const err = r.type.startsWith('xstate.error.actor.') || r.type === FAIL_EVENT ? ' err' : '';
  const srcAttrs = r.inferred
    ? ` class="src inferred" title="sent from a promise body; source inferred from the event"`
    : ` class="src"`;
  return `<div class="ev${err}${marked ? ' at' : ''}" data-seq="${r.i}" data-type="${esc(r.type)}"><span class="time">${esc(relTime(r.t))}</span><span class="task">${esc(task)}</span><span class="route"><span${srcAttrs}>${esc(src)}</span> <span class="to">→</span> ${esc(actorName(r.path))}</span><span class="type${internal}"${color}>${esc(r.type)}</span><span class="detail" title="${esc(brief(r.data, 400))}">${esc(detailOf(r))}</span></div>`;
}
