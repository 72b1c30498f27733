// @ts-check
// What the page knows about event names. Task event names come typed from the protocol
// (`TaskEventType`, `OwnershipEventType`, derived from src/machines/events.ts), so a name that
// is misspelled here, or no longer exists in the product, fails tsc. The `xstate.*` prefixes are
// XState's own naming of the events it generates.

/** @import { OwnershipEventType, ResourceId } from '../protocol.ts' */

/**
 * XState's own bookkeeping (init, stop, promise resolutions, `xstate.after`): hidden unless
 * "xstate internals" is on. An actor's done or error event is not internal: it moves a stage.
 *
 * @param {string} type
 */
export const isInternal = (type) =>
  type.startsWith('xstate.') &&
  !type.startsWith('xstate.done.actor.') &&
  !type.startsWith('xstate.error.actor.');

/**
 * An event as a transition label: `done`, `error` and `after` for XState's generated events.
 *
 * @param {string} type
 */
export function shortEvent(type) {
  if (type.startsWith('xstate.done.actor.')) return 'done';
  if (type.startsWith('xstate.error.actor.')) return 'error';
  if (type.startsWith('xstate.after')) return 'after';
  return type;
}

/**
 * What an ownership event does, as the lane draws it: a new owner takes a resource, a resource
 * is handed on as another one (the raw task dir becomes the fetched state), or its owner
 * releases it.
 *
 * @typedef {{ move: 'take' }
 *   | { move: 'hand-on'; from: ResourceId; to: ResourceId }
 *   | { move: 'release' }} OwnershipMove
 */

/**
 * Every ownership event with what it does. A `Record` over the protocol's type: tsc fails if one
 * is missing here or named wrong.
 *
 * @type {Readonly<Record<OwnershipEventType, OwnershipMove>>}
 */
export const OWNERSHIP_MOVES = {
  'SPILL.OWNED': { move: 'take' },
  'FETCH.HANDOFF': { move: 'hand-on', from: 'taskDir', to: 'fetchedState' },
  'DRAINER.READY': { move: 'take' },
  'SNAPSHOT.OWNED': { move: 'take' },
  'SPILL.RELEASED': { move: 'release' },
};

/**
 * @param {string} type any event type (records carry plain strings)
 * @returns {type is OwnershipEventType}
 */
export const isOwnershipEvent = (type) => Object.hasOwn(OWNERSHIP_MOVES, type);
