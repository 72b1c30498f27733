// @ts-check
// How a transition reads on the statechart: its event and its target, as a chip in its source
// state or as the label of an arrow between two states.

/** @import { TransitionDef } from '../protocol.ts' */

import { esc } from './dom.js';
import { shortEvent } from './events.js';
import { lastSeg } from './format.js';

/** `FETCH.HANDOFF [guard] — description`: everything about a transition, for a title. */
export function transitionTitle(/** @type {TransitionDef} */ t) {
  const guard = t.guard ? ` [${t.guard}]` : '';
  return `${t.event}${guard}${t.description ? ` — ${t.description}` : ''}`;
}

/**
 * A chip for a transition to another state: `CANCEL → cancelled`.
 *
 * @param {TransitionDef} t
 * @param {string} [suffix] HTML after the target, e.g. `from any`
 * @param {string} [title]
 */
export function transitionChip(t, suffix = '', title = transitionTitle(t)) {
  const text = `<b>${esc(shortEvent(t.event))}</b> → ${esc(t.targets.map(lastSeg).join(', '))}${suffix}`;
  return `<span class="tchip${t.guard ? ' guarded' : ''}" title="${esc(title)}">${text}</span>`;
}

/** The identity of a chip: two transitions that read the same are listed once. */
export const chipKey = (/** @type {TransitionDef} */ t) =>
  `${shortEvent(t.event)}→${t.targets.join(',')}`;

/**
 * The one chip of the events a state handles without leaving it.
 *
 * @param {TransitionDef[]} selfTransitions targetless transitions, in definition order
 */
export function handledHereChip(selfTransitions) {
  const events = [...new Set(selfTransitions.map((t) => t.event))];
  return `<span class="tchip on" title="handled here without leaving the state">${events.map((e) => esc(e)).join(' · ')}</span>`;
}

/**
 * An arrow between two states, labeled with its events (`done`).
 *
 * @param {TransitionDef[]} links the transitions the arrow stands for
 * @param {{ small?: boolean }} [options] `small`: an arrow in a strip
 */
export function arrowHtml(links, { small = false } = {}) {
  const label = [...new Set(links.map((t) => shortEvent(t.event)))].join(' · ');
  const classes = ['arrow', small ? 'small' : '', links.length ? '' : 'none'];
  return `<div class="${classes.filter(Boolean).join(' ')}"><span class="al">${esc(label)}</span><span class="ah">→</span></div>`;
}
