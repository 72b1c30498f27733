/**
 * Flink's state handles in `_metadata`, read as `MetadataV2V3SerializerBase` (stream, keyed and
 * operator-state handles) read them, Flink 1.20.x and 2.x alike (the tags are the same in both;
 * every release reads every tag). Stream handles are kept (a channel handle's delegate is one);
 * every other handle is parsed for its bounds and skipped: strings are validated, byte runs and
 * offset arrays are skipped by seeking. The channel handles, with their own serializer's tags,
 * are metadata-channel-handles.ts.
 *
 * The tag constants and every reader that switches on them stay side by side, as they do in
 * Flink's serializer, so a tag cannot drift from its layout.
 *
 * @example
 * ```ts
 * const reader = { input, location: 'chk-3/_metadata' };
 * await skipKeyedStateHandle(reader, 'managed keyed state');
 * ```
 */
import type { MetadataInput } from './metadata-input.ts';
import type { FlinkStreamHandle } from './metadata-types.ts';

// MetadataV2V3SerializerBase's handle tags.
const NULL_HANDLE = 0;
const BYTE_STREAM_STATE_HANDLE = 1;
const FILE_STREAM_STATE_HANDLE = 2;
const KEY_GROUPS_HANDLE = 3;
const PARTITIONABLE_OPERATOR_STATE_HANDLE = 4;
const INCREMENTAL_KEY_GROUPS_HANDLE = 5;
const RELATIVE_STREAM_STATE_HANDLE = 6;
const SAVEPOINT_KEY_GROUPS_HANDLE = 7;
const CHANGELOG_HANDLE = 8;
const CHANGELOG_BYTE_INCREMENT_HANDLE = 9;
const CHANGELOG_FILE_INCREMENT_HANDLE = 10;
const INCREMENTAL_KEY_GROUPS_HANDLE_V2 = 11;
const KEY_GROUPS_HANDLE_V2 = 12;
const CHANGELOG_FILE_INCREMENT_HANDLE_V2 = 13;
const CHANGELOG_HANDLE_V2 = 14;
const SEGMENT_FILE_HANDLE = 15;
const EMPTY_SEGMENT_FILE_HANDLE = 16;
const SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE = 17;

/** OperatorStateHandle.Mode has three values (SPLIT_DISTRIBUTE, UNION, BROADCAST). */
const OPERATOR_STATE_MODES = 3;
/** CheckpointedStateScope: EXCLUSIVE, SHARED. */
const SCOPES = ['exclusive', 'shared'] as const;

/**
 * Handles nest (key-groups in key-groups, changelog in changelog): Flink recurses until its
 * stack overflows; a hostile file gets a corrupt-file error at this depth instead.
 */
const MAX_NESTING = 32;

/** Where a handle starts; one nested deeper than {@link MAX_NESTING} is refused there. */
function handleStart(input: HandleReader['input'], what: string, depth: number): number {
  const at = input.position;
  if (depth > MAX_NESTING) {
    throw input.corrupt(at, `${what}: handles nested deeper than ${MAX_NESTING}`);
  }
  return at;
}

/** What a stream handle read from `_metadata` is; `key-groups` only ever nests in keyed state. */
export type ParsedStreamHandle = FlinkStreamHandle | { kind: 'key-groups' };

/** What the handle readers need: the input and the `_metadata` location inline bytes are in. */
export interface HandleReader {
  readonly input: MetadataInput;
  /** The `_metadata` location as given to the reader (inline handles point into it). */
  readonly location: string;
  /** When given, every relative path a stream handle names is pushed here. */
  readonly relativePaths?: string[];
}

/**
 * `deserializeStreamStateHandle`: a type byte (read unsigned, as `dis.read()` does), then the
 * kind's fields. Returns null for the null handle.
 *
 * @example
 * ```ts
 * const delegate = await readStreamHandle(reader, 'input channel handle delegate');
 * if (delegate?.kind === 'inline') console.log(delegate.start, delegate.length);
 * ```
 */
