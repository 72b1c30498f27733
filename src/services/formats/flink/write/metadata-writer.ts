/**
 * Writes a Flink `_metadata` of the source's version (3–6) with new channel-state handles and
 * everything else carried over byte for byte: the header, master states, each operator's
 * head (name, uid, id, parallelism, coordinator state, subtask count), each subtask's index and
 * its operator and keyed state handles, and the v4+ `CheckpointProperties` trailer are copied
 * from the source's bytes at the ranges the reader recorded, never re-encoded — so a handle
 * kind Spillway only skips (changelog, incremental, file-merging operator state) is kept
 * exactly as Flink wrote it. Only each subtask's two channel handle collections are written
 * anew, in Flink's layout for the version (`MetadataV3Serializer.serializeSubtaskState`: input
 * handles, then output handles).
 */
import { InternalError } from '../../../errors.ts';
import type {
  FlinkByteRange,
  FlinkCheckpointMetadata,
  FlinkOperatorState,
  FlinkSubtaskState,
} from '../metadata-types.ts';
import { DataOutput } from './data-output.ts';
import { writeChannelHandles, type ChannelHandleToWrite } from './channel-handles.ts';

/** One subtask's new channel handles. */
export interface SubtaskChannelHandles {
  readonly input: readonly ChannelHandleToWrite[];
  readonly output: readonly ChannelHandleToWrite[];
}

/**
 * The new `_metadata`: `source` is the original file's bytes, `metadata` what the reader made
 * of them (with its layout), `channels` the handles to write for each subtask with state.
 *
 * @throws InternalError when `metadata` has no layout or its ranges do not tile `source`
 *   (a model not read from these bytes).
 * @example
 * ```ts
 * const bytes = writeFlinkMetadata(original, meta, (op, st) => ({ input: [], output: [] }));
 * ```
 */
export function writeFlinkMetadata(
  source: Buffer,
  metadata: FlinkCheckpointMetadata,
  channels: (operator: FlinkOperatorState, subtask: FlinkSubtaskState) => SubtaskChannelHandles,
): Buffer {
  const out = new DataOutput(source.length + 4096);
  let expected = 0;
  // Each copied range must start where the previous part ended: the ranges tile the file.
  const copy = (range: FlinkByteRange | undefined, what: string): void => {
    if (range === undefined || range.start !== expected || range.end > source.length) {
      throw new InternalError(
        `writeFlinkMetadata: the ${what} range does not follow byte ${expected} of the source`,
      );
    }
    out.bytes(source.subarray(range.start, range.end));
    expected = range.end;
  };
  copy(metadata.layout?.head, 'header');
  for (const operator of metadata.operators) {
    copy(operator.layout?.head, `operator ${operator.id} head`);
    // The file's order, not the model's (the reader sorts subtasks by index).
    const inFileOrder = [...operator.subtasks].sort(
      (a, b) => (a.layout?.head.start ?? 0) - (b.layout?.head.start ?? 0),
    );
    for (const subtask of inFileOrder) {
      copy(subtask.layout?.head, `operator ${operator.id} subtask ${subtask.index} head`);
      if (subtask.finished) continue;
      const handles = channels(operator, subtask);
      writeChannelHandles(out, metadata.version, 'input', handles.input);
      writeChannelHandles(out, metadata.version, 'output', handles.output);
      expected = subtask.layout!.channels.end;
    }
  }
  copy(metadata.layout?.trailer, 'trailer');
  if (expected !== source.length) {
    throw new InternalError(`writeFlinkMetadata: ${source.length - expected} source byte(s) left`);
  }
  return out.toBuffer();
}
