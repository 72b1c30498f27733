/**
 * Reads a Flink checkpoint's `_metadata` (versions 3–6) the way Flink's
 * `Checkpoints.loadCheckpointMetadata` and `MetadataV3`…`V6Serializer` do, keeping what Spillway
 * needs: operators (id, name, uid, parallelism), their subtasks, and every input-channel and
 * result-subpartition handle with where its bytes are. Everything else is walked for its bounds
 * only. Which release writes which version: Flink 1.20.x writes v4; Flink 2.x writes v6 (2.0
 * registered v5, whose channel handles are still the v1 layout).
 *
 * Every malformed field is a {@link CorruptCheckpointError} naming the file and the byte offset;
 * memory is bounded by the file, never by a count or length it declares (see metadata-input.ts).
 */
import { join } from 'node:path';
import { fsSeam } from '../../fs.ts';
import { CheckpointPathError, CorruptCheckpointError, RemoteNotFoundError } from '../../errors.ts';
import { openCheckpointSource, type CheckpointByteSource } from '../../locations/source.ts';
import { redactLocation } from '../../locations/redact.ts';
import { isRemoteLocation } from '../../locations/schemes.ts';
import { isWebPage, WEB_PAGE_ANSWER } from '../web-page.ts';
import { MetadataInput } from './metadata-input.ts';
import { FLINK_METADATA_MAGIC, METADATA_FILE_NAME } from './metadata-file.ts';
import { readChannelHandles } from './metadata-channel-handles.ts';
import {
  readStreamHandle,
  skipKeyedStateHandle,
  skipOperatorStateHandle,
  type HandleReader,
} from './metadata-handles.ts';
import { skipJavaSerializedObject } from './metadata-java-serialization.ts';
import type {
  FlinkCheckpointMetadata,
  FlinkOperatorState,
  FlinkSubtaskState,
  ReadFlinkMetadataOptions,
} from './metadata-types.ts';

export type * from './metadata-types.ts';
export { resolveOperator, describeOperator } from './metadata-resolve.ts';

/** The metadata versions this reader reads. */
export const FLINK_METADATA_VERSIONS: readonly number[] = [3, 4, 5, 6];
/** `MetadataV2V3SerializerBase.MASTER_STATE_MAGIC_NUMBER`. */
const MASTER_STATE_MAGIC = 0xc96b1696 | 0;

/**
 * Reads the `_metadata` of a Flink checkpoint: `location` is the file itself or a directory
 * holding `_metadata`, local, `http(s)://` or `s3://`.
 *
 * @throws CorruptCheckpointError for any malformed field (file and byte offset), including bad
 *   magic and a version other than 3–6; CheckpointPathError / RemoteNotFoundError when there is
 *   no such file.
 * @example
 * ```ts
 * const meta = await readFlinkMetadata('/ckpt/3f1c…/chk-17');
 * for (const op of meta.operators) console.log(op.id, op.name, op.subtasks.length);
 * ```
 */
export async function readFlinkMetadata(
  location: string,
  options: ReadFlinkMetadataOptions = {},
): Promise<FlinkCheckpointMetadata> {
  const { metadataLocation, source, bytes } = await openMetadata(location, options);
  try {
    const shown = redactLocation(metadataLocation);
    if (options.maxBytes !== undefined && bytes > options.maxBytes) {
      throw new MetadataInput(source, bytes, shown).corrupt(
        0,
        `the file is ${bytes} bytes, more than the ${options.maxBytes} allowed`,
      );
    }
    // Remote: fewer, larger ranged reads; local: a window that covers a typical _metadata.
    const window = isRemoteLocation(metadataLocation) ? 256 * 1024 : 128 * 1024;
    const input = new MetadataInput(source, bytes, shown, options.signal, window);
    return await parseMetadata(input, metadataLocation);
  } catch (error) {
    // `http://…/chk-3` answered with the dir's HTML listing (a redirect to `chk-3/`): the
    // checkpoint is the `_metadata` inside it. Tried once, as a directory.
    if (
      error instanceof CorruptCheckpointError &&
      error.offset === 0 &&
      error.reason.startsWith(WEB_PAGE_ANSWER) &&
      metadataLocation === location &&
      !location.includes('?')
    ) {
      await source.close();
      return readFlinkMetadata(`${location}/`, options).catch(() => {
        throw error;
      });
    }
    throw error;
  } finally {
    await source.close();
  }
}