export async function readStreamHandle(
  r: HandleReader,
  what: string,
  depth = 0,
): Promise<ParsedStreamHandle | null> {
  const { input } = r;
  const at = handleStart(input, what, depth);
  const type = await input.uint8(`${what} type`);
  switch (type) {
    case NULL_HANDLE:
      return null;
    case FILE_STREAM_STATE_HANDLE: {
      const size = await fileSize(input, `${what} file size`);
      const path = await input.utf(`${what} file path`);
      return { kind: 'file', path, size };
    }
    case BYTE_STREAM_STATE_HANDLE: {
      const name = await input.utf(`${what} inline handle name`);
      const length = await input.nonNegativeInt32(`${what} inline length`);
      input.require(length, `${what} inline bytes`);
      const start = input.position;
      input.skip(length, `${what} inline bytes`);
      return { kind: 'inline', name, file: r.location, start, length };
    }
    case RELATIVE_STREAM_STATE_HANDLE: {
      // Note the order: the relative path first, then the size (FileStateHandle: the reverse).
      const relativePath = await input.utf(`${what} relative path`);
      const size = await fileSize(input, `${what} relative file size`);
      r.relativePaths?.push(relativePath);
      return { kind: 'relative', relativePath, size };
    }
    case KEY_GROUPS_HANDLE:
      await skipKeyGroupsBody(r, what, depth);
      return { kind: 'key-groups' };
    case SEGMENT_FILE_HANDLE: {
      const start = await input.nonNegativeInt64(`${what} segment start`);
      const length = await input.nonNegativeInt64(`${what} segment size`);
      const scopeAt = input.position;
      const scope = SCOPES[await input.int32(`${what} segment scope`)];
      if (scope === undefined) throw input.corrupt(scopeAt, `${what}: unknown segment scope`);
      const path = await input.utf(`${what} segment file path`);
      await input.utf(`${what} logical file id`);
      return { kind: 'segment', path, start, length, scope };
    }
    case EMPTY_SEGMENT_FILE_HANDLE:
      // EmptySegmentFileStateHandle.INSTANCE: Path "empty", 0, 0, EXCLUSIVE.
      return { kind: 'segment', path: 'empty', start: 0, length: 0, scope: 'exclusive' };
    default:
      throw input.corrupt(at, `${what}: unknown stream handle type ${type}`);
  }
}

/** FileStateHandle allows a size of -1 (unknown) and nothing below. */
async function fileSize(input: MetadataInput, what: string): Promise<number> {
  const at = input.position;
  const size = await input.int64(what);
  if (size < -1) throw input.corrupt(at, `negative ${what} ${size}`);
  return size;
}

/** A key-group range (start, count): Flink's KeyGroupRange refuses what this refuses. */
async function keyGroupRange(input: MetadataInput, what: string): Promise<number> {
  const at = input.position;
  const start = await input.int32(`${what} start key group`);
  const countAt = input.position;
  const count = await input.int32(`${what} key group count`);
  if (count < 0) throw input.corrupt(countAt, `${what}: negative key group count ${count}`);
  if (count > 0 && (start < 0 || start + count - 1 > 0x7fffffff)) {
    throw input.corrupt(at, `${what}: invalid key group range start ${start} count ${count}`);
  }
  return count;
}

/** KeyGroupsStateHandle after its tag: range, one int64 offset per key group, delegate. */
async function skipKeyGroupsBody(r: HandleReader, what: string, depth: number): Promise<void> {
  const { input } = r;
  const countAt = input.position + 4;
  const count = await keyGroupRange(input, what);
  input.checkCount(count, 8, `${what} key group offset`, countAt);
  input.skip(count * 8, `${what} key group offsets`);
  const delegateAt = input.position;
  const delegate = await readStreamHandle(r, `${what} delegate`, depth + 1);
  if (delegate === null) throw input.corrupt(delegateAt, `${what}: null delegate`);
}

/** deserializeHandleAndLocalPathList: count, then (local path, stream handle) pairs. */
async function skipHandleAndLocalPathList(
  r: HandleReader,
  what: string,
  depth: number,
): Promise<void> {
  const { input } = r;
  const at = input.position;
  const count = await input.int32(`${what} count`);
  input.checkCount(count, 3, what, at);
  for (let i = 0; i < count; i++) {
    await input.utf(`${what} local path`);
    await readStreamHandle(r, `${what} handle`, depth + 1);
  }
}

/**
 * `deserializeKeyedStateHandle`: a type byte (signed, `readByte`), then the kind's fields.
 * Every kind Flink 1.20/2.x reads is walked; nothing is kept (Spillway recovers channel state).
 * Returns the tag read (0 for null).
 */
