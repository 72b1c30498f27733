/**
 * The ids of the task's actors that do their work on its mailbox or channel-IO executor. Each
 * names its mail or job after its id, the machines invoke them under it, and the task hooks
 * (task-hooks.ts) attach by it — so a renamed actor renames its mail with it, and a hook whose
 * actor is gone fails loudly (`checkHookTargets`) instead of silently never running.
 */

/** The stage actors of the task machine (its invoke ids), and the gap machine's mail actors. */
export const ACTOR_IDS = {
  /** Stage 1: submits one executor job of this name. */
  fetch: 'fetch',
  /** Stage 2: posts the three mails below, in order. */
  gap: 'gap',
  /** Stage 3: submits one executor job of this name. */
  drain: 'drain',
  requestPartitions: 'requestPartitions',
  buildDrainer: 'buildDrainer',
  installTrigger: 'installTrigger',
} as const;
