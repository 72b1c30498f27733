// @ts-check
// The statechart panel: the focused task's machine drawn from its definition as nested boxes
// with the active state lit, and one strip per invoked machine (fetch, gap, drain) below.

/** @import { MachineDef, StateDef, TransitionDef } from '../protocol.ts' */
/** @import { TaskStatus, TaskView } from './model.js' */

import { $, esc, setHTML } from './dom.js';
import { shortEvent } from './events.js';
import { errText } from './format.js';
import { store } from './model.js';
import { C, stateColor } from './palette.js';
import { actionsHtml, arrowHtml, chipKey, handledHereChip, transitionChip } from './transitions.js';

/**
 * What drawing one machine needs to know besides its definition.
 *
 * @typedef {object} DrawEnv
 * @property {TaskView} task
 * @property {string} path the machine's actor path (`''` for the task)
 * @property {Set<string>} active ids of the active state nodes
 * @property {TaskStatus | ''} status the actor's status, '' if it has not started
 * @property {string} machine definition key
 * @property {Set<TransitionDef>} covered transitions already drawn (as arrows or hoisted chips)
 * @property {boolean} child drawn as a strip below, not as the task chart
 * @property {boolean} [isRoot]
 * @property {boolean} [grow]
 */

/**
 * The ids of the active state nodes for a state value.
 *
 * @param {string} rootId
 * @param {unknown} value
 */
function activeIds(rootId, value) {
  const ids = new Set([rootId]);
  /** @type {(prefix: string, v: unknown) => void} */
  const walk = (prefix, v) => {
    if (v === undefined || v === null) return;
    if (typeof v === 'string') {
      ids.add(`${prefix}.${v}`);
      return;
    }
    if (typeof v !== 'object') return;
    for (const [k, sub] of Object.entries(v)) {
      ids.add(`${prefix}.${k}`);
      walk(`${prefix}.${k}`, sub);
    }
  };
  walk(rootId, value);
  return ids;
}

const within = (/** @type {string} */ id, /** @type {string} */ ancestor) =>
  id === ancestor || id.startsWith(`${ancestor}.`);

/**
 * @param {StateDef} node
 * @param {TransitionDef[]} [out]
 */
function subtreeTransitions(node, out = []) {
  for (const t of node.transitions) out.push(t);
  for (const c of node.states) subtreeTransitions(c, out);
  return out;
}

/**
 * The transitions from the subtree of `from` into the subtree of `to`: one arrow between them.
 *
 * @param {StateDef} from
 * @param {StateDef} to
 */
const linksBetween = (from, to) =>
  subtreeTransitions(from).filter((t) => t.targets.some((id) => within(id, to.id)));

/**
 * Draws one machine as nested boxes. Compound children flow left to right with an arrow
 * wherever a transition leads from one subtree into the next; transitions not drawn as
 * arrows are listed as chips in their source state. Final states of a root sit in a column
 * at its end. Invoked machines are not nested here: they get a strip each below.
 *
 * @param {MachineDef} def
 * @param {Omit<DrawEnv, 'machine' | 'covered' | 'isRoot'>} env
 */
function renderMachine(def, env) {
  return renderState(def.root, { ...env, machine: def.key, covered: new Set(), isRoot: true });
}

/**
 * @param {StateDef} node
 * @param {DrawEnv} env
 * @returns {string}
 */
