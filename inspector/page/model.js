// @ts-check
// The page's model: every record received, and that history folded into per-task views (the
// actor tree, the task's state, the ownership steps the lane draws) and the event log. The live
// model follows the stream; a paused view is the same fold stopped at the cursor, so the whole
// run can be looked back over after it ended.

/**
 * @import {
 *   ActorKind, ErrorSummary, EventRecord, InspectorRecord, MachineDef, MetricsRecord, OwnerId,
 *   OwnersRecord, ResourceId, SnapshotRecord, TaskContextView
 * } from '../protocol.ts'
 */

import { leafOf } from './format.js';

/** Bounds: a page left open on a long demo must not grow without end. */
const MAX_RECORDS = 60000;
const MAX_TASKS = 400;
const MAX_LOG = 6000;

/** @typedef {SnapshotRecord['status']} TaskStatus */

/**
 * One actor of a task, as the actor tree and the statechart read it.
 *
 * @typedef {object} ActorView
 * @property {string} path below the task root, `''` for the root
 * @property {string} id
 * @property {string | null} parent the parent's path, `null` for the root
 * @property {ActorKind} kind
 * @property {string} [def] machine definition key
 * @property {TaskStatus} status
 * @property {unknown} [value] state value (machines)
 * @property {unknown} [ctx]
 * @property {unknown} [output]
 * @property {unknown} [error]
 * @property {number} i the record that introduced it: the tree lists children in this order
 */

/**
 * The task after one of its root snapshots: one column of the ownership lane.
 *
 * @typedef {object} Step
 * @property {number} i
 * @property {number} t
 * @property {string} leaf
 * @property {Partial<Record<ResourceId, OwnerId>>} ownership
 * @property {readonly ResourceId[]} closed what the registry closed
 * @property {string} cause type of the event that produced the snapshot
 */

/**
 * @typedef {object} TaskView
 * @property {string} key
 * @property {string} label the key without `task-`
 * @property {number} firstT
 * @property {number} firstI
 * @property {number} lastT
 * @property {number} lastI
 * @property {Map<string, ActorView>} actors by path
 * @property {Step[]} steps
 * @property {TaskStatus} status
 * @property {unknown} value
 * @property {TaskContextView} ctx
 * @property {string} leaf key of the active leaf state
 * @property {number} events
 * @property {number} endedWall `performance.now()` when the live model saw it end, else 0
 * @property {OwnersRecord} [owners] its latest ownership and progress reading (a watched task)
 */

/**
 * A change of a task's leaf state, shown in the log among the events.
 *
 * @typedef {object} StateRow
 * @property {'state'} k
 * @property {number} i
 * @property {number} t
 * @property {string} task
 * @property {string} from
 * @property {string} to
 * @property {TaskStatus} status
 * @property {string} cause
 * @property {ErrorSummary} [error]
 */

/** @typedef {EventRecord | StateRow} LogRow */

/**
 * @typedef {object} Model
 * @property {Map<string, TaskView>} tasks in the order they appeared
 * @property {MetricsRecord[]} metrics
 * @property {LogRow[]} log
 * @property {number} events
 * @property {number | null} firstT
 * @property {number | null} lastT
 */

/** @typedef {'connecting' | 'live' | 'closed'} Conn */

/** @returns {Model} */
function newModel() {
  return { tasks: new Map(), metrics: [], log: [], events: 0, firstT: null, lastT: null };
}

/**
 * Everything the page knows and shows: one object, because every panel reads it and every
 * control changes it; `dirty` asks the render loop to draw.
 */
export const store = {
  /** @type {string | null} the server id from `hello` */
  server: null,
  dropped: 0,
  /** @type {Conn} */
  conn: 'connecting',
  /** @type {InspectorRecord[]} */
  records: [],
  lastI: 0,
  /** @type {Map<string, MachineDef>} */
  defs: new Map(),
  /** @type {Map<string, string>} Invoked actor id → machine definition key, learnt from any task. */
  idToDef: new Map(),
  live: newModel(),
  /** @type {number | null} null = live; else an index into records */
  cursor: null,
  /** @type {Model | null} the model at the cursor */
  view: null,
  /** The task the page is filtered to, '' for all (follow mode). */
  filter: '',
  /** The task follow mode shows. */
  focus: '',
  showInternal: false,
  /** @type {number | null} time of the first record: the log shows times relative to it */
  t0: null,
  dirty: true,
  newWhilePaused: 0,
  /** Tasks the live model has seen since the page (re)started: the trim note counts from it. */
  tasksSeen: 0,
};

/** How many tasks a model keeps (the oldest ended ones go first): the trim note names it. */
export const TASKS_KEPT = MAX_TASKS;

/** The model the panels draw: live, or the one at the cursor. */
export const view = () => (store.cursor === null || store.view === null ? store.live : store.view);

/** Seconds since the first record, as the log and the scrubber show times. */
export const relTime = (/** @type {number} */ t) =>
  store.t0 === null ? '' : `${((t - store.t0) / 1000).toFixed(3)}s`;

/**
 * @param {Model} m
 * @param {string} key
 * @param {{ i: number; t: number }} r
 * @param {boolean} [live] the model that follows the stream: a new task counts as seen
 */
function getTask(m, key, r, live = false) {
  let t = m.tasks.get(key);
  if (t === undefined) {
    if (live) store.tasksSeen++;
    t = {
      key,
      label: key.replace(/^task-/, ''),
      firstT: r.t,
      firstI: r.i,
      lastT: r.t,
      lastI: r.i,
      actors: new Map(),
      steps: [],
      status: 'active',
      value: undefined,
      ctx: {},
      leaf: '',
      events: 0,
      endedWall: 0,
    };
    m.tasks.set(key, t);
    if (m.tasks.size > MAX_TASKS) {
      for (const [k, old] of m.tasks) {
        if (old.status !== 'active' && k !== store.filter) {
          m.tasks.delete(k);
          break;
        }
      }
    }
  }
  t.lastT = r.t;
  t.lastI = r.i;
  return t;
}

