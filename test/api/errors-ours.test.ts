/**
 * DESIGN §5: every error that leaves the library is a `SpillwayError` subclass with a stable
 * code and the original as `cause` (a stream's ENOENT, a spill write's ENOSPC, a consumer's
 * throw), `.suppressed` kept; a wrong or unknown option is a `TypeError` with a code, naming
 * it, with "did you mean" when a known one is close.
 */
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConsumerError,
  IoError,
  isSpillwayError,
  recoverChannelState,
  SpillwayError,
  type RecoverOptions,
} from '../../src/index.ts';
import { seam } from '../helpers/fault-seam.ts';
import { makeSmallCheckpoint, SMALL_LIMITS } from '../helpers/checkpoints.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

afterEach(() => seam.resetFsSeam());

async function setup() {
  const dir = await makeTempRoot();
  const { path } = await makeSmallCheckpoint(dir);
  return { dir, checkpoint: path };
}

const rejection = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as Error,
  );

describe('every error is ours', () => {
  it("a stream's own ENOENT comes back as a ConsumerError with the stream's error as cause", async () => {
    const { dir, checkpoint } = await setup();
    const recovery = recoverChannelState({
      checkpoint,
      spillRoot: dir,
      channels: ({ channel }) => createWriteStream(join(dir, 'no-such-dir', `c${channel}.bin`)),
    });
    const error = await rejection(recovery.done);
    expect(error).toBeInstanceOf(ConsumerError);
    expect(error).toBeInstanceOf(SpillwayError);
    expect(error).toMatchObject({ code: 'ERR_SPILLWAY_CONSUMER', errno: 'ENOENT' });
    expect(error!.cause).toMatchObject({ code: 'ENOENT', syscall: 'open' });
    expect(Array.isArray((error as SpillwayError).suppressed)).toBe(true);
    expect(listSpill(dir).taskDirs).toEqual([]);
  });

  it("a consumer's throw comes back as a ConsumerError whose cause is the very error", async () => {
    const { dir, checkpoint } = await setup();
    const boom = new Error('quota exceeded');
    const recovery = recoverChannelState({
      checkpoint,
      spillRoot: dir,
      limits: SMALL_LIMITS,
      channels: () => ({
        onBuffer: () => {
          throw boom;
        },
        onFinished: () => undefined,
      }),
    });
    const error = await rejection(recovery.done);
    expect(error).toBeInstanceOf(ConsumerError);
    expect(error!.message).toBe('quota exceeded');
    expect(error!.cause).toBe(boom);
  });

  it('a spill write hitting ENOSPC comes back as an IoError with errno, syscall and cause', async () => {
    const { dir, checkpoint } = await setup();
    seam.injectFault({ op: 'write', code: 'ENOSPC', pathIncludes: 'spill-segment-' });
    const recovery = recoverChannelState({
      checkpoint,
      spillRoot: dir,
      limits: SMALL_LIMITS,
      channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
    });
    const error = await rejection(recovery.done);
    expect(error).toBeInstanceOf(IoError);
    expect(isSpillwayError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'ERR_SPILLWAY_IO', errno: 'ENOSPC', syscall: 'write' });
    expect(error!.cause).toMatchObject({ code: 'ENOSPC' });
    expect(listSpill(dir).spillFiles).toEqual([]);
  });
});

describe('options are checked by name', () => {
  const base = (): RecoverOptions => ({
    checkpoint: 'job.spwc',
    channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
  });

  it("an unknown option key is a TypeError naming it, with did you mean ('singal' → 'signal')", () => {
    const options = { ...base(), singal: AbortSignal.timeout(1000) } as RecoverOptions;
    expect(() => recoverChannelState(options)).toThrow(
      expect.objectContaining({
        name: 'TypeError',
        code: 'ERR_INVALID_ARG_VALUE',
        message: expect.stringMatching(
          /options\.singal is not an option \(did you mean 'signal'\?\)/,
        ),
      }),
    );
  });

  it('an unknown key inside limits is named with its path; one far from any key gets no guess', () => {
    const limits = { maxSpilFileBytes: 4096 } as RecoverOptions['limits'];
    expect(() => recoverChannelState({ ...base(), limits })).toThrow(
      /options\.limits\.maxSpilFileBytes is not an option \(did you mean 'maxSpillFileBytes'\?\)/,
    );
    const odd = { ...base(), zzzzzz: 1 } as RecoverOptions;
    expect(() => recoverChannelState(odd)).toThrow(/options\.zzzzzz is not an option; known: /);
  });

  it('the internal options (hooks, machine) are not public options', () => {
    const options = { ...base(), hooks: {} } as RecoverOptions;
    expect(() => recoverChannelState(options)).toThrow(/options\.hooks is not an option/);
  });

  it("the rescale option's TypeError has a code", () => {
    const bad = (rescale: unknown) => () =>
      recoverChannelState({ ...base(), rescale: rescale as RecoverOptions['rescale'] });
    expect(bad({ subtask: 2, parallelism: 2 })).toThrow(
      expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' }),
    );
    expect(bad({ subtask: '0', parallelism: 2 })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }),
    );
    expect(bad(7)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    expect(bad({ subtask: 0, paralelism: 2 })).toThrow(/did you mean 'parallelism'/);
  });

  it('a checkpoint option typo is a TypeError with did you mean, thrown by the call', async () => {
    const { dir, checkpoint } = await setup();
    const recovery = recoverChannelState({
      checkpoint,
      spillRoot: dir,
      channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
    });
    expect(() => recovery.checkpoint(1, { outt: 'x' } as never)).toThrow(
      /options\.outt is not an option \(did you mean 'out'\?\)/,
    );
    await recovery.done;
  });
});
