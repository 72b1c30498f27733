/**
 * API §5: options are checked when `recoverChannelState` is called — a wrong `remote` option is
 * a TypeError naming it, before any request is made or any file created.
 */
import { describe, expect, it } from 'vitest';
import { recoverChannelState } from '../../src/index.ts';

const base = {
  checkpoint: 's3://ckpt/cp.spwc',
  channels: () => ({ onBuffer() {}, onFinished() {} }),
};

describe('options.remote is checked up front (TypeError naming the option)', () => {
  it.each<[string, unknown, RegExp]>([
    ['not an object', 5, /^options\.remote must be an object; got 5$/],
    [
      'a negative retry count',
      { maxRetries: -1 },
      /^options\.remote\.maxRetries must be an integer from 0 to 1000000; got -1$/,
    ],
    [
      'a string stall timeout',
      { stallTimeoutMs: '5s' },
      /^options\.remote\.stallTimeoutMs must be an integer from 0 to 2147483647; got "5s"$/,
    ],
    ['onRetry not a function', { onRetry: 'log' }, /^options\.remote\.onRetry must be a function/],
    [
      'an endpoint that is not a URL',
      { s3: { endpoint: 'localhost:9000' } },
      /^options\.remote\.s3\.endpoint must be an http\(s\):\/\/ URL/,
    ],
  ])('%s', (_name, remote, message) => {
    // A number out of its range is a RangeError (ERR_OUT_OF_RANGE); the rest TypeErrors.
    expect(() => recoverChannelState({ ...base, remote } as never)).toThrow(
      _name === 'a negative retry count' ? RangeError : TypeError,
    );
    expect(() => recoverChannelState({ ...base, remote } as never)).toThrow(message);
  });
});