export async function skipKeyedStateHandle(
  r: HandleReader,
  what: string,
  depth = 0,
): Promise<number> {
  const { input } = r;
  const at = handleStart(input, what, depth);
  const type = await input.int8(`${what} type`);
  switch (type) {
    case NULL_HANDLE:
      return type;
    case KEY_GROUPS_HANDLE:
    case KEY_GROUPS_HANDLE_V2:
    case SAVEPOINT_KEY_GROUPS_HANDLE:
      await skipKeyGroupsBody(r, what, depth);
      if (type === KEY_GROUPS_HANDLE_V2) await input.utf(`${what} state handle id`);
      return type;
    case INCREMENTAL_KEY_GROUPS_HANDLE:
    case INCREMENTAL_KEY_GROUPS_HANDLE_V2: {
      const v2 = type === INCREMENTAL_KEY_GROUPS_HANDLE_V2;
      input.skipInt64(`${what} checkpoint id`);
      await input.utf(`${what} backend id`);
      await keyGroupRange(input, what);
      if (v2) input.skipInt64(`${what} checkpointed size`);
      await readStreamHandle(r, `${what} meta data handle`, depth + 1);
      await skipHandleAndLocalPathList(r, `${what} shared state`, depth);
      await skipHandleAndLocalPathList(r, `${what} private state`, depth);
      if (v2) await input.utf(`${what} state handle id`);
      return type;
    }
    case CHANGELOG_HANDLE:
    case CHANGELOG_HANDLE_V2: {
      await keyGroupRange(input, what);
      input.skipInt64(`${what} checkpointed size`);
      const baseAt = input.position;
      const base = await input.int32(`${what} materialized handle count`);
      input.checkCount(base, 1, `${what} materialized handle`, baseAt);
      for (let i = 0; i < base; i++) {
        await skipKeyedStateHandle(r, `${what} materialized handle`, depth + 1);
      }
      const deltaAt = input.position;
      const delta = await input.int32(`${what} non-materialized handle count`);
      input.checkCount(delta, 1, `${what} non-materialized handle`, deltaAt);
      for (let i = 0; i < delta; i++) {
        const handleAt = input.position;
        const tag = await skipKeyedStateHandle(r, `${what} non-materialized handle`, depth + 1);
        // Flink casts each to ChangelogStateHandle: only the changelog increments (or null) fit.
        if (
          tag !== NULL_HANDLE &&
          tag !== CHANGELOG_BYTE_INCREMENT_HANDLE &&
          tag !== CHANGELOG_FILE_INCREMENT_HANDLE &&
          tag !== CHANGELOG_FILE_INCREMENT_HANDLE_V2
        ) {
          throw input.corrupt(
            handleAt,
            `${what}: keyed handle type ${tag} is not a changelog increment`,
          );
        }
      }
      input.skipInt64(`${what} materialization id`);
      if (type === CHANGELOG_HANDLE_V2) input.skipInt64(`${what} checkpoint id`);
      await input.utf(`${what} state handle id`);
      return type;
    }
    case CHANGELOG_BYTE_INCREMENT_HANDLE: {
      await keyGroupRange(input, what);
      input.skipInt64(`${what} from`);
      input.skipInt64(`${what} to`);
      const countAt = input.position;
      const count = await input.int32(`${what} change count`);
      input.checkCount(count, 8, `${what} change`, countAt);
      for (let i = 0; i < count; i++) {
        input.skip(4, `${what} change key group`);
        const length = await input.nonNegativeInt32(`${what} change length`);
        input.skip(length, `${what} change bytes`);
      }
      await input.utf(`${what} state handle id`);
      return type;
    }
    case CHANGELOG_FILE_INCREMENT_HANDLE:
    case CHANGELOG_FILE_INCREMENT_HANDLE_V2: {
      await keyGroupRange(input, what);
      const countAt = input.position;
      const count = await input.int32(`${what} handle count`);
      input.checkCount(count, 9, `${what} handle`, countAt);
      for (let i = 0; i < count; i++) {
        input.skipInt64(`${what} handle offset`);
        await readStreamHandle(r, `${what} handle`, depth + 1);
      }
      input.skipInt64(`${what} state size`);
      input.skipInt64(`${what} checkpointed size`);
      await input.utf(`${what} state handle id`);
      if (type === CHANGELOG_FILE_INCREMENT_HANDLE_V2) await input.utf(`${what} storage id`);
      return type;
    }
    default:
      throw input.corrupt(at, `${what}: unknown keyed state handle type ${type}`);
  }
}

/**
 * `deserializeOperatorStateHandle`: null, an OperatorStreamStateHandle (state name → mode and
 * offsets, then its delegate) or its file-merging variant (two directories and an empty flag
 * before a segment delegate).
 */
export async function skipOperatorStateHandle(r: HandleReader, what: string): Promise<void> {
  const { input } = r;
  const at = input.position;
  const type = await input.int8(`${what} type`);
  if (type === NULL_HANDLE) return;
  if (
    type !== PARTITIONABLE_OPERATOR_STATE_HANDLE &&
    type !== SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE
  ) {
    throw input.corrupt(at, `${what}: unknown operator state handle type ${type}`);
  }
  const countAt = input.position;
  const count = await input.int32(`${what} state count`);
  // Each: an empty name (2), a mode (1), an offset count (4).
  input.checkCount(count, 7, `${what} state`, countAt);
  for (let i = 0; i < count; i++) {
    await input.utf(`${what} state name`);
    const modeAt = input.position;
    const mode = await input.int8(`${what} distribution mode`);
    if (mode < 0 || mode >= OPERATOR_STATE_MODES) {
      throw input.corrupt(modeAt, `${what}: unknown distribution mode ${mode}`);
    }
    const offsetsAt = input.position;
    const offsets = await input.int32(`${what} offset count`);
    input.checkCount(offsets, 8, `${what} offset`, offsetsAt);
    input.skip(offsets * 8, `${what} offsets`);
  }
  if (type === SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE) {
    await input.utf(`${what} task-owned directory`);
    await input.utf(`${what} shared directory`);
    await input.bool(`${what} empty flag`);
  }
  const delegateAt = input.position;
  const delegate = await readStreamHandle(r, `${what} delegate`);
  if (delegate === null) throw input.corrupt(delegateAt, `${what}: null delegate`);
  if (type === SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE && delegate.kind !== 'segment') {
    throw input.corrupt(
      delegateAt,
      `${what}: a file-merging operator state handle needs a segment delegate`,
    );
  }
}