function renderState(node, env) {
  const isActive = env.active.has(node.id);
  const isLeaf = node.states.length === 0;
  const classes = ['st', node.type];
  if (isActive) classes.push('active');
  if (isActive && isLeaf) classes.push('leaf');
  if (isActive && env.status === 'stopped') classes.push('was');
  if (env.grow) classes.push('grow');
  const color = stateColor(env.machine, node.key);

  let head = `<span class="st-name">${esc(node.key)}</span>`;
  if (env.isRoot) head += `<span class="st-type">${esc(env.machine)} machine</span>`;
  const heads = invokeChips(node, env);

  /** @type {string[]} */
  const notes = [];
  /** @type {string[]} */
  let hoisted = [];
  let body = '';
  if (!isLeaf) {
    const finals = env.isRoot ? node.states.filter((c) => c.type === 'final') : [];
    const flow = node.states.filter((c) => !finals.includes(c));
    // Arrows first: the transitions they draw are then left out of the chips below.
    const arrows = flow.map((c, k) => {
      if (k === 0) return '';
      const links = linksBetween(flow[k - 1], c);
      for (const t of links) env.covered.add(t);
      return arrowHtml(links);
    });
    hoisted = hoistShared(flow, env);
    /** @type {string[]} */
    const parts = [];
    flow.forEach((c, k) => {
      parts.push(arrows[k]);
      parts.push(renderState(c, { ...env, isRoot: false, grow: c.states.length > 0 }));
    });
    if (finals.length) {
      parts.push(`<div class="arrow"><span class="al">ends</span><span class="ah">→</span></div>`);
      parts.push(
        `<div class="st-col">${finals.map((c) => renderState(c, { ...env, isRoot: false, grow: false })).join('')}</div>`,
      );
    }
    body = `<div class="st-body">${parts.join('')}</div>`;
  }

  const own = node.transitions.filter((t) => !env.covered.has(t));
  const seen = new Set();
  for (const t of own) {
    if (t.targets.length === 0 || seen.has(chipKey(t))) continue;
    seen.add(chipKey(t));
    notes.push(transitionChip(t));
  }
  const entryExit = [];
  if (node.entry.length) {
    entryExit.push(
      `<span class="tchip entry" title="entry actions">entry: ${actionsHtml(node.entry)}</span>`,
    );
  }
  if (node.exit.length) {
    entryExit.push(
      `<span class="tchip exit" title="exit actions">exit: ${actionsHtml(node.exit)}</span>`,
    );
  }
  // A compound state has room beside its name: its own chips (the transitions its children
  // share, entry and exit) go in its head, which keeps the chart short enough to show the
  // strips. A leaf state is small: they are listed below its name.
  if (isLeaf) notes.push(...entryExit);
  else heads.push(...hoisted, ...entryExit);
  const selfTransitions = own.filter((t) => t.targets.length === 0);
  if (selfTransitions.length) notes.push(handledHereChip(selfTransitions));
  const notesHtml = notes.length ? `<div class="st-notes">${notes.join('')}</div>` : '';
  const attrs = `data-machine="${esc(env.machine)}" data-state="${esc(node.key)}" data-id="${esc(node.id)}"`;
  const title = node.description ? ` title="${esc(node.description)}"` : '';
  return `<div class="${classes.join(' ')}" style="--sc:${color}" ${attrs}${title}><div class="st-head">${head}${heads.join('')}</div>${notesHtml}${body}</div>`;
}

/**
 * The actors a state runs, as chips in its head: invoked non-machine actors, and on the task's
 * root the checkpoint writers it spawned (they are in no invoke list).
 *
 * @param {StateDef} node
 * @param {DrawEnv} env
 */
function invokeChips(node, env) {
  /** @type {string[]} */
  const heads = [];
  for (const inv of node.invoke) {
    const path = env.path ? `${env.path}/${inv.id}` : inv.id;
    const actor = env.task.actors.get(path);
    const st = actor ? actor.status : '';
    // Invoked machines are drawn as strips below the chart; only other actors get a chip.
    if ((actor && actor.def) || store.idToDef.has(inv.id)) continue;
    heads.push(
      `<span class="inv" title="invokes ${esc(inv.src)}${actor ? ` (${esc(actor.status)})` : ''}"><span class="dot ${esc(st)}"></span>${esc(inv.id)}</span>`,
    );
  }
  if (env.isRoot && !env.child) {
    for (const a of env.task.actors.values()) {
      if (a.parent === '' && /^checkpoint-/.test(a.id)) {
        heads.push(
          `<span class="inv spawned" title="checkpoint writer (spawned)"><span class="dot ${esc(a.status)}"></span>${esc(a.id)}</span>`,
        );
      }
    }
  }
  return heads;
}

/**
 * A transition every child of a flow shares (each stage's `error → failed`, with the same
 * actions) is shown once, on the parent, as `from any`; it is marked covered for the children.
 *
 * @param {StateDef[]} flow
 * @param {DrawEnv} env
 */
function hoistShared(flow, env) {
  if (flow.length < 2) return [];
  const keyOf = (/** @type {TransitionDef} */ t) =>
    `${shortEvent(t.event)}→${t.targets.join(',')}/${t.actions.join(',')}`;
  /** @type {Map<string, { t: TransitionDef; hits: Set<number> }>} */
  const shared = new Map();
  flow.forEach((c, k) => {
    for (const t of c.transitions) {
      if (env.covered.has(t) || t.targets.length === 0) continue;
      const key = keyOf(t);
      const entry = shared.get(key) ?? { t, hits: new Set() };
      entry.hits.add(k);
      shared.set(key, entry);
    }
  });
  /** @type {string[]} */
  const chips = [];
  for (const { t, hits } of shared.values()) {
    if (hits.size !== flow.length) continue;
    for (const c of flow) {
      for (const u of c.transitions) if (keyOf(u) === keyOf(t)) env.covered.add(u);
    }
    const from = flow.map((c) => c.key).join(', ');
    const actions = t.actions.length ? ` / ${t.actions.join(', ')}` : '';
    chips.push(transitionChip(t, ' <i>from any</i>', `from each of: ${from}${actions}`));
  }
  return chips;
}

