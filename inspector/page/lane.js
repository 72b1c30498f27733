// @ts-check
// The ownership lane: one row per spill resource, one column per task snapshot, colored by
// owner under a band of the task's state. It shows the hand-offs, what owners released (○) and
// what the registry closed when the task ended (✕), and names the event at each move.

/** @import { ResourceId } from '../protocol.ts' */
/** @import { Step, TaskView } from './model.js' */

import { $, byId, esc, setHTML, sizeOf } from './dom.js';
import { OWNERSHIP_MOVES, isOwnershipEvent } from './events.js';
import { store } from './model.js';
import { C, ownerColor, stateColor } from './palette.js';

/** Row order: the task's own resources in the order they appear, then snapshots by id. */
const order = (/** @type {string} */ r) =>
  r === 'taskDir'
    ? 0
    : r === 'fetchedState'
      ? 1
      : r === 'drainer'
        ? 2
        : 3 + (Number(r.split('-')[1]) || 0);

/** @type {ResourceId[]} Always shown, so every task's lane reads the same. */
const BASE_ROWS = ['taskDir', 'fetchedState', 'drainer'];

/** The legend in the panel's title: which color is which owner. */
export function renderLegend() {
  const items = [
    ['fetch', C.fetch],
    ['gap', C.gap],
    ['drain', C.drain],
    ['checkpoint-N', C.checkpoint],
    ['closed by registry', C.failed],
  ];
  setHTML(
    $('owner-legend'),
    items.map(([n, c]) => `<span><i style="background:${c}"></i>${esc(n)}</span>`).join(''),
  );
}

/** @param {TaskView | undefined} task */
export function renderLane(task) {
  const svg = byId('lane', SVGSVGElement);
  const { W, H } = sizeOf(svg);
  if (!task || task.steps.length === 0 || W < 50) {
    setHTML(svg, `<text x="12" y="22">${task ? 'no snapshots yet' : 'waiting for a task…'}</text>`);
    return;
  }
  const steps = task.steps;
  // Paused: the lane keeps the width of the whole task, the rest is still to come.
  const full = store.live.tasks.get(task.key);
  const total = Math.max(steps.length, full ? full.steps.length : 0);
  /** @type {Set<string>} */
  const resources = new Set(BASE_ROWS);
  for (const s of steps) {
    for (const r of Object.keys(s.ownership)) resources.add(r);
    for (const r of s.closed) resources.add(r);
  }
  const rows = [...resources].sort((a, b) => order(a) - order(b));
  const L = 112;
  const R = 130;
  const top = 6;
  const stateH = 20;
  const bottom = 18;
  const n = rows.length;
  const rowH = Math.max(16, Math.min(28, (H - top - stateH - 8 - bottom) / n));
  const colW = (W - L - R) / Math.max(total, 1);
  const x = (/** @type {number} */ k) => L + k * colW;
  const y0 = top + stateH + 8;
  const out = [
    ...phaseBand(steps, x, top, stateH),
    ...rows.flatMap((res, ri) => resourceRow(res, steps, x, y0 + ri * rowH, rowH, W - R)),
    ...moveMarks(steps, x, y0, n * rowH),
  ];
  // Where the cursor is when looking back; the rest of the task is still to come.
  if (total > steps.length) {
    const xc = x(steps.length);
    out.push(
      `<line x1="${xc}" x2="${xc}" y1="${top}" y2="${y0 + n * rowH}" stroke="${C.gap}" stroke-width="2"/>`,
    );
  }
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  setHTML(svg, out.join(''));
}

/**
 * The band of the task's state at each step.
 *
 * @param {Step[]} steps
 * @param {(k: number) => number} x
 * @param {number} top
 * @param {number} stateH
 */
function phaseBand(steps, x, top, stateH) {
  const out = [];
  let k0 = 0;
  for (let k = 1; k <= steps.length; k++) {
    if (k === steps.length || steps[k].leaf !== steps[k0].leaf) {
      const leaf = steps[k0].leaf;
      const w = x(k) - x(k0);
      const color = stateColor('task', leaf);
      out.push(
        `<rect x="${x(k0) + 0.5}" y="${top}" width="${Math.max(1, w - 1)}" height="${stateH}" rx="3" fill="${color}" fill-opacity="0.22" stroke="${color}" stroke-opacity="0.6" data-phase="${esc(leaf)}"><title>${esc(leaf)}</title></rect>`,
      );
      if (w > 40) {
        out.push(
          `<text x="${x(k0) + 6}" y="${top + 14}" style="fill:${color};font-weight:600">${esc(leaf)}</text>`,
        );
      }
      k0 = k;
    }
  }
  out.push(`<text class="rowlbl" x="8" y="${top + 14}">state</text>`);
  return out;
}

