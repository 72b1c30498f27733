/**
 * The options of a recovery, checked when `recoverChannelState` is called: a wrong one is a
 * `TypeError` naming it, at once, rather than a failure deep inside a stage later on. The
 * errors carry Node's own codes (`ERR_INVALID_ARG_TYPE`, `ERR_INVALID_ARG_VALUE`), as Node's
 * APIs do for the same mistakes.
 */
import { checkRescaleOption } from './services/rescale/rescale-options.ts';
import { SEGMENT_HEADER_BYTES } from './services/spill/segment-format.ts';
import { describeValue as describe, invalidOption as invalid } from './services/option-error.ts';
import { checkFlinkKey } from './services/formats/flink/stream-element.ts';
import { didYouMean } from './services/did-you-mean.ts';
import { checkRange, type RangedOption } from './services/option-ranges.ts';
import { isHttpUrl } from './services/locations/schemes.ts';
import type { RemoteOptions, S3Options } from './services/locations/remote-options.ts';
import type { RecordPredicate } from './services/rescale/rescale-options.ts';
import type { RescaleTarget } from './services/rescale/key-groups.ts';
import type { SpillLimits } from './services/spill/limits.ts';
import type { FlinkSelection } from './services/formats/flink/entry-source.ts';
import type { CheckpointOptions, RecoverOptions } from './recovery-types.ts';

/**
 * The keys of an options type, as a list to check a caller's object against: one table per
 * type, which the compiler holds to the type (a key the type lacks, or one of its keys left
 * out, is a type error), so no key list is copied by hand.
 */
function keysOf<T>(table: Record<keyof T & string, true>): readonly string[] {
  return Object.keys(table);
}

/** The keys `recoverChannelState` knows; any other is a mistake (`singal` for `signal`). */
const RECOVER_KEYS = keysOf<RecoverOptions>({
  checkpoint: true,
  channels: true,
  spillRoot: true,
  signal: true,
  inspect: true,
  limits: true,
  remote: true,
  taskId: true,
  autoFinish: true,
  abandonAfterMs: true,
  onProgress: true,
  progressIntervalMs: true,
  rescale: true,
  flink: true,
});
const LIMIT_KEYS = keysOf<SpillLimits>({
  maxSpillFileBytes: true,
  maxSegmentBytes: true,
  bufferBytes: true,
  readChunkBytes: true,
});
const REMOTE_KEYS = keysOf<RemoteOptions>({
  maxRetries: true,
  backoffMs: true,
  maxBackoffMs: true,
  stallTimeoutMs: true,
  deadlineMs: true,
  onRetry: true,
  s3: true,
});
const S3_KEYS = keysOf<S3Options>({ endpoint: true, region: true, credentials: true });
/** Both forms of `rescale` (a target or a `keep` predicate), and the cap they share. */
const RESCALE_KEYS = keysOf<RescaleTarget & RecordPredicate & { maxRecordBytes?: number }>({
  subtask: true,
  parallelism: true,
  maxParallelism: true,
  keyBytes: true,
  maxRecordBytes: true,
  keep: true,
});
const CHECKPOINT_KEYS = keysOf<CheckpointOptions>({ out: true, signal: true });
const FLINK_KEYS = keysOf<FlinkSelection>({
  operator: true,
  subtask: true,
  outputState: true,
  key: true,
  allowPaths: true,
  relocate: true,
  upstream: true,
});

/**
 * Throws a `TypeError` (`ERR_INVALID_ARG_VALUE`) naming the first key of `o` that is not in
 * `known`, with the closest known key when one is close (`options.singal` → `signal`).
 *
 * @example
 * ```ts
 * checkKnownKeys('options', { singal: s }, ['signal']);
 * // TypeError: options.singal is not an option (did you mean 'signal'?)
 * ```
 */
export function checkKnownKeys(path: string, o: object, known: readonly string[]): void {
  for (const key of Object.keys(o)) {
    if (known.includes(key)) continue;
    const error = new TypeError(
      `${path}.${key} is not an option${didYouMean(key, known)}; known: ${known.join(', ')}`,
    ) as TypeError & { code: string };
    error.code = 'ERR_INVALID_ARG_VALUE';
    throw error;
  }
}

