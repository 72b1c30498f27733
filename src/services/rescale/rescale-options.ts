/**
 * The `rescale` option of a recovery: a new subtask of a new parallelism (Flink's key-group
 * rule) or a custom `keep` predicate, checked once and turned into a parser's rules.
 */
import { describeValue, invalidOption } from '../option-error.ts';
import { MisuseError } from '../errors.ts';
import { MAX_ENTRY_LENGTH } from '../entry-length.ts';
import {
  DEFAULT_KEY_BYTES,
  UPPER_BOUND_MAX_PARALLELISM,
  defaultMaxParallelism,
  operatorForKeyHash,
  type RescaleTarget,
} from './key-groups.ts';
import {
  DEFAULT_MAX_RECORD_BYTES,
  type RecordRules,
  type VirtualChannel,
} from './record-parser.ts';

/** The largest key this code hashes (a key is a record prefix; 64 KiB is plenty). */
export const MAX_KEY_BYTES = 65536;

/**
 * Custom filtering: keeps the records for which `keep` returns true. `record` is the record's
 * bytes without its length prefix, valid only during the call; `from` is the virtual channel
 * (old subtask, gate, channel) it was read from.
 *
 * @example
 * ```ts
 * const rescale: RecordPredicate = { keep: (record) => record[0] === 0x01 };
 * ```
 */
export interface RecordPredicate {
  keep(record: Buffer, from: VirtualChannel): boolean;
}

/**
 * The `rescale` option: restore as new subtask `subtask` of `parallelism` (Flink's
 * `SpillingWithFilteringHandler`), or filter with a custom predicate. `maxRecordBytes` bounds
 * one record (default 16 MiB): a longer one is a `CorruptCheckpointError`, not an allocation.
 *
 * @example
 * ```ts
 * recoverChannelState({ ...options, rescale: { subtask: 1, parallelism: 4 } });
 * recoverChannelState({ ...options, rescale: { keep: (r) => r.length > 8 } });
 * ```
 */
export type RescaleOption = (RescaleTarget | RecordPredicate) & { maxRecordBytes?: number };

/** A rescale target with every default filled in. */
export interface ResolvedRescaleTarget {
  subtask: number;
  parallelism: number;
  maxParallelism: number;
  keyBytes: number;
}

function isPredicate(
  option: RescaleOption,
): option is RecordPredicate & { maxRecordBytes?: number } {
  return typeof (option as Partial<RecordPredicate>).keep === 'function';
}

function checkInt(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidOption(
      `rescale.${name}`,
      `an integer in ${min}..${max}`,
      value,
      typeof value === 'number',
    );
  }
  return value;
}

/**
 * Checks a target and fills in its defaults (`maxParallelism` by Flink's rule, `keyBytes` 8).
 * Throws a `TypeError` naming the field: `1 ≤ P ≤ M ≤ 32768`, `0 ≤ I < P`.
 *
 * @example
 * ```ts
 * resolveRescaleTarget({ subtask: 0, parallelism: 2 }); // { …, maxParallelism: 128, keyBytes: 8 }
 * ```
 */
export function resolveRescaleTarget(target: RescaleTarget): ResolvedRescaleTarget {
  const parallelism = checkInt('parallelism', target.parallelism, 1, UPPER_BOUND_MAX_PARALLELISM);
  const maxParallelism =
    target.maxParallelism === undefined
      ? defaultMaxParallelism(parallelism)
      : checkInt('maxParallelism', target.maxParallelism, parallelism, UPPER_BOUND_MAX_PARALLELISM);
  const subtask = checkInt('subtask', target.subtask, 0, parallelism - 1);
  const keyBytes =
    target.keyBytes === undefined
      ? DEFAULT_KEY_BYTES
      : checkInt('keyBytes', target.keyBytes, 0, MAX_KEY_BYTES);
  return { subtask, parallelism, maxParallelism, keyBytes };
}

/**
 * Checks a `rescale` option (a `TypeError` naming the field); returns nothing. Recoveries
 * call it up front, so a bad option fails the call, not the fetch.
 *
 * @example
 * ```ts
 * checkRescaleOption({ subtask: 2, parallelism: 2 }); // TypeError: rescale.subtask …
 * ```
 */
export function checkRescaleOption(option: unknown): void {
  if (typeof option !== 'object' || option === null) {
    throw invalidOption('rescale', 'an object', option);
  }
  const o = option as RescaleOption;
  if (o.maxRecordBytes !== undefined)
    checkInt('maxRecordBytes', o.maxRecordBytes, 0, MAX_ENTRY_LENGTH);
  if (!isPredicate(o)) resolveRescaleTarget(o);
}

/**
 * `option.keep` as the parser calls it: its answer must be a boolean. A Promise (an `async
 * keep`) would count as true for every record, and its rejection would crash the process, so
 * it is a {@link MisuseError} that fails the recovery, its rejection observed.
 *
 * @example
 * ```ts
 * const keep = booleanKeep({ keep: (record) => record.length > 4 });
 * ```
 */
export function booleanKeep<R, F>(option: {
  keep(record: R, from: F): unknown;
}): (record: R, from: F) => boolean {
  return (record, from) => {
    const answer = option.keep(record, from);
    if (typeof answer === 'boolean') return answer;
    if (answer instanceof Promise) answer.catch(() => undefined);
    throw new MisuseError(
      `options.rescale.keep must return a boolean; it returned ${describeValue(answer)}` +
        (answer instanceof Promise ? ' (a Promise: keep must decide synchronously)' : ''),
    );
  };
}

/**
 * The parser rules of a `rescale` option for checkpoint `file`.
 *
 * @example
 * ```ts
 * const rules = recordRules({ subtask: 0, parallelism: 2 }, 'job.spwc');
 * ```
 */
export function recordRules(option: RescaleOption, file: string): RecordRules {
  const maxRecordBytes = option.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  if (isPredicate(option)) {
    return { file, maxRecordBytes, keyBytes: 0, keep: booleanKeep(option) };
  }
  const { subtask, parallelism, maxParallelism, keyBytes } = resolveRescaleTarget(option);
  return {
    file,
    maxRecordBytes,
    keyBytes,
    keepKeyHash: (keyHash) => operatorForKeyHash(keyHash, parallelism, maxParallelism) === subtask,
  };
}

/**
 * How a checkpoint taken during a rescaled recovery writes its remainder: a v2 file whose
 * entries name this recovery's new subtask as the one that wrote them (0 for a custom `keep`).
 * Undefined without rescaling (a v1 file, as before).
 *
 * @example
 * ```ts
 * remainderFormat({ subtask: 3, parallelism: 4 }); // { subtask: 3 }
 * ```
 */
export function remainderFormat(
  rescale: RescaleOption | undefined,
): { subtask: number } | undefined {
  if (rescale === undefined) return undefined;
  return { subtask: isPredicate(rescale) ? 0 : rescale.subtask };
}
