/**
 * The words for where a recovery is, declared once: the stages (Flink's fetch, the mailbox gap,
 * drain), the task machine's state tags (the stages and `running`), and from them the owners
 * (events.ts) and the progress stages (progress.ts).
 */

/** The three stages of a recovery, in order. */
export const STAGE_NAMES = ['fetch', 'gap', 'drain'] as const;

/**
 * One stage of a recovery: `'fetch'` (checkpoint → spill files), `'gap'` (the mailbox mails
 * that build the drainer), `'drain'` (spill files → channels).
 *
 * @example
 * ```ts
 * const next = (stage: StageName) => STAGE_NAMES[STAGE_NAMES.indexOf(stage) + 1];
 * ```
 */
export type StageName = (typeof STAGE_NAMES)[number];

/** The task machine's state tags, in the order a recovery passes them. */
export const STAGE_TAGS = [...STAGE_NAMES, 'running'] as const;

/**
 * The stage a state belongs to, as a state tag.
 *
 * @example
 * ```ts
 * recovery.actor.getSnapshot().hasTag('drain');
 * ```
 */
export type StageTag = (typeof STAGE_TAGS)[number];

/** The task machine's restoring state for each stage (`alive.restoring.<state>`). */
export const RESTORING_STATES = { fetch: 'fetching', gap: 'gap', drain: 'draining' } as const;

/** How a task ends: the task machine's final states. */
export const ENDINGS = ['finished', 'failed', 'cancelled'] as const;

/**
 * The task's state value: a stage while restoring, `running` once recovered, then one ending.
 * Declared here, free of XState's types, for the package's types; a test holds it equal to the
 * value type XState derives from the task machine.
 *
 * @example
 * ```ts
 * const value: TaskStateValue = { alive: { restoring: 'draining' } };
 * ```
 */
export type TaskStateValue =
  | (typeof ENDINGS)[number]
  | { alive: 'running' | { restoring: (typeof RESTORING_STATES)[StageName] } };