/**
 * Invoked machines in definition order, depth first: fetch, gap, drain for a task.
 *
 * @param {StateDef} node
 * @param {string} path
 * @param {{ id: string; path: string }[]} [out]
 */
function invokedMachines(node, path, out = []) {
  for (const inv of node.invoke) {
    if (store.idToDef.has(inv.id))
      out.push({ id: inv.id, path: path ? `${path}/${inv.id}` : inv.id });
  }
  for (const c of node.states) invokedMachines(c, path, out);
  return out;
}

/**
 * One invoked machine as a strip: its states in a row, the active one lit.
 *
 * @param {TaskView} task
 * @param {{ id: string; path: string }} entry
 */
function renderStrip(task, entry) {
  const def = store.defs.get(store.idToDef.get(entry.id) ?? '');
  if (!def) return '';
  const actor = task.actors.get(entry.path);
  const status = actor ? actor.status : '';
  /** @type {DrawEnv} */
  const env = {
    task,
    path: entry.path,
    active: actor ? activeIds(def.root.id, actor.value) : new Set(),
    status,
    machine: def.key,
    covered: new Set(),
    child: true,
  };
  const states = def.root.states.length ? def.root.states : [def.root];
  /** @type {string[]} */
  const parts = [];
  states.forEach((c, k) => {
    if (k > 0) parts.push(arrowHtml(linksBetween(states[k - 1], c), { small: true }));
    parts.push(renderStripState(c, env));
  });
  const statusText = actor ? status : 'not started';
  return `<div class="strip" data-machine="${esc(def.key)}" data-status="${esc(status || 'idle')}" style="--sc:${stateColor(def.key, '')}">
      <div class="strip-head" title="${esc(def.description || '')}"><span class="dot ${esc(status)}"></span><b>${esc(entry.id)}</b><span class="st-type">${esc(statusText)}</span></div>
      <div class="strip-body">${parts.join('')}</div></div>`;
}

/**
 * @param {StateDef} node
 * @param {DrawEnv} env
 */
function renderStripState(node, env) {
  const isActive = env.active.has(node.id);
  const classes = ['st', 'mini', node.type];
  if (isActive) classes.push('active', 'leaf');
  if (isActive && env.status === 'stopped') classes.push('was');
  if (isActive && env.status === 'error') classes.push('errored');
  // The actor each state invokes (the stage's promise body), as a status dot.
  const dots = node.invoke
    .map((inv) => {
      const a = env.task.actors.get(`${env.path}/${inv.id}`);
      return `<span class="dot ${esc(a ? a.status : '')}" title="${esc(inv.id)}${a ? `: ${esc(a.status)}` : ''}"></span>`;
    })
    .join('');
  const attrs = `data-machine="${esc(env.machine)}" data-state="${esc(node.key)}" data-id="${esc(node.id)}"`;
  const title = node.description ? ` title="${esc(node.description)}"` : '';
  return `<div class="${classes.join(' ')}" ${attrs}${title}><div class="st-head">${dots}<span class="st-name">${esc(node.key)}</span></div></div>`;
}

/**
 * @param {StateDef} node
 * @param {string | undefined} id
 * @returns {StateDef | undefined}
 */
function findState(node, id) {
  if (node.id === id) return node;
  for (const c of node.states) {
    const f = findState(c, id);
    if (f) return f;
  }
  return undefined;
}

/** @param {TaskView | undefined} task */
export function renderChart(task) {
  const host = $('task-chart');
  $('chart-task').textContent = task ? task.key : '';
  const root = task && task.actors.get('');
  const def = root && root.def !== undefined ? store.defs.get(root.def) : undefined;
  if (!task || !def) {
    setHTML(
      host,
      `<div class="empty">${task ? 'no definition received for this task' : 'waiting for a task…'}</div>`,
    );
    setHTML($('state-desc'), '');
    return;
  }
  const active = activeIds(def.root.id, task.value);
  const chart = renderMachine(def, { task, path: '', active, status: task.status, child: false });
  const strips = invokedMachines(def.root, '')
    .map((entry) => renderStrip(task, entry))
    .join('');
  setHTML(host, `${chart}<div class="strips">${strips}</div>`);
  const node = findState(def.root, [...active].pop());
  let text = `<b>${esc(task.leaf || '…')}</b>`;
  if (node && node.description) text += ` — ${esc(node.description)}`;
  if (task.status !== 'active' && task.ctx.cause) {
    text += ` · <span style="color:${C.failed}">${esc(errText(task.ctx.cause))}</span>`;
  }
  setHTML($('state-desc'), text);
}