/** The SPWC magic ("SPWC"), for a useful word when one is given where a Flink one is expected. */
const SPWC_MAGIC = 0x53505743;

/**
 * A local dir without `_metadata`: a Flink job dir (`<job>/chk-N/_metadata`) is named as such,
 * with the checkpoints it holds, newest last; anything else is left to the open's own error.
 */
async function refuseJobDir(dir: string): Promise<void> {
  const names = await fsSeam.readdir(dir).catch(() => [] as string[]);
  const checkpoints: number[] = [];
  for (const name of names) {
    const m = /^chk-(\d+)$/.exec(name);
    if (m === null) continue;
    const has = await fsSeam.stat(join(dir, name, METADATA_FILE_NAME)).then(
      (st) => st.isFile(),
      () => false,
    );
    if (has) checkpoints.push(Number(m[1]));
  }
  if (checkpoints.length === 0) return;
  checkpoints.sort((a, b) => a - b);
  const listed = checkpoints.map((n) => `chk-${n}`);
  throw new CheckpointPathError(
    dir,
    `a Flink job dir, not a checkpoint: it holds ${listed.join(', ')}; ` +
      `pass one of them (the newest: ${join(dir, listed.at(-1)!)})`,
  );
}

/**
 * Opens `location` as the `_metadata` file, or `location/_metadata` when `location` is a
 * directory (local), ends with '/', or (remote, no query string) does not exist as an object.
 */
async function openMetadata(
  location: string,
  options: ReadFlinkMetadataOptions,
): Promise<{ metadataLocation: string; source: CheckpointByteSource; bytes: number }> {
  const sourceOptions = { ...options.remote, signal: options.signal };
  if (!isRemoteLocation(location)) {
    const isDir = await fsSeam.stat(location).then(
      (st) => st.isDirectory(),
      () => false,
    );
    const metadataLocation = isDir ? join(location, METADATA_FILE_NAME) : location;
    const opened = await openCheckpointSource(metadataLocation, sourceOptions).catch(
      async (error: unknown) => {
        if (isDir) await refuseJobDir(location);
        throw error;
      },
    );
    return { metadataLocation, source: opened.file, bytes: opened.bytes };
  }
  const hasQuery = location.includes('?');
  if (!hasQuery && location.endsWith('/')) {
    const metadataLocation = location + METADATA_FILE_NAME;
    const { file, bytes } = await openCheckpointSource(metadataLocation, sourceOptions);
    return { metadataLocation, source: file, bytes };
  }
  try {
    const { file, bytes } = await openCheckpointSource(location, sourceOptions);
    return { metadataLocation: location, source: file, bytes };
  } catch (error) {
    // `s3://bucket/job/chk-17` is a prefix, not an object: try the metadata file under it.
    const last = location.slice(location.lastIndexOf('/') + 1);
    if (!(error instanceof RemoteNotFoundError) || hasQuery || last === METADATA_FILE_NAME) {
      throw error;
    }
    const metadataLocation = `${location}/${METADATA_FILE_NAME}`;
    try {
      const { file, bytes } = await openCheckpointSource(metadataLocation, sourceOptions);
      return { metadataLocation, source: file, bytes };
    } catch {
      throw error;
    }
  }
}

/**
 * The whole file from an open input: header, body of the version's serializer, and the v4+
 * trailer. `location` is what inline handles will name as their file.
 *
 * @example
 * ```ts
 * const input = new MetadataInput(source, bytes, 'chk-3/_metadata');
 * const meta = await parseMetadata(input, 'chk-3/_metadata');
 * ```
 */
