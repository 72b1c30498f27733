/**
 * The options and the result of `rewriteFlinkCheckpoint` (rewrite.ts): a module of their own,
 * shared by the function and its work (rewrite-run.ts), which rewrite.ts loads on first use.
 */
import type { SourceOptions } from '../../../locations/source.ts';
import type { FlinkPathOptions } from '../paths.ts';
import type { FlinkDropSelector } from './selectors.ts';
import type { FlinkDroppedElement } from './subtask-rewrite.ts';

/** Options of `rewriteFlinkCheckpoint`. */
export interface RewriteFlinkCheckpointOptions extends FlinkPathOptions {
  /** The source: a `chk-N` directory or its `_metadata` (local, `http(s)://`, `s3://`). */
  checkpoint: string;
  /** NEWDIR: a local directory that does not exist or is empty. */
  out: string;
  /** What to drop: positions, selector text, keys, predicates. Nothing: a plain copy. */
  drop?: readonly FlinkDropSelector[] | undefined;
  /**
   * Per input gate, its upstream operator (id, uid, name): a record cut at the end of an input
   * channel is then dropped on both sides. Default: the checkpoint's only operator with output
   * state, if there is exactly one (as `flink records`).
   */
  upstream?: Readonly<Record<number, string>> | undefined;
  /** A selector that matches nothing is not an error. */
  allowEmpty?: boolean | undefined;
  /** Work out what would be dropped and the new sizes; write nothing. */
  dryRun?: boolean | undefined;
  signal?: AbortSignal | undefined;
  remote?: SourceOptions | undefined;
  onProgress?: ((progress: FlinkRewriteProgress) => void) | undefined;
}

/** Progress of a rewrite (payload bytes of the source's channel state). */
export interface FlinkRewriteProgress {
  readonly bytesRead: number;
  readonly bytesDeclared: number;
  readonly dropped: number;
}

/** A subtask's channel state sizes before and after, as Flink counts them (lengths included). */
export interface FlinkRewriteSubtask {
  readonly operator: string;
  readonly subtask: number;
  readonly inputBytes: { readonly before: number; readonly after: number };
  readonly outputBytes: { readonly before: number; readonly after: number };
}

/** What `rewriteFlinkCheckpoint` did (or, dry, would do). */
export interface FlinkRewriteResult {
  /** NEWDIR, absolute (nothing there after a dry run). */
  readonly out: string;
  readonly version: number;
  readonly checkpointId: number;
  readonly dryRun: boolean;
  readonly dropped: readonly FlinkDroppedElement[];
  readonly subtasks: readonly FlinkRewriteSubtask[];
  /** Relative state files copied into NEWDIR. */
  readonly copiedFiles: readonly string[];
  /** Bytes of the new `_metadata`. */
  readonly metadataBytes: number;
  /** Bytes of new channel-state files. */
  readonly channelFileBytes: number;
}
