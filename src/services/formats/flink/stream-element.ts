/**
 * Flink's `StreamElement`s as they travel in network buffers (`StreamElementSerializer`, the
 * same tags in 1.20 and 2.x) and how a rescaled recovery filters them, as Flink's
 * `ChannelStateFilteringHandler` (2.x) and `VirtualChannel` do: a record is kept iff its key
 * group maps to the new subtask; watermarks and watermark statuses are kept as they are (the
 * consumer combines them across virtual channels); latency markers and record attributes are
 * dropped. Each element arrives framed `[int32 length][element]`, which the shared record
 * parser cuts; this file only decides.
 */
import { KEY_HASH_SEED, hashKeyBytes, operatorForKeyHash } from '../../rescale/key-groups.ts';
import {
  DEFAULT_MAX_RECORD_BYTES,
  RecordShapeError,
  type RecordCounts,
  type RecordRules,
} from '../../rescale/record-parser.ts';
import { rangeOldSubtasks } from './old-subtasks.ts';
import {
  booleanKeep,
  resolveRescaleTarget,
  type RescaleOption,
} from '../../rescale/rescale-options.ts';
import type { FlinkKey } from './entry-source.ts';

/** `StreamElementSerializer`'s tags. */
export const StreamElementTag = {
  RECORD_WITH_TIMESTAMP: 0,
  RECORD_WITHOUT_TIMESTAMP: 1,
  WATERMARK: 2,
  LATENCY_MARKER: 3,
  WATERMARK_STATUS: 4,
  RECORD_ATTRIBUTES: 5,
  INTERNAL_WATERMARK: 6,
} as const;

/** Each non-record element's exact size, tag included. */
const FIXED_SIZES: Record<number, number> = {
  [StreamElementTag.WATERMARK]: 1 + 8,
  [StreamElementTag.LATENCY_MARKER]: 1 + 8 + 8 + 8 + 4,
  [StreamElementTag.WATERMARK_STATUS]: 1 + 4,
  [StreamElementTag.RECORD_ATTRIBUTES]: 1 + 1,
  [StreamElementTag.INTERNAL_WATERMARK]: 1 + 4 + 8,
};

/**
 * Java's `hashCode()` of a key: a `bigint` as `Long.hashCode` (`(int)(v ^ (v >>> 32))`), a
 * `number` as `Integer.hashCode` (the int itself; it must be a 32-bit integer), a `Uint8Array`
 * as `Arrays.hashCode(byte[])`, a string as `String.hashCode`. With Flink's key-group maths
 * (`murmurHash(keyHash) % maxParallelism`) it says where a key goes.
 *
 * @example
 * ```ts
 * keyHash(42n);           // 42 (Long.hashCode)
 * keyHash(-1n);           // 0
 * keyHash('a');           // 97 (String.hashCode)
 * keyHash(Buffer.of(1));  // 32 (Arrays.hashCode)
 * ```
 */
export function keyHash(value: bigint | number | string | Uint8Array): number {
  if (typeof value === 'bigint') {
    const v = BigInt.asUintN(64, value);
    return Number(BigInt.asIntN(32, v ^ (v >> 32n)));
  }
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < -(2 ** 31) || value >= 2 ** 31) {
      throw new RangeError(`keyHash: ${value} is not a 32-bit integer (pass a bigint for a long)`);
    }
    return value | 0;
  }
  if (typeof value === 'string') {
    let h = 0;
    for (let i = 0; i < value.length; i++) h = (Math.imul(31, h) + value.charCodeAt(i)) | 0;
    return h;
  }
  const b = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return hashKeyBytes(KEY_HASH_SEED, b, 0, b.length);
}

/** Thrown by the element rules for an element that cannot be what its tag says. */
export class ElementShapeError extends RecordShapeError {}

/**
 * The key hash of a record element (`tag`, optional timestamp, value): the first field of the
 * value read as `key` says. Throws {@link ElementShapeError} when the value is too short.
 */
function recordKeyHash(element: Buffer, key: FlinkKey): number {
  const valueAt = element[0] === StreamElementTag.RECORD_WITH_TIMESTAMP ? 9 : 1;
  const need = key === 'long' ? 8 : key === 'int' ? 4 : key.bytes;
  if (element.length - valueAt < need) {
    throw new ElementShapeError(
      `record value of ${element.length - valueAt} bytes is shorter than its ${need}-byte key`,
    );
  }
  if (key === 'long') {
    return (element.readInt32BE(valueAt) ^ element.readInt32BE(valueAt + 4)) | 0;
  }
  if (key === 'int') return element.readInt32BE(valueAt);
  return hashKeyBytes(KEY_HASH_SEED, element, valueAt, valueAt + need);
}

/**
 * Whether a rescaled recovery keeps `element` (a stream element without its length prefix),
 * given the decision for a record's key hash.
 */