export async function parseMetadata(
  input: MetadataInput,
  location: string,
): Promise<FlinkCheckpointMetadata> {
  const magic = await input.int32('magic number');
  if (magic === SPWC_MAGIC) {
    throw input.corrupt(
      0,
      `an SPWC checkpoint, not a Flink _metadata file: read it with 'spillway recover FILE --out DIR' (no --operator)`,
    );
  }
  const first = Buffer.alloc(4);
  first.writeInt32BE(magic);
  if (isWebPage(first)) {
    throw input.corrupt(
      0,
      `${WEB_PAGE_ANSWER} (HTML), not a Flink _metadata file; did you mean ${redactLocation(location).replace(/\/$/, '')}/${METADATA_FILE_NAME}?`,
    );
  }
  if (magic !== FLINK_METADATA_MAGIC) {
    throw input.corrupt(
      0,
      `not a Flink _metadata file (magic 0x${(magic >>> 0).toString(16).padStart(8, '0')}, ` +
        `expected 0x${FLINK_METADATA_MAGIC.toString(16)})`,
    );
  }
  const version = await input.int32('metadata version');
  if (!FLINK_METADATA_VERSIONS.includes(version)) {
    throw input.corrupt(
      4,
      `unsupported Flink metadata version ${version} (supported: ${FLINK_METADATA_VERSIONS.join(', ')})`,
    );
  }
  // Relative paths named by keyed and operator state (channel handles are read without it).
  const stateFiles: string[] = [];
  const reader: HandleReader = { input, location, relativePaths: stateFiles };

  // MetadataV2V3SerializerBase.deserializeMetadata.
  const idAt = input.position;
  const checkpointId = await input.int64('checkpoint id');
  if (checkpointId < 0) throw input.corrupt(idAt, `invalid checkpoint id ${checkpointId}`);

  const mastersAt = input.position;
  const masters = await input.int32('master state count');
  input.checkCount(masters, 18, 'master state', mastersAt);
  for (let i = 0; i < masters; i++) await skipMasterState(input);

  const operatorsAt = input.position;
  const operatorCount = await input.int32('operator count');
  input.checkCount(operatorCount, version >= 5 ? 33 : 29, 'operator', operatorsAt);
  const head = { start: 0, end: input.position };
  const operators: FlinkOperatorState[] = [];
  for (let i = 0; i < operatorCount; i++) operators.push(await readOperator(reader, version));

  const trailerAt = input.position;
  if (version >= 4) {
    // MetadataV4Serializer: a Java-serialized CheckpointProperties, read with readObject.
    await skipJavaSerializedObject(input, 'CheckpointProperties trailer');
  }
  const layout = { head, trailer: { start: trailerAt, end: input.size } };
  return {
    location,
    version,
    checkpointId,
    operators,
    layout,
    stateFiles: [...new Set(stateFiles)],
  };
}

/** deserializeMasterState: magic, a positive length, then (version, name, bytes) exactly filling it. */
async function skipMasterState(input: MetadataInput): Promise<void> {
  const at = input.position;
  const magic = await input.int32('master state magic');
  if (magic !== MASTER_STATE_MAGIC) {
    throw input.corrupt(at, `bad master state magic 0x${(magic >>> 0).toString(16)}`);
  }
  const lengthAt = input.position;
  const length = await input.int32('master state length');
  if (length <= 0) throw input.corrupt(lengthAt, `zero or negative master state length ${length}`);
  input.require(length, 'master state');
  const end = input.position + length;
  const inner = async <T>(read: () => T | Promise<T>): Promise<T> => {
    const before = input.position;
    const v = await read();
    if (input.position > end) {
      throw input.corrupt(before, `master state field runs past the state's length (${length})`);
    }
    return v;
  };
  await inner(() => input.int32('master state version'));
  await inner(() => input.utf('master state name'));
  const bytesAt = input.position;
  const bytes = await inner(() => input.int32('master state payload length'));
  if (bytes < 0) throw input.corrupt(bytesAt, `negative master state payload length ${bytes}`);
  if (input.position + bytes !== end) {
    throw input.corrupt(
      bytesAt,
      `master state payload of ${bytes} byte(s) does not end where the state does ` +
        `(${end - input.position} byte(s) left)`,
    );
  }
  input.skip(bytes, 'master state payload');
}

