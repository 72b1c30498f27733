/**
 * The options and report of `recoverToDirectory` (recover-to-directory.ts), apart from it so
 * that its runner (recover-to-directory-run.ts) and the CLI name them without an import circle.
 */
import type { RecoverOptions } from './recovery-types.ts';
import type { DirectoryResult } from './services/outputs/recover-to-directory.ts';
import type { RescaleOption } from './services/rescale/rescale-options.ts';
import type { RescaleTarget } from './services/rescale/key-groups.ts';

/**
 * Every new subtask of a rescaled restore at once: `rescale` without `subtask` writes
 * `subtask-<i>/…` for each `i` in `0 … parallelism-1`.
 */
export type RescaleAll = Omit<RescaleTarget, 'subtask'> & { maxRecordBytes?: number };

/**
 * Options of {@link recoverToDirectory}: a recovery's options without `channels` (every channel
 * goes to its file in `out`), plus the directory's.
 *
 * @example
 * ```ts
 * const options: RecoverToDirectoryOptions = { checkpoint: 'job.spwc', out: 'recovered' };
 * ```
 */
export interface RecoverToDirectoryOptions extends Omit<
  RecoverOptions,
  'channels' | 'autoFinish' | 'rescale'
> {
  /** The output dir: created if missing; its files appear all at once or not at all (G10). */
  out: string;
  /** Replace channel files `out` already holds (by rename, never through a link). */
  overwrite?: boolean | undefined;
  /**
   * A Flink checkpoint: every operator and subtask with channel state, input and output, into
   * `out/<operator>/subtask-<n>/` (`<operator>`: its uid where the metadata has a plain one,
   * else its id). `flink` may then be left out, or give only the path rules (`allowPaths`,
   * `relocate`): its operator and subtask are ignored.
   */
  all?: boolean | undefined;
  /** As {@link RecoverOptions.rescale}; without `subtask`, every new subtask (see {@link RescaleAll}). */
  rescale?: RescaleOption | RescaleAll | undefined;
  /** Decisions about leftovers of earlier runs in `out`, one line each. */
  log?: ((line: string) => void) | undefined;
  /** An interrupted earlier publish restored or completed, one line each. */
  notice?: ((line: string) => void) | undefined;
}

/** What {@link recoverToDirectory} did: the counts per subtask and side, and added up. */
export type DirectoryReport = DirectoryResult;
