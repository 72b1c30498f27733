/**
 * A subtask's channel handles in `_metadata`, read as `ChannelStateHandleSerializerV1/V2` read
 * them (v1 layout for metadata v3–v5, v2 with merged handles for v6), with the checks Spillway
 * adds before any channel-state file is opened: no channel named twice, every entry offset
 * inside its delegate. The delegate is a stream handle (metadata-handles.ts).
 *
 * @example
 * ```ts
 * const reader = { input, location: 'chk-3/_metadata' };
 * const handles = await readChannelHandles(reader, 6, 'input', 'operator 0a1b… subtask 0');
 * ```
 */
import type { MetadataInput } from './metadata-input.ts';
import { readStreamHandle, type HandleReader } from './metadata-handles.ts';
import type { FlinkChannelHandle, FlinkStreamHandle } from './metadata-types.ts';

// ChannelStateHandleSerializerV2's tags (metadata v6).
const INPUT_CHANNEL_STATE_HANDLE = 1;
const RESULT_SUBPARTITION_STATE_HANDLE = 2;
const MERGED_INPUT_CHANNEL_STATE_HANDLE = 3;
const MERGED_RESULT_SUBPARTITION_STATE_HANDLE = 4;

/** deserializeCollection of channel handles: int32 count, then the version's layout. */
export async function readChannelHandles(
  r: HandleReader,
  version: number,
  side: 'input' | 'output',
  where: string,
): Promise<FlinkChannelHandle[]> {
  const { input } = r;
  const what = side === 'input' ? 'input channel handle' : 'result subpartition handle';
  const countAt = input.position;
  const count = await input.int32(`${what} count`);
  // Smallest handle: v1 layout 4+4+4+4+8+1 bytes; v6 adds a type byte.
  input.checkCount(count, version >= 6 ? 26 : 25, what, countAt);
  const handles: FlinkChannelHandle[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < count; i++) {
    const read =
      version >= 6 ? await readChannelHandlesV2(r, side) : [await readChannelHandleV1(r, side)];
    for (const h of read) {
      const key = `${h.gate}/${h.channel}`;
      if (seen.has(key)) {
        throw input.corrupt(
          h.metadataOffset,
          `${where}: ${side === 'input' ? `input channel (gate ${h.gate}, channel ${h.channel})` : `result subpartition (partition ${h.gate}, subpartition ${h.channel})`} has two handles`,
        );
      }
      seen.add(key);
      checkOffsetsFit(input, h);
      handles.push(h);
    }
  }
  return handles;
}

/**
 * An entry offset must leave room for its 4-byte length inside the delegate when the delegate's
 * size is known (inline bytes, a file or segment of known size): an offset past it is corrupt
 * here, before any channel-state file is opened.
 */
function checkOffsetsFit(input: MetadataInput, h: FlinkChannelHandle): void {
  const d = h.delegate;
  const size = d.kind === 'inline' || d.kind === 'segment' ? d.length : d.size;
  if (size < 0) return;
  for (const offset of h.offsets) {
    if (offset + 4 > size) {
      throw input.corrupt(
        h.metadataOffset,
        `${h.side} handle (${h.gate}, ${h.channel}): entry offset ${offset} leaves no room for an ` +
          `entry in its ${d.kind} delegate of ${size} byte(s)`,
      );
    }
  }
}

/** The delegate of a channel handle: never null, never a key-groups handle. */
async function channelDelegate(r: HandleReader, what: string): Promise<FlinkStreamHandle> {
  const at = r.input.position;
  const delegate = await readStreamHandle(r, `${what} delegate`);
  if (delegate === null) throw r.input.corrupt(at, `${what}: null delegate`);
  if (delegate.kind === 'key-groups') {
    throw r.input.corrupt(at, `${what}: a key-groups handle cannot hold channel state`);
  }
  return delegate;
}

/** Offsets of one channel: each must be a safe, non-negative int64. */
async function readOffsets(input: MetadataInput, what: string): Promise<number[]> {
  const at = input.position;
  const count = await input.int32(`${what} offset count`);
  input.checkCount(count, 8, `${what} offset`, at);
  return input.nonNegativeInt64s(count, `${what} offset`);
}

/** An index (subtask, gate, channel) Flink writes as int32: never negative when Flink wrote it. */
async function index(input: MetadataInput, what: string): Promise<number> {
  return input.nonNegativeInt32(what);
}

/**
 * The two ints of Flink's `InputChannelInfo` (gate, channel) or `ResultSubpartitionInfo`
 * (partition, subpartition), named for the side in errors.
 */
async function readChannelInfo(
  input: HandleReader['input'],
  side: 'input' | 'output',
  what: string,
): Promise<{ gate: number; channel: number }> {
  const gate = await index(
    input,
    side === 'input' ? `${what} gate index` : `${what} partition index`,
  );
  const channel = await index(
    input,
    side === 'input' ? `${what} channel index` : `${what} subpartition index`,
  );
  return { gate, channel };
}