export function keepElement(
  element: Buffer,
  key: FlinkKey,
  keepKeyHash: (keyHash: number) => boolean,
): boolean {
  if (element.length === 0) throw new ElementShapeError('empty stream element (no tag)');
  const tag = element[0]!;
  if (
    tag === StreamElementTag.RECORD_WITH_TIMESTAMP ||
    tag === StreamElementTag.RECORD_WITHOUT_TIMESTAMP
  ) {
    return keepKeyHash(recordKeyHash(element, key));
  }
  const size = FIXED_SIZES[tag];
  if (size === undefined) throw new ElementShapeError(`unknown stream element tag ${tag}`);
  if (element.length !== size) {
    throw new ElementShapeError(
      `stream element with tag ${tag} has ${element.length} bytes, expected ${size}`,
    );
  }
  return (
    tag === StreamElementTag.WATERMARK ||
    tag === StreamElementTag.INTERNAL_WATERMARK ||
    tag === StreamElementTag.WATERMARK_STATUS
  );
}

/** Checks a `key` option: `'long'`, `'int'` or `{ bytes: K }` with `1 ≤ K ≤ 65536`. */
export function checkFlinkKey(key: unknown): asserts key is FlinkKey | undefined {
  if (key === undefined || key === 'long' || key === 'int') return;
  const bytes = (key as { bytes?: unknown } | null)?.bytes;
  if (typeof bytes === 'number' && Number.isInteger(bytes) && bytes >= 1 && bytes <= 65536) return;
  throw new TypeError(
    `options.flink.key must be 'long', 'int' or { bytes: K } with 1 ≤ K ≤ 65536; got ${JSON.stringify(key)}`,
  );
}

/**
 * The record-parser rules of a rescaled Flink recovery: a custom `keep` over whole stream
 * elements (the key sits after the tag and maybe a timestamp). `maxParallelism` defaults to
 * the operator's, from the metadata.
 *
 * @example
 * ```ts
 * const rules = flinkRecordRules({ subtask: 0, parallelism: 2 }, 'long', 128, 'chk-1/_metadata');
 * ```
 */
export function flinkRecordRules(
  rescale: RescaleOption,
  key: FlinkKey | undefined,
  operatorMaxParallelism: number,
  file: string,
  oldParallelism?: number,
): FlinkRecordRules {
  const maxRecordBytes = rescale.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  const k = key ?? 'long';
  const elements = { kept: 0, dropped: 0 };
  if ('keep' in rescale && typeof rescale.keep === 'function') {
    return { file, maxRecordBytes, keyBytes: 0, keep: booleanKeep(rescale), elements };
  }
  const target = rescale as Exclude<RescaleOption, { keep: unknown }>;
  const { subtask, parallelism, maxParallelism } = resolveRescaleTarget({
    ...target,
    maxParallelism: target.maxParallelism ?? operatorMaxParallelism,
  });
  const keepKeyHash = (hash: number): boolean =>
    operatorForKeyHash(hash, parallelism, maxParallelism) === subtask;
  // Flink hands new subtask I only the old subtasks RANGE assigns it: nothing of another
  // (a watermark, a record) reaches I there, so none is kept here.
  const assigned =
    oldParallelism === undefined
      ? undefined
      : new Set(rangeOldSubtasks(subtask, oldParallelism, parallelism));
  return {
    file,
    maxRecordBytes,
    keyBytes: 0,
    elements,
    assigned: (oldSubtask) => assigned?.has(oldSubtask) ?? true,
    keep: (element, from) => {
      // Checked whatever its old subtask: a malformed element is corrupt wherever it is.
      const keep = keepElement(element, k, keepKeyHash) && (assigned?.has(from.subtask) ?? true);
      const tag = element[0];
      if (
        tag !== StreamElementTag.RECORD_WITH_TIMESTAMP &&
        tag !== StreamElementTag.RECORD_WITHOUT_TIMESTAMP
      ) {
        if (keep) elements.kept++;
        else elements.dropped++;
      }
      return keep;
    },
  };
}

/** A rescaled Flink recovery's rules, and the elements that are not records, counted apart. */
export interface FlinkRecordRules extends RecordRules {
  /** Watermarks and watermark statuses kept; other elements (or an unassigned subtask's) dropped. */
  readonly elements: { kept: number; dropped: number };
  /** Whether Flink's restore hands the new subtask this old subtask's input state. */
  readonly assigned?: (oldSubtask: number) => boolean;
}

/**
 * The record counts of a rescaled Flink recovery: the parser counts every element; records
 * are records only, the watermarks (and statuses) kept and the other elements dropped apart.
 *
 * @example
 * ```ts
 * recordsOnly({ read: 10, kept: 6, dropped: 4 }, { kept: 2, dropped: 1 });
 * // { read: 7, kept: 4, dropped: 3, watermarks: 2, elementsDropped: 1 }
 * ```
 */
export function recordsOnly(
  counts: RecordCounts,
  elements: FlinkRecordRules['elements'],
): RecordCounts & { watermarks: number; elementsDropped: number } {
  return {
    read: counts.read - elements.kept - elements.dropped,
    kept: counts.kept - elements.kept,
    dropped: counts.dropped - elements.dropped,
    watermarks: elements.kept,
    elementsDropped: elements.dropped,
  };
}
