/**
 * The `spillway flink ls` model (DESIGN §7): per operator its id, name, uid and parallelism, and
 * per subtask how many input channels and result subpartitions have a channel-state handle and
 * how many bytes those hold, as Flink's `getStateSize()` counts them (entry lengths included).
 */
import { CancelledError, SpillwayError, ours } from '../../errors.ts';
import type {
  FlinkChannelHandle,
  FlinkCheckpointMetadata,
  ReadFlinkMetadataOptions,
} from './metadata-types.ts';

export { resolveOperator, describeOperator } from './metadata-resolve.ts';

/** One subtask's channel state, as `flink ls --json` prints it. */
export interface FlinkSubtaskListing {
  index: number;
  finished: boolean;
  inputChannels: number;
  inputBytes: number;
  outputSubpartitions: number;
  outputBytes: number;
}

/** One operator, as `flink ls --json` prints it (name and uid: metadata v5+, when set). */
export interface FlinkOperatorListing {
  id: string;
  name?: string;
  uid?: string;
  parallelism: number;
  maxParallelism: number;
  subtasks: FlinkSubtaskListing[];
}

/** What `spillway flink ls --json` prints. */
export interface FlinkCheckpointListing {
  version: number;
  checkpointId: number;
  operators: FlinkOperatorListing[];
}

const bytesOf = (handles: readonly FlinkChannelHandle[]): number =>
  handles.reduce((sum, h) => sum + h.stateSize, 0);

/**
 * The listing of already-read metadata: operators in metadata order, subtasks ascending.
 *
 * @example
 * ```ts
 * const listing = listFlinkMetadata(await readFlinkMetadata('chk-17'));
 * ```
 */
export function listFlinkMetadata(meta: FlinkCheckpointMetadata): FlinkCheckpointListing {
  return {
    version: meta.version,
    checkpointId: meta.checkpointId,
    operators: meta.operators.map((op) => ({
      id: op.id,
      ...(op.name !== undefined ? { name: op.name } : {}),
      ...(op.uid !== undefined ? { uid: op.uid } : {}),
      parallelism: op.parallelism,
      maxParallelism: op.maxParallelism,
      subtasks: [...op.subtasks]
        .sort((a, b) => a.index - b.index)
        .map((s) => ({
          index: s.index,
          finished: s.finished,
          inputChannels: s.inputChannels.length,
          inputBytes: bytesOf(s.inputChannels),
          outputSubpartitions: s.outputSubpartitions.length,
          outputBytes: bytesOf(s.outputSubpartitions),
        })),
    })),
  };
}

/**
 * Lists a Flink checkpoint's operators and per-subtask channel state: `location` is a checkpoint
 * directory holding `_metadata` or the file itself, local, `http(s)://` or `s3://`.
 *
 * @throws CorruptCheckpointError for a malformed `_metadata` (file and byte offset); every
 * other failure is a `SpillwayError` too (`CheckpointPathError`, a remote error, `IoError`, a
 * `CancelledError` whose `cause` is the signal's reason).
 * @example
 * ```ts
 * const { operators } = await listFlinkCheckpoint('/ckpt/job/chk-17');
 * for (const op of operators) console.log(op.id, op.subtasks.map((s) => s.inputBytes));
 * ```
 */
export async function listFlinkCheckpoint(
  location: string,
  options: ReadFlinkMetadataOptions = {},
): Promise<FlinkCheckpointListing> {
  try {
    // The metadata reader is loaded on first use: importing the package does not pay for it.
    const { readFlinkMetadata } = await import('./metadata.ts');
    return listFlinkMetadata(await readFlinkMetadata(location, options));
  } catch (error) {
    // Every error leaving the library is ours (DESIGN §5): an abort is a CancelledError whose
    // cause is the signal's reason, a read's errno an IoError, anything else an InternalError.
    if (options.signal?.aborted === true && !(error instanceof SpillwayError)) {
      throw new CancelledError('listing the Flink checkpoint was cancelled', {
        cause: options.signal.reason,
      });
    }
    throw ours(error);
  }
}
