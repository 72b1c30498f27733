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
