/**
 * Channel-state handles as Flink's serializers write them into `_metadata`: the v1 layout
 * (`ChannelStateHandleSerializerV1`, metadata v3–v5: subtask, the two channel-info ints,
 * offsets, state size, delegate) and v6's (`ChannelStateHandleSerializerV2`: a type byte; 1/2
 * the v1 layout, 3/4 a merged handle — subtask, summed state size, one delegate, then the
 * length-prefixed channel blob `AbstractMergedChannelStateHandle` builds). Delegates are the
 * stream handles of `MetadataV2V3SerializerBase.serializeStreamStateHandle` that channel state
 * is written as: inline bytes, a relative file, an absolute file. The reader is
 * `metadata-handles.ts`; the tags are the same.
 */
import { DataOutput } from './data-output.ts';

// MetadataV2V3SerializerBase's stream handle tags.
const BYTE_STREAM_STATE_HANDLE = 1;
const FILE_STREAM_STATE_HANDLE = 2;
const RELATIVE_STREAM_STATE_HANDLE = 6;

// ChannelStateHandleSerializerV2's tags.
const INPUT_CHANNEL_STATE_HANDLE = 1;
const RESULT_SUBPARTITION_STATE_HANDLE = 2;
const MERGED_INPUT_CHANNEL_STATE_HANDLE = 3;
const MERGED_RESULT_SUBPARTITION_STATE_HANDLE = 4;

/** Where a written channel handle's bytes are. */
export type ChannelDelegate =
  | { readonly kind: 'inline'; readonly name: string; readonly bytes: Uint8Array }
  | { readonly kind: 'relative'; readonly relativePath: string; readonly size: number }
  | { readonly kind: 'file'; readonly path: string; readonly size: number };

/**
 * One channel's handle to write. Handles that share a delegate object (`===`) and are `merged`
 * become one v6 merged handle, as Flink 2.x's `ChannelStateHelper` merges them.
 */
export interface ChannelHandleToWrite {
  readonly subtaskIndex: number;
  /** Input: gate index; output: partition index. */
  readonly gate: number;
  /** Input: channel index; output: subpartition index. */
  readonly channel: number;
  /** Each entry's offset in the delegate stream (at its int32 length). */
  readonly offsets: readonly number[];
  /** The entries' bytes, their 4-byte lengths included (Flink's `getStateSize()`). */
  readonly stateSize: number;
  readonly delegate: ChannelDelegate;
  /** v6 only: write it inside a merged handle. */
  readonly merged: boolean;
}

/** `serializeStreamStateHandle` for the kinds channel state is written as. */
export function writeStreamHandle(out: DataOutput, d: ChannelDelegate): void {
  switch (d.kind) {
    case 'inline':
      out.byte(BYTE_STREAM_STATE_HANDLE).utf(d.name).int32(d.bytes.length).bytes(d.bytes);
      return;
    case 'file':
      out.byte(FILE_STREAM_STATE_HANDLE).int64(d.size).utf(d.path);
      return;
    case 'relative':
      // The relative path first, then the size (the reverse of a FileStateHandle).
      out.byte(RELATIVE_STREAM_STATE_HANDLE).utf(d.relativePath).int64(d.size);
      return;
  }
}

/** The v1 layout after any type byte. */
function writeV1(out: DataOutput, h: ChannelHandleToWrite): void {
  out.int32(h.subtaskIndex).int32(h.gate).int32(h.channel).int32(h.offsets.length);
  for (const offset of h.offsets) out.int64(offset);
  out.int64(h.stateSize);
  writeStreamHandle(out, h.delegate);
}

/** A merged handle's channel blob: count, then per channel info, size, offsets. */
function mergedBlob(handles: readonly ChannelHandleToWrite[]): Buffer {
  const blob = new DataOutput(64 + handles.length * 64);
  blob.int32(handles.length);
  for (const h of handles) {
    blob.int32(h.gate).int32(h.channel).int64(h.stateSize).int32(h.offsets.length);
    for (const offset of h.offsets) blob.int64(offset);
  }
  return blob.toBuffer();
}

/**
 * Writes one subtask's input-channel (or result-subpartition) handle collection as the
 * metadata `version` does: an int32 count, then each handle. In v6 the merged ones are grouped
 * by delegate in order of first appearance, each group one merged handle.
 *
 * @example
 * ```ts
 * const out = new DataOutput();
 * writeChannelHandles(out, 6, 'input', [{ subtaskIndex: 0, gate: 0, channel: 1, offsets: [4],
 *   stateSize: 30, delegate: { kind: 'relative', relativePath: 'f', size: 34 }, merged: true }]);
 * ```
 */
export function writeChannelHandles(
  out: DataOutput,
  version: number,
  side: 'input' | 'output',
  handles: readonly ChannelHandleToWrite[],
): void {
  if (version < 6) {
    out.int32(handles.length);
    for (const h of handles) writeV1(out, h);
    return;
  }
  const items: (ChannelHandleToWrite | ChannelHandleToWrite[])[] = [];
  const groups = new Map<ChannelDelegate, ChannelHandleToWrite[]>();
  for (const h of handles) {
    if (!h.merged) {
      items.push(h);
      continue;
    }
    let group = groups.get(h.delegate);
    if (group === undefined) {
      group = [];
      groups.set(h.delegate, group);
      items.push(group);
    }
    group.push(h);
  }
  out.int32(items.length);
  for (const item of items) {
    if (!Array.isArray(item)) {
      out.byte(side === 'input' ? INPUT_CHANNEL_STATE_HANDLE : RESULT_SUBPARTITION_STATE_HANDLE);
      writeV1(out, item);
      continue;
    }
    const first = item[0]!;
    const size = item.reduce((sum, h) => sum + h.stateSize, 0);
    out.byte(
      side === 'input'
        ? MERGED_INPUT_CHANNEL_STATE_HANDLE
        : MERGED_RESULT_SUBPARTITION_STATE_HANDLE,
    );
    out.int32(first.subtaskIndex).int64(size);
    writeStreamHandle(out, first.delegate);
    const blob = mergedBlob(item);
    out.int32(blob.length).bytes(blob);
  }
}
