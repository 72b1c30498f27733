/**
 * The embedding contract of DESIGN §5 for endings and mistakes: an aborted signal or
 * `cancel(reason)` rejects `done` with an AbortError whose `cause` is the very reason; every
 * exported error class carries a distinct, stable `code` a `switch` can be exhaustive over; and
 * a wrong option is a `TypeError` naming it, thrown by the call itself, before anything exists.
 */
import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import * as spillway from '../../src/index.ts';
import {
  CancelledError,
  CheckpointPathError,
  recoverChannelState,
  SpillwayError,
  type RecoverOptions,
  type SpillwayErrorCode,
} from '../../src/index.ts';
import { makeSmallCheckpoint, SMALL_LIMITS } from '../helpers/checkpoints.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const sink = () => ({ onBuffer: () => undefined, onFinished: () => undefined });

async function setup() {
  const dir = await makeTempRoot();
  const { path } = await makeSmallCheckpoint(dir);
  return { dir, checkpoint: path };
}

describe('abort keeps the reason', () => {
  it('abort keeps signal.reason as cause: AbortError, ABORT_ERR, the very object', async () => {
    const { dir, checkpoint } = await setup();
    const controller = new AbortController();
    const reason = Object.assign(new Error('shutdown'), { code: 'E_APP_SHUTDOWN' });
    const recovery = recoverChannelState({
      checkpoint,
      spillRoot: dir,
      limits: SMALL_LIMITS,
      signal: controller.signal,
      channels: () => ({
        onBuffer: () => controller.abort(reason),
        onFinished: () => undefined,
      }),
    });
    const error = await recovery.done.then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(CancelledError);
    expect(error).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' });
    expect(error!.cause).toBe(reason);
    expect(listSpill(dir).spillFiles).toEqual([]);
  });

  it('cancel(reason) keeps the reason as cause, even a non-Error one', async () => {
    const { dir, checkpoint } = await setup();
    const reason = { why: 'rescheduled' };
    const recovery = recoverChannelState({ checkpoint, spillRoot: dir, channels: sink });
    recovery.cancel(reason);
    await expect(recovery.done).rejects.toMatchObject({ code: 'ABORT_ERR', cause: reason });
  });

  it('an already aborted signal rejects done with its reason and creates no task dir', async () => {
    const { dir, checkpoint } = await setup();
    const reason = new Error('too late');
    const recovery = recoverChannelState({
      checkpoint,
      spillRoot: dir,
      channels: sink,
      signal: AbortSignal.abort(reason),
    });
    await expect(recovery.done).rejects.toMatchObject({ name: 'AbortError', cause: reason });
    expect(listSpill(dir).taskDirs).toEqual([]);
  });
});

describe('every error has a stable code', () => {
  it('every exported error class carries a distinct stable code', () => {
    const classes = Object.entries(spillway).filter(
      ([name, v]) => typeof v === 'function' && /^[A-Z]\w*Error$/.test(name),
    ) as [string, new (...args: never[]) => SpillwayError][];
    expect(classes.length).toBeGreaterThanOrEqual(15);
    const codes = new Map<string, string>();
    // An abstract base (RemoteLocationError) groups classes for `instanceof`; its subclasses
    // carry the codes. SpillwayError itself keeps its own.
    const isBase = (C: unknown) =>
      C !== SpillwayError &&
      classes.some(([, D]) => D !== C && D.prototype instanceof (C as never));
    for (const [name, Class] of classes.filter(([, C]) => !isBase(C))) {
      expect(Class.prototype instanceof SpillwayError || Class === SpillwayError, name).toBe(true);
      // `code` is an instance field: read it off an instance made from harmless arguments.
      const made = construct(Class);
      expect(made, `${name} could not be constructed`).toBeDefined();
      const code = made!.code;
      expect(code, name).toMatch(/^(ERR_SPILLWAY(_[A-Z_]+)?|ABORT_ERR)$/);
      expect(codes.has(code), `${name} shares ${code} with ${codes.get(code)}`).toBe(false);
      codes.set(code, name);
    }
  });

  it('a switch over SpillwayErrorCode is exhaustive (checked by the compiler)', () => {
    const exitCodeOf = (code: SpillwayErrorCode): number => {
      switch (code) {
        case 'ERR_SPILLWAY_CORRUPT_CHECKPOINT':
        case 'ERR_SPILLWAY_CHECKPOINT_PATH':
        case 'ERR_SPILLWAY_OUTPUT_EXISTS':
        case 'ERR_SPILLWAY_USAGE':
        case 'ERR_SPILLWAY_REMOTE_NOT_FOUND':
        case 'ERR_SPILLWAY_REMOTE_UNSUPPORTED':
        case 'ERR_SPILLWAY_UNKNOWN_OPERATOR':
        case 'ERR_SPILLWAY_TYPE_SPEC':
        case 'ERR_SPILLWAY_REWRITE_REFUSED':
          return 2;
        case 'ABORT_ERR':
          return 130;
        case 'ERR_SPILLWAY':
        case 'ERR_SPILLWAY_CHECKPOINT_DECLINED':
        case 'ERR_SPILLWAY_ABORTED':
        case 'ERR_SPILLWAY_REJECTED':
        case 'ERR_SPILLWAY_MISUSE':
        case 'ERR_SPILLWAY_REGISTRY_CLOSED':
        case 'ERR_SPILLWAY_SPILL_TRUNCATED':
        case 'ERR_SPILLWAY_SPILL_CORRUPT':
        case 'ERR_SPILLWAY_CLEANUP':
        case 'ERR_SPILLWAY_SPILL_ROOT':
        case 'ERR_SPILLWAY_OUTPUT_DIR':
        case 'ERR_SPILLWAY_CHECKPOINT_OUT':
        case 'ERR_SPILLWAY_CONSUMER':
        case 'ERR_SPILLWAY_IO':
        case 'ERR_SPILLWAY_INTERNAL':
        case 'ERR_SPILLWAY_CONSUMER_ABANDONED':
        case 'ERR_SPILLWAY_INSPECTOR':
        case 'ERR_SPILLWAY_INJECTED_FAULT':
        case 'ERR_SPILLWAY_CHECKPOINT_CHANGED':
        case 'ERR_SPILLWAY_REMOTE_ACCESS':
        case 'ERR_SPILLWAY_REMOTE':
        case 'ERR_SPILLWAY_REMOTE_TIMEOUT':
          return 1;
        default: {
          // Adding a code without a case here is a compile error (tsc --noEmit runs in npm test).
          const unhandled: never = code;
          return unhandled;
        }
      }
    };
    expect(exitCodeOf('ERR_SPILLWAY_CHECKPOINT_PATH')).toBe(2);
  });

  it('a missing checkpoint is a CheckpointPathError with code, path and errno, not a raw ENOENT', async () => {
    const dir = await makeTempRoot();
    const recovery = recoverChannelState({
      checkpoint: `${dir}/nope.spwc`,
      spillRoot: dir,
      channels: sink,
    });
    const error = await recovery.done.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CheckpointPathError);
    expect(error).toMatchObject({
      code: 'ERR_SPILLWAY_CHECKPOINT_PATH',
      file: `${dir}/nope.spwc`,
      errno: 'ENOENT',
    });
    expect(listSpill(dir).spillFiles).toEqual([]);
  });
});