/**
 * ChannelStateHandleSerializerV1.deserializeChannelStateHandle (metadata v3–v5; in v6 after the
 * type byte): subtask index, the two channel-info ints, offsets, state size, delegate.
 */
async function readChannelHandleV1(
  r: HandleReader,
  side: 'input' | 'output',
): Promise<FlinkChannelHandle> {
  const { input } = r;
  const what = side === 'input' ? 'input channel handle' : 'result subpartition handle';
  const metadataOffset = input.position;
  const subtaskIndex = await index(input, `${what} subtask index`);
  const { gate, channel } = await readChannelInfo(input, side, what);
  const offsets = await readOffsets(input, what);
  const stateSize = await input.nonNegativeInt64(`${what} state size`);
  const delegate = await channelDelegate(r, what);
  return { side, subtaskIndex, gate, channel, offsets, stateSize, delegate, metadataOffset };
}

/**
 * ChannelStateHandleSerializerV2 (metadata v6): a type byte (unsigned, `dis.read()`); 1/2 are the
 * v1 layout, 3/4 a merged handle — subtask index, state size, one delegate, then a length-prefixed
 * blob (AbstractMergedChannelStateHandle): int32 channel count, per channel the two channel-info
 * ints, int64 state size, int32 offset count, int64 offsets. Input lists accept 1 and 3 only,
 * output lists 2 and 4 only, as Flink's two readers do.
 */
async function readChannelHandlesV2(
  r: HandleReader,
  side: 'input' | 'output',
): Promise<FlinkChannelHandle[]> {
  const { input } = r;
  const at = input.position;
  const type = await input.uint8(`${side} state handle type`);
  const plain = side === 'input' ? INPUT_CHANNEL_STATE_HANDLE : RESULT_SUBPARTITION_STATE_HANDLE;
  const merged =
    side === 'input' ? MERGED_INPUT_CHANNEL_STATE_HANDLE : MERGED_RESULT_SUBPARTITION_STATE_HANDLE;
  if (type === plain) return [await readChannelHandleV1(r, side)];
  if (type !== merged) throw input.corrupt(at, `unknown ${side} state handle type ${type}`);

  const what =
    side === 'input' ? 'merged input channel handle' : 'merged result subpartition handle';
  const metadataOffset = input.position;
  const subtaskIndex = await index(input, `${what} subtask index`);
  await input.nonNegativeInt64(`${what} state size`);
  const delegate = await channelDelegate(r, what);
  const blobLength = await input.nonNegativeInt32(`${what} channel blob length`);
  input.require(blobLength, `${what} channel blob`);
  const blobStart = input.position;
  const blobEnd = blobStart + blobLength;
  // The blob is parsed where it lies, within its own bounds: a count or length in it that
  // reaches past the blob is as corrupt as one that reaches past the file.
  const inBlob = (n: number, field: string): void => {
    if (input.position + n > blobEnd) {
      throw input.corrupt(
        input.position,
        `${what}: ${field} runs past the end of the channel blob at ${blobEnd}`,
      );
    }
  };
  inBlob(4, 'channel count');
  const countAt = input.position;
  const count = await input.int32(`${what} channel count`);
  if (count < 0) throw input.corrupt(countAt, `${what}: negative channel count ${count}`);
  // Each channel: two ints, a size, an offset count.
  if (count * 24 > blobEnd - input.position) {
    throw input.corrupt(countAt, `${what}: channel count ${count} cannot fit in the channel blob`);
  }
  const handles: FlinkChannelHandle[] = [];
  for (let i = 0; i < count; i++) {
    const channelAt = input.position;
    inBlob(24, 'channel');
    const { gate, channel } = await readChannelInfo(input, side, what);
    const stateSize = await input.nonNegativeInt64(`${what} channel state size`);
    const offsetsAt = input.position;
    const offsetCount = await input.int32(`${what} offset count`);
    if (offsetCount < 0)
      throw input.corrupt(offsetsAt, `${what}: negative offset count ${offsetCount}`);
    inBlob(offsetCount * 8, 'offsets');
    const offsets = await input.nonNegativeInt64s(offsetCount, `${what} offset`);
    handles.push({
      side,
      subtaskIndex,
      gate,
      channel,
      offsets,
      stateSize,
      delegate,
      metadataOffset: i === 0 ? metadataOffset : channelAt,
      merged: true,
    });
  }
  if (input.position !== blobEnd) {
    throw input.corrupt(
      input.position,
      `${what}: ${blobEnd - input.position} unread byte(s) at the end of the channel blob`,
    );
  }
  return handles;
}
