/**
 * `rewriteFlinkCheckpoint`: a copy of a Flink checkpoint that a real Flink restores (`-s
 * NEWDIR`), minus the elements the caller drops (DESIGN §8 "Rewriting a checkpoint").
 *
 * - `_metadata` of the source's version, every non-channel byte carried over verbatim
 *   (metadata-writer.ts), new channel handles as Flink records them.
 * - Channel state rewritten into new files in NEWDIR (channel-state-writer.ts); inline
 *   channels stay inline. Files the source's keyed or operator state names *relatively* (its
 *   `chk-N` directory's own files) are copied into NEWDIR, so that their handles' bytes stay
 *   exactly as they were and NEWDIR does not depend on the source's `chk-N`; files named by
 *   absolute path (shared incremental state, file-merging segments) are referenced where
 *   they are, as Flink itself does for a restored checkpoint.
 * - The source is only read; NEWDIR is staged and renamed into place (staging.ts).
 *
 * Here the options, the result and the errors' mapping; the work is rewrite-run.ts, loaded on
 * the first call (importing the package does not load it).
 */
import { AbortedError, addSuppressed, ours } from '../../../errors.ts';
import type { FlinkRewriteResult, RewriteFlinkCheckpointOptions } from './rewrite-types.ts';

export type { FlinkDropSelector, FlinkKeyDrop, FlinkRewriteElement } from './selectors.ts';
export type { FlinkDroppedElement } from './subtask-rewrite.ts';
export type {
  FlinkRewriteProgress,
  FlinkRewriteResult,
  FlinkRewriteSubtask,
  RewriteFlinkCheckpointOptions,
} from './rewrite-types.ts';

/**
 * Writes NEWDIR: the checkpoint at `checkpoint` with the elements `drop` names removed, in a
 * form Flink restores (`flink run -s NEWDIR …`). NEWDIR appears whole or not at all.
 *
 * @throws RewriteRefusedError (bad selector, no match, partial record, unusable NEWDIR),
 *   UnknownOperatorError, CorruptCheckpointError, CheckpointPathError, AbortedError.
 * @example
 * ```ts
 * const result = await rewriteFlinkCheckpoint({
 *   checkpoint: '/ckpt/6f1e…/chk-12',
 *   out: '/ckpt/fixed',
 *   drop: ['slow-join/1/input/0/1/42'],
 * });
 * console.log(result.dropped); // [{ position: 'b04c…/1/input/0/1/42', kind: 'record', bytes: 25 }]
 * ```
 */
export async function rewriteFlinkCheckpoint(
  options: RewriteFlinkCheckpointOptions,
): Promise<FlinkRewriteResult> {
  const { signal } = options;
  const throwIfAborted = (): void => {
    if (signal?.aborted === true) {
      throw new AbortedError('flink rewrite aborted', { cause: signal.reason });
    }
  };
  try {
    // The work is loaded on first use: importing the package does not pay for it.
    const { rewrite } = await import('./rewrite-run.ts');
    return await rewrite(options, throwIfAborted);
  } catch (error) {
    // An abort surfaces as an AbortedError whatever the read in progress threw; every other
    // failure as a Spillway error (a raw ENOSPC becomes an IoError), the first cause kept.
    if (signal?.aborted === true && !(error instanceof AbortedError)) {
      const aborted = new AbortedError('flink rewrite aborted', { cause: signal.reason });
      addSuppressed(aborted, error);
      throw aborted;
    }
    throw ours(error);
  }
}