/**
 * Checks the options of `recovery.checkpoint(id, options)`: a `TypeError` naming the wrong one.
 *
 * @example
 * ```ts
 * validateCheckpointOptions({ outt: 'cp.spwc' }); // TypeError: options.outt is not an option (did you mean 'out'?)
 * ```
 */
export function validateCheckpointOptions(options: unknown): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object') {
    throw invalid('(checkpoint options)', 'an object', options);
  }
  checkKnownKeys('options', options, CHECKPOINT_KEYS);
  const o = options as Record<string, unknown>;
  if (o.out !== undefined && (typeof o.out !== 'string' || o.out === '')) {
    throw invalid('out', 'a non-empty path (a string)', o.out, typeof o.out === 'string');
  }
  checkSignal(o.signal);
}

function checkSignal(signal: unknown): void {
  const s = signal as AbortSignal | undefined;
  if (
    s !== undefined &&
    (s === null ||
      typeof s !== 'object' ||
      typeof s.aborted !== 'boolean' ||
      typeof s.addEventListener !== 'function')
  ) {
    throw invalid('signal', 'an AbortSignal', s);
  }
}

function optional(o: Record<string, unknown>, name: string, type: string, expected: string): void {
  const v = o[name];
  if (v !== undefined && typeof v !== type) throw invalid(name, expected, v);
}

/**
 * Throws a `TypeError` naming the first option that is wrong; returns if they are all fine.
 *
 * @example
 * ```ts
 * validateRecoverOptions({ checkpoint: 'job.spwc' });
 * // TypeError: options.channels must be a function returning each channel's consumer; got undefined
 * ```
 */
export function validateRecoverOptions(
  options: unknown,
  internalKeys: readonly string[] = [],
): void {
  if (options === null || typeof options !== 'object') {
    const error = new TypeError(
      `recoverChannelState(options): options must be an object; got ${describe(options)}`,
    ) as TypeError & { code: string };
    error.code = 'ERR_INVALID_ARG_TYPE';
    throw error;
  }
  const o = options as Record<string, unknown>;
  checkKnownKeys(
    'options',
    o,
    internalKeys.length === 0 ? RECOVER_KEYS : [...RECOVER_KEYS, ...internalKeys],
  );
  if (typeof o.checkpoint !== 'string') {
    throw invalid('checkpoint', 'the path of a checkpoint file (a string)', o.checkpoint);
  }
  if (o.checkpoint === '') throw invalid('checkpoint', 'a non-empty path', o.checkpoint, true);
  if (typeof o.channels !== 'function') {
    throw invalid('channels', "a function returning each channel's consumer", o.channels);
  }
  optional(o, 'spillRoot', 'string', 'a directory path (a string)');
  optional(o, 'taskId', 'string', 'a string');
  optional(o, 'autoFinish', 'boolean', 'a boolean');
  optional(o, 'inspect', 'function', 'a function');
  optional(o, 'onProgress', 'function', 'a function');
  checkSignal(o.signal);
  for (const name of ['abandonAfterMs', 'progressIntervalMs'] as const) {
    const v = o[name];
    if (v === undefined) continue;
    if (typeof v !== 'number') throw invalid(name, 'a number of milliseconds', v);
    // Fractions of a millisecond were always fine here: only the range is checked for them.
    checkRange(name, Number.isFinite(v) ? Math.ceil(v) : v);
  }
  if (o.rescale !== undefined) {
    if (o.rescale !== null && typeof o.rescale === 'object') {
      checkKnownKeys('options.rescale', o.rescale, RESCALE_KEYS);
    }
    checkRescaleOption(o.rescale);
  }
  if (o.flink !== undefined) validateFlink(o.flink, o.rescale !== undefined);
  if (o.remote !== undefined) validateRemote(o.remote);
  const limits = o.limits;
  if (limits !== undefined) {
    if (limits === null || typeof limits !== 'object') throw invalid('limits', 'an object', limits);
    checkKnownKeys('options.limits', limits, LIMIT_KEYS);
    const l = limits as Record<string, unknown>;
    for (const name of ['maxSpillFileBytes', 'maxSegmentBytes', 'bufferBytes', 'readChunkBytes']) {
      checkRange(`limits.${name}` as RangedOption, l[name]);
    }
    if (typeof l.maxSegmentBytes === 'number' && l.maxSegmentBytes <= SEGMENT_HEADER_BYTES) {
      throw invalid(
        'limits.maxSegmentBytes',
        `more than ${SEGMENT_HEADER_BYTES} (a segment header)`,
        l.maxSegmentBytes,
        true,
      );
    }
  }
}