/** MetadataV3Serializer / MetadataV5Serializer.deserializeOperatorState. */
async function readOperator(r: HandleReader, version: number): Promise<FlinkOperatorState> {
  const { input } = r;
  const operatorAt = input.position;
  let name: string | undefined;
  let uid: string | undefined;
  if (version >= 5) {
    // Empty string = none (V5 refuses to write an empty name or uid).
    name = (await input.utf('operator name')) || undefined;
    uid = (await input.utf('operator uid')) || undefined;
  }
  const idAt = input.position;
  // OperatorID(lowerPart, upperPart); AbstractID.toString prints lower then upper, each
  // big-endian: exactly the 16 bytes as they are written here.
  const lower = await input.int64Bits('operator id (lower part)');
  const upper = await input.int64Bits('operator id (upper part)');
  const id = lower + upper;
  const parallelismAt = input.position;
  const parallelism = await input.int32('parallelism');
  const maxParallelism = await input.int32('max parallelism');
  if (parallelism < 0 || parallelism > maxParallelism) {
    throw input.corrupt(
      parallelismAt,
      `operator ${id}: parallelism ${parallelism} is not between 0 and max parallelism ${maxParallelism}`,
    );
  }
  // deserializeAndCheckByteStreamStateHandle: null or inline bytes, nothing else.
  const coordinatorAt = input.position;
  const coordinator = await readStreamHandle(r, `operator ${id} coordinator state`);
  if (coordinator !== null && coordinator.kind !== 'inline') {
    throw input.corrupt(
      coordinatorAt,
      `operator ${id}: coordinator state must be inline bytes, found a ${coordinator.kind} handle`,
    );
  }
  const countAt = input.position;
  const count = await input.int32('subtask count');
  const operator: FlinkOperatorState = {
    id,
    ...(name !== undefined ? { name } : {}),
    ...(uid !== undefined ? { uid } : {}),
    parallelism,
    maxParallelism,
    finished: false,
    subtasks: [],
    layout: { head: { start: operatorAt, end: input.position } },
  };
  if (count < 0) {
    // FullyFinishedOperatorState: no subtask states follow.
    if (coordinator !== null) {
      throw input.corrupt(
        coordinatorAt,
        `operator ${id}: a fully finished operator has coordinator state`,
      );
    }
    operator.finished = true;
    return operator;
  }
  input.checkCount(count, 4, 'subtask', countAt);
  if (count > parallelism) {
    throw input.corrupt(
      countAt,
      `operator ${id}: ${count} subtask states for parallelism ${parallelism}`,
    );
  }
  const seen = new Set<number>();
  for (let j = 0; j < count; j++) {
    const indexAt = input.position;
    const stored = await input.int32('subtask index');
    // A finished subtask is stored as -(index + 1), with no state.
    const finished = stored < 0;
    const index = finished ? -stored - 1 : stored;
    if (index >= parallelism) {
      throw input.corrupt(
        indexAt,
        `operator ${id}: subtask index ${index} is not below parallelism ${parallelism}`,
      );
    }
    if (seen.has(index))
      throw input.corrupt(indexAt, `operator ${id}: subtask ${index} appears twice`);
    seen.add(index);
    const subtask: FlinkSubtaskState = {
      index,
      finished,
      inputChannels: [],
      outputSubpartitions: [],
    };
    if (!finished) {
      await readSubtaskState(r, version, subtask, id, indexAt);
    } else {
      const head = { start: indexAt, end: input.position };
      subtask.layout = { head, channels: { start: head.end, end: head.end } };
    }
    operator.subtasks.push(subtask);
  }
  operator.subtasks.sort((a, b) => a.index - b.index);
  return operator;
}

/** deserializeSubtaskState: operator state ×2, keyed state ×2, input handles, output handles. */
async function readSubtaskState(
  r: HandleReader,
  version: number,
  subtask: FlinkSubtaskState,
  operatorId: string,
  indexAt: number,
): Promise<void> {
  const { input } = r;
  const where = `operator ${operatorId} subtask ${subtask.index}`;
  if ((await input.int32('managed operator state flag')) !== 0) {
    await skipOperatorStateHandle(r, `${where} managed operator state`);
  }
  if ((await input.int32('raw operator state flag')) !== 0) {
    await skipOperatorStateHandle(r, `${where} raw operator state`);
  }
  await skipKeyedStateHandle(r, `${where} managed keyed state`);
  await skipKeyedStateHandle(r, `${where} raw keyed state`);
  const channelsAt = input.position;
  // Channel delegates are not state files a copy must carry: read without the collector.
  const channels: HandleReader = { input, location: r.location };
  subtask.inputChannels = await readChannelHandles(channels, version, 'input', where);
  subtask.outputSubpartitions = await readChannelHandles(channels, version, 'output', where);
  subtask.layout = {
    head: { start: indexAt, end: channelsAt },
    channels: { start: channelsAt, end: input.position },
  };
}