/** An instance of an error class from harmless arguments (their constructors differ). */
function construct(Class: new (...args: never[]) => SpillwayError): SpillwayError | undefined {
  for (const args of [['x'], ['x', 'y'], [1, 'x'], ['x', 1, 'y'], [['x'], 'y']]) {
    try {
      return new (Class as unknown as new (...a: unknown[]) => SpillwayError)(...args);
    } catch {
      // Try the next shape.
    }
  }
  return undefined;
}

describe('options are checked when recoverChannelState is called', () => {
  const bad: [string, Partial<Record<keyof RecoverOptions, unknown>>, RegExp, string][] = [
    [
      'channels left out',
      { channels: undefined },
      /options\.channels must be a function/,
      'ERR_INVALID_ARG_TYPE',
    ],
    [
      'checkpoint not a string',
      { checkpoint: 42 },
      /options\.checkpoint must be/,
      'ERR_INVALID_ARG_TYPE',
    ],
    [
      'checkpoint empty',
      { checkpoint: '' },
      /options\.checkpoint must be a non-empty path/,
      'ERR_INVALID_ARG_VALUE',
    ],
    [
      'signal not an AbortSignal',
      { signal: {} },
      /options\.signal must be an AbortSignal/,
      'ERR_INVALID_ARG_TYPE',
    ],
    ['spillRoot a number', { spillRoot: 1 }, /options\.spillRoot must be/, 'ERR_INVALID_ARG_TYPE'],
    [
      'abandonAfterMs negative',
      { abandonAfterMs: -1 },
      /options\.abandonAfterMs must be/,
      'ERR_OUT_OF_RANGE',
    ],
    [
      'a limit of zero',
      { limits: { maxSpillFileBytes: 0 } },
      /options\.limits\.maxSpillFileBytes must be an integer from 1 to/,
      'ERR_OUT_OF_RANGE',
    ],
    [
      'onProgress not a function',
      { onProgress: 'yes' },
      /options\.onProgress must be a function/,
      'ERR_INVALID_ARG_TYPE',
    ],
  ];
  for (const [what, change, message, code] of bad) {
    it(`options TypeError naming the option: ${what}`, async () => {
      const dir = await makeTempRoot();
      const options = { checkpoint: 'job.spwc', spillRoot: dir, channels: sink, ...change };
      let thrown: unknown;
      try {
        recoverChannelState(options as RecoverOptions);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(code === 'ERR_OUT_OF_RANGE' ? RangeError : TypeError);
      expect(thrown).toMatchObject({ code, message: expect.stringMatching(message) });
      // Thrown by the call itself: nothing was started, so the spill root is untouched.
      expect(await readdir(dir)).toEqual([]);
    });
  }
});