/**
 * Who owns `res` at this step (rows are plain strings: a task may own `snapshot-N`).
 *
 * @param {Step} step
 * @param {string} res
 * @returns {string | null}
 */
const ownerAt = (step, res) => Object.entries(step.ownership).find(([r]) => r === res)?.[1] ?? null;

/**
 * One resource's row: a segment per owner, and a mark where it left the ownership map.
 *
 * @param {string} res
 * @param {Step[]} steps
 * @param {(k: number) => number} x
 * @param {number} y
 * @param {number} rowH
 * @param {number} right
 */
function resourceRow(res, steps, x, y, rowH, right) {
  /** @type {string[]} */
  const out = [];
  out.push(
    `<line class="grid" x1="${x(0)}" x2="${right}" y1="${y + rowH / 2}" y2="${y + rowH / 2}" stroke-dasharray="2 4"/>`,
  );
  out.push(`<text class="rowlbl" x="8" y="${y + rowH / 2 + 4}">${esc(res)}</text>`);
  const h = rowH - 6;
  let start = -1;
  /** @type {string | null} */
  let owner = null;
  const flushSeg = (/** @type {number} */ end) => {
    if (owner === null) return;
    const w = x(end) - x(start);
    out.push(
      `<rect x="${x(start) + 1}" y="${y + 3}" width="${Math.max(2, w - 2)}" height="${h}" rx="4" fill="${ownerColor(owner)}" data-resource="${esc(res)}" data-owner="${esc(owner)}" data-from="${start}" data-to="${end}"><title>${esc(res)} owned by ${esc(owner)} (steps ${start + 1}–${end})</title></rect>`,
    );
    if (w > owner.length * 7 + 10) {
      out.push(
        `<text class="lbl" x="${x(start) + 7}" y="${y + 3 + h / 2 + 4}">${esc(owner)}</text>`,
      );
    }
  };
  for (let k = 0; k < steps.length; k++) {
    const o = ownerAt(steps[k], res);
    if (o === owner) continue;
    flushSeg(k);
    if (owner !== null && o === null) out.push(goneMark(res, steps[k], x(k) + 7, y + rowH / 2));
    start = k;
    owner = o;
  }
  // Still owned at the last step shown: the segment runs to the cursor.
  if (owner !== null) flushSeg(steps.length);
  return out;
}

/**
 * The resource is gone at this step: closed by the registry, handed on, or released.
 *
 * @param {string} res
 * @param {Step} step
 * @param {number} cx
 * @param {number} cy
 */
function goneMark(res, step, cx, cy) {
  if (step.closed.some((r) => r === res)) {
    return `<g data-closed-by-registry="${esc(res)}"><line x1="${cx - 5}" y1="${cy - 5}" x2="${cx + 5}" y2="${cy + 5}" stroke="${C.failed}" stroke-width="2.5"/><line x1="${cx - 5}" y1="${cy + 5}" x2="${cx + 5}" y2="${cy - 5}" stroke="${C.failed}" stroke-width="2.5"/><text x="${cx + 9}" y="${cy + 4}" style="fill:${C.failed};font-weight:600">closed by registry</text><title>${esc(res)}: closed by the task's registry when the task ended</title></g>`;
  }
  const move = isOwnershipEvent(step.cause) ? OWNERSHIP_MOVES[step.cause] : undefined;
  if (move && move.move === 'hand-on' && move.from === res) {
    return `<text x="${cx + 4}" y="${cy + 4}" style="fill:${C.muted}">↳ ${esc(move.to)}</text>`;
  }
  return `<circle cx="${cx}" cy="${cy}" r="4" fill="none" stroke="${C.muted}" stroke-width="1.5" data-released="${esc(res)}"><title>${esc(res)} released by its owner</title></circle>`;
}

/**
 * Steps where ownership moved, labeled by the event that moved it.
 *
 * @param {Step[]} steps
 * @param {(k: number) => number} x
 * @param {number} y0
 * @param {number} height
 */
function moveMarks(steps, x, y0, height) {
  const out = [];
  const yAxis = y0 + height + 12;
  let lastEnd = -Infinity;
  for (let k = 0; k < steps.length; k++) {
    const moved = isOwnershipEvent(steps[k].cause);
    if (!moved && steps[k].closed.length === 0) continue;
    const xx = x(k);
    out.push(
      `<line x1="${xx}" x2="${xx}" y1="${y0}" y2="${y0 + height}" stroke="${C.line}" stroke-width="1"/>`,
    );
    const label = steps[k].closed.length && !moved ? 'registry closes' : steps[k].cause;
    if (xx - 2 > lastEnd) {
      out.push(`<text class="axis" x="${xx + 2}" y="${yAxis}">${esc(label)}</text>`);
      lastEnd = xx + 2 + label.length * 6.2;
    }
  }
  return out;
}