/** `options.remote`: the retry policy's numbers, the retry callback, the S3 endpoint. */
function validateRemote(remote: unknown): void {
  if (remote === null || typeof remote !== 'object') throw invalid('remote', 'an object', remote);
  checkKnownKeys('options.remote', remote, REMOTE_KEYS);
  const r = remote as Record<string, unknown>;
  for (const name of ['maxRetries', 'backoffMs', 'maxBackoffMs', 'stallTimeoutMs', 'deadlineMs']) {
    checkRange(`remote.${name}` as RangedOption, r[name]);
  }
  if (r.onRetry !== undefined && typeof r.onRetry !== 'function') {
    throw invalid('remote.onRetry', 'a function', r.onRetry);
  }
  const s3 = r.s3;
  if (s3 === undefined) return;
  if (s3 === null || typeof s3 !== 'object') throw invalid('remote.s3', 'an object', s3);
  checkKnownKeys('options.remote.s3', s3, S3_KEYS);
  const endpoint = (s3 as Record<string, unknown>).endpoint;
  if (endpoint !== undefined && (typeof endpoint !== 'string' || !isHttpUrl(endpoint))) {
    throw invalid(
      'remote.s3.endpoint',
      'an http(s):// URL',
      endpoint,
      typeof endpoint === 'string',
    );
  }
}

/** `options.flink`: operator, subtask, side, path rules, key. */
function validateFlink(flink: unknown, rescaling: boolean): void {
  if (flink === null || typeof flink !== 'object') throw invalid('flink', 'an object', flink);
  const f = flink as Record<string, unknown>;
  // An unknown key names the closest known one, as at every other level of the options.
  checkKnownKeys('options.flink', f, FLINK_KEYS);
  if (f.upstream !== undefined) {
    const ok =
      f.upstream !== null &&
      typeof f.upstream === 'object' &&
      Object.entries(f.upstream).every(
        ([gate, op]) => /^\d+$/.test(gate) && typeof op === 'string' && op !== '',
      );
    if (!ok) throw invalid('flink.upstream', 'an object of gate numbers to operators', f.upstream);
    if (!rescaling) throw invalid('flink.upstream', 'only with rescale', f.upstream, true);
  }
  if (typeof f.operator !== 'string' || f.operator === '') {
    throw invalid('flink.operator', 'an operator id, uid or name (a non-empty string)', f.operator);
  }
  if (f.subtask === undefined) throw invalid('flink.subtask', 'an integer ≥ 0', f.subtask);
  checkRange('flink.subtask', f.subtask);
  optional(f, 'outputState', 'boolean', 'a boolean');
  if (f.outputState === true && rescaling) {
    throw invalid(
      'flink.outputState',
      'false when rescaling (only input channels are rescaled)',
      true,
      true,
    );
  }
  try {
    checkFlinkKey(f.key);
  } catch (e) {
    throw invalid('flink.key', "'long', 'int' or { bytes: K }", f.key, true);
  }
  if (f.allowPaths !== undefined) {
    if (
      !Array.isArray(f.allowPaths) ||
      f.allowPaths.some((p) => typeof p !== 'string' || p === '')
    ) {
      throw invalid('flink.allowPaths', 'an array of directory paths', f.allowPaths);
    }
  }
  if (f.relocate !== undefined) {
    const ok =
      Array.isArray(f.relocate) &&
      f.relocate.every(
        (r: unknown) =>
          r !== null &&
          typeof r === 'object' &&
          typeof (r as { from?: unknown }).from === 'string' &&
          typeof (r as { to?: unknown }).to === 'string' &&
          (r as { from: string }).from !== '' &&
          (r as { to: string }).to !== '',
      );
    if (!ok) throw invalid('flink.relocate', 'an array of { from, to } path prefixes', f.relocate);
  }
}
