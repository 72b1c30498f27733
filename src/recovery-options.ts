/**
 * The options of a recovery, checked when `recoverChannelState` is called: a wrong one is a
 * `TypeError` naming it, at once, rather than a failure deep inside a stage later on. The
 * errors carry Node's own codes (`ERR_INVALID_ARG_TYPE`, `ERR_INVALID_ARG_VALUE`), as Node's
 * APIs do for the same mistakes.
 */
import { checkRescaleOption } from './services/rescale/rescale-options.ts';
import { SEGMENT_HEADER_BYTES } from './services/spill/segment-format.ts';
import { describeValue as describe, invalidOption as invalid } from './services/option-error.ts';

function optional(o: Record<string, unknown>, name: string, type: string, expected: string): void {
  const v = o[name];
  if (v !== undefined && typeof v !== type) throw invalid(name, expected, v);
}

function positiveInteger(path: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'number') throw invalid(path, 'a positive integer', value);
  if (!Number.isSafeInteger(value) || value < 1) {
    throw invalid(path, 'a positive integer', value, true);
  }
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
export function validateRecoverOptions(options: unknown): void {
  if (options === null || typeof options !== 'object') {
    const error = new TypeError(
      `recoverChannelState(options): options must be an object; got ${describe(options)}`,
    ) as TypeError & { code: string };
    error.code = 'ERR_INVALID_ARG_TYPE';
    throw error;
  }
  const o = options as Record<string, unknown>;
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
  const signal = o.signal as AbortSignal | undefined;
  if (
    signal !== undefined &&
    (signal === null ||
      typeof signal !== 'object' ||
      typeof signal.aborted !== 'boolean' ||
      typeof signal.addEventListener !== 'function')
  ) {
    throw invalid('signal', 'an AbortSignal', signal);
  }
  for (const name of ['abandonAfterMs', 'progressIntervalMs'] as const) {
    const v = o[name];
    if (v === undefined) continue;
    if (typeof v !== 'number') throw invalid(name, 'a number of milliseconds', v);
    if (!Number.isFinite(v) || v < 0) throw invalid(name, 'a number of milliseconds ≥ 0', v, true);
  }
  if (o.rescale !== undefined) checkRescaleOption(o.rescale);
  if (o.remote !== undefined) validateRemote(o.remote);
  const limits = o.limits;
  if (limits !== undefined) {
    if (limits === null || typeof limits !== 'object') throw invalid('limits', 'an object', limits);
    const l = limits as Record<string, unknown>;
    for (const name of ['maxSpillFileBytes', 'maxSegmentBytes', 'bufferBytes', 'readChunkBytes']) {
      positiveInteger(`limits.${name}`, l[name]);
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
  const r = remote as Record<string, unknown>;
  for (const name of ['maxRetries', 'backoffMs', 'maxBackoffMs', 'stallTimeoutMs', 'deadlineMs']) {
    const v = r[name];
    if (v === undefined) continue;
    if (typeof v !== 'number') throw invalid(`remote.${name}`, 'an integer ≥ 0', v);
    if (!Number.isSafeInteger(v) || v < 0)
      throw invalid(`remote.${name}`, 'an integer ≥ 0', v, true);
  }
  if (r.onRetry !== undefined && typeof r.onRetry !== 'function') {
    throw invalid('remote.onRetry', 'a function', r.onRetry);
  }
  const s3 = r.s3;
  if (s3 === undefined) return;
  if (s3 === null || typeof s3 !== 'object') throw invalid('remote.s3', 'an object', s3);
  const endpoint = (s3 as Record<string, unknown>).endpoint;
  if (
    endpoint !== undefined &&
    (typeof endpoint !== 'string' || !/^https?:\/\/[^/]/i.test(endpoint))
  ) {
    throw invalid(
      'remote.s3.endpoint',
      'an http(s):// URL',
      endpoint,
      typeof endpoint === 'string',
    );
  }
}