/**
 * Folds one record into a model.
 *
 * @param {Model} m
 * @param {InspectorRecord} r
 * @param {boolean} live marks the model that follows the stream
 */
function apply(m, r, live) {
  if (m.firstT === null) m.firstT = r.t;
  m.lastT = r.t;
  switch (r.k) {
    case 'def':
      store.defs.set(r.def.key, r.def);
      return;
    case 'metrics':
      m.metrics.push(r);
      return;
    case 'actor': {
      const t = getTask(m, r.task, r, live);
      const prev = t.actors.get(r.path);
      t.actors.set(r.path, {
        path: r.path,
        id: r.id,
        parent: r.parent,
        kind: r.kind,
        def: r.def,
        status: 'active',
        value: prev ? prev.value : undefined,
        i: r.i,
      });
      if (r.def) store.idToDef.set(r.id, r.def);
      return;
    }
    case 'snap': {
      const t = getTask(m, r.task, r, live);
      let a = t.actors.get(r.path);
      if (a === undefined) {
        // Its actor record was trimmed from the history: rebuild what the path says.
        const slash = r.path.lastIndexOf('/');
        a = {
          path: r.path,
          id: r.path === '' ? r.task : r.path.slice(slash + 1),
          parent: r.path === '' ? null : slash < 0 ? '' : r.path.slice(0, slash),
          kind: r.value !== undefined ? 'machine' : 'actor',
          status: 'active',
          i: r.i,
        };
        t.actors.set(r.path, a);
      }
      a.status = r.status;
      if (r.value !== undefined) a.value = r.value;
      if (r.context !== undefined) a.ctx = r.context;
      if (r.output !== undefined) a.output = r.output;
      if (r.error !== undefined) a.error = r.error;
      if (r.path === '') applyRoot(m, t, r, live);
      return;
    }
    case 'owners':
      getTask(m, r.task, r, live).owners = r;
      return;
    case 'event': {
      m.events++;
      const t = getTask(m, r.task, r, live);
      t.events++;
      pushLog(m, r);
      return;
    }
    default:
      return;
  }
}

/**
 * A snapshot of the task machine itself: its state, its context, one more lane step.
 *
 * @param {Model} m
 * @param {TaskView} t
 * @param {SnapshotRecord} r
 * @param {boolean} live
 */
function applyRoot(m, t, r, live) {
  const before = t.leaf;
  t.status = r.status;
  t.value = r.value;
  // The root of a task is the task machine: the protocol types its context for the page.
  t.ctx = /** @type {TaskContextView} */ (r.context || {});
  t.leaf = leafOf(r.value);
  t.steps.push({
    i: r.i,
    t: r.t,
    leaf: t.leaf,
    ownership: t.ctx.ownership || {},
    closed: t.ctx.closedByRegistry || [],
    cause: r.cause,
  });
  if (before !== t.leaf) {
    pushLog(m, {
      k: 'state',
      i: r.i,
      t: r.t,
      task: r.task,
      from: before,
      to: t.leaf,
      status: r.status,
      cause: r.cause,
      error: t.ctx.cause,
    });
  }
  if (r.status !== 'active' && live && !t.endedWall) t.endedWall = performance.now();
}

/**
 * @param {Model} m
 * @param {LogRow} row
 */
function pushLog(m, row) {
  m.log.push(row);
  if (m.log.length > MAX_LOG) m.log.splice(0, MAX_LOG / 6);
}

/**
 * The model after the records up to index `upTo`: what a paused page shows.
 *
 * @param {number} upTo
 */
export function build(upTo) {
  const m = newModel();
  for (let k = 0; k <= upTo && k < store.records.length; k++) apply(m, store.records[k], false);
  return m;
}

/** Forgets everything: the server (re)started its replay from the beginning. */
export function reset() {
  store.records = [];
  store.lastI = 0;
  store.live = newModel();
  store.cursor = null;
  store.view = null;
  store.t0 = null;
  store.focus = '';
  store.newWhilePaused = 0;
  store.tasksSeen = 0;
  store.dirty = true;
}

/**
 * Takes a batch from the server: new records join the history and the live model.
 *
 * @param {InspectorRecord[]} records
 */
export function ingest(records) {
  for (const r of records) {
    if (r.i <= store.lastI) continue; // a replay after a reconnect
    store.lastI = r.i;
    if (store.t0 === null && r.k !== 'def') store.t0 = r.t;
    store.records.push(r);
    apply(store.live, r, true);
    if (store.cursor !== null) store.newWhilePaused++;
  }
  if (store.records.length > MAX_RECORDS) {
    const cut = MAX_RECORDS / 6;
    store.records.splice(0, cut);
    store.live = build(store.records.length - 1);
    if (store.cursor !== null) {
      store.cursor = Math.max(0, store.cursor - cut);
      store.view = build(store.cursor);
    }
  }
  store.dirty = true;
}

/**
 * The index in `store.records` of the record with sequence number `i` (or the one before it).
 *
 * @param {number} i
 */
export function indexOfSeq(i) {
  let lo = 0;
  let hi = store.records.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = store.records[mid].i;
    if (v === i) return mid;
    if (v < i) lo = mid + 1;
    else hi = mid - 1;
  }
  return Math.max(0, lo - 1);
}

/** @param {Conn} state */
export function setConn(state) {
  store.conn = state;
  store.dirty = true;
}
