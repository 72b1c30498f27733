// @ts-check
// How a transition reads on the statechart: its event, its target, and the actions it runs.
// The actions are what a transition *does* (take a resource, hand it on, release it), so they
// are on the chip itself, not only in a tooltip.

/** @import { TransitionDef } from '../protocol.ts' */

import { esc } from './dom.js';
import { shortEvent } from './events.js';
import { lastSeg } from './format.js';

/**
 * An action with no name of its own: an XState action creator written inline (definitions.ts
 * reports it by its type, `xstate.assign`, `xstate.enqueueActions`) or an inline function.
 * Shown quieter than a named action, but shown: it is still what the transition does.
 *
 * @param {string} name
 */
const isInline = (name) => name.startsWith('xstate.') || name === 'inline';

/**
 * The actions of one transition as chip text: `handOffFetchedState`, or `assign, enqueueActions`
 * in italics for inline ones; '' if it runs none.
 *
 * @param {readonly string[]} actions
 */
export function actionsHtml(actions) {
  return actions
    .map((a) =>
      isInline(a)
        ? `<span class="act inline" title="inline ${esc(a)}">${esc(a.replace(/^xstate\./, ''))}</span>`
        : `<span class="act">${esc(a)}</span>`,
    )
    .join(', ');
}

/** `FETCH.HANDOFF [guard] / a, b — description`: everything about a transition, for a title. */
export function transitionTitle(/** @type {TransitionDef} */ t) {
  const actions = t.actions.length ? ` / ${t.actions.join(', ')}` : '';
  const guard = t.guard ? ` [${t.guard}]` : '';
  return `${t.event}${guard}${actions}${t.description ? ` — ${t.description}` : ''}`;
}

/**
 * A chip for a transition to another state: `CANCEL → cancelled / recordCancel`.
 *
 * @param {TransitionDef} t
 * @param {string} [suffix] HTML after the target, e.g. `from any`
 * @param {string} [title]
 */
export function transitionChip(t, suffix = '', title = transitionTitle(t)) {
  const acts = t.actions.length ? ` <span class="acts">/ ${actionsHtml(t.actions)}</span>` : '';
  const text = `<b>${esc(shortEvent(t.event))}</b> → ${esc(t.targets.map(lastSeg).join(', '))}${acts}${suffix}`;
  return `<span class="tchip${t.guard ? ' guarded' : ''}" title="${esc(title)}">${text}</span>`;
}

/** The identity of a chip: two transitions that read the same are listed once. */
export const chipKey = (/** @type {TransitionDef} */ t) =>
  `${t.event}→${t.targets.join(',')}/${t.actions.join(',')}`;

/**
 * The one chip of the events a state handles without leaving it: each event with its actions,
 * `SPILL.OWNED / takeTaskDir · FETCH.HANDOFF / handOffFetchedState`; guarded alternatives of
 * one event are joined by `|` (their event marked ⁕, as on guarded chips).
 *
 * @param {TransitionDef[]} selfTransitions targetless transitions, in definition order
 */
export function handledHereChip(selfTransitions) {
  /** @type {Map<string, TransitionDef[]>} */
  const byEvent = new Map();
  for (const t of selfTransitions) {
    const list = byEvent.get(t.event);
    if (list) list.push(t);
    else byEvent.set(t.event, [t]);
  }
  const items = [...byEvent].map(([event, alternatives], k) => {
    const guarded = alternatives.some((t) => t.guard) ? ' guarded' : '';
    const acts = alternatives.some((t) => t.actions.length)
      ? ` <span class="acts">/ ${alternatives.map((t) => actionsHtml(t.actions) || '–').join(' | ')}</span>`
      : '';
    // The separator stays with the event before it, so a wrapped line starts with an event.
    const sep = k < byEvent.size - 1 ? ' ·' : '';
    return `<span class="on-ev${guarded}"><b>${esc(event)}</b>${acts}${sep}</span>`;
  });
  const title = `handled here without leaving the state:\n${selfTransitions.map(transitionTitle).join('\n')}`;
  return `<span class="tchip on" title="${esc(title)}">${items.join(' ')}</span>`;
}

/**
 * The label of an arrow between two states: its events (`done`) and, below the arrow head, what
 * the transitions run. A strip stays one state high: its arrows name their actions in the
 * tooltip only.
 *
 * @param {TransitionDef[]} links the transitions the arrow stands for
 * @param {{ small?: boolean }} [options] `small`: an arrow in a strip
 */
export function arrowHtml(links, { small = false } = {}) {
  const label = [...new Set(links.map((t) => shortEvent(t.event)))].join(' · ');
  const actions = [...new Set(links.flatMap((t) => t.actions))];
  const acts = actions.length && !small ? `<span class="aa">${actionsHtml(actions)}</span>` : '';
  const title = links.length ? ` title="${esc(links.map(transitionTitle).join('\n'))}"` : '';
  const classes = ['arrow', small ? 'small' : '', acts ? 'acted' : '', links.length ? '' : 'none'];
  return `<div class="${classes.filter(Boolean).join(' ')}"${title}><span class="al">${esc(label)}</span><span class="ah">→</span>${acts}</div>`;
}
