/**
 * The async half of the test kit: hand-settled promises, ways to let background work run, a
 * state poll and a hang guard, and a pause in the fs seam. Every wait here is for a state or an
 * event; a bound, where there is one, only turns a hang into a readable failure.
 */
import { stat } from 'node:fs/promises';
import { type FsOp } from '../../src/services/fs.ts';
import { originalOf } from '../../src/services/errors.ts';
import { seam } from './fault-seam.ts';

export interface Deferred<T = void> {
  readonly promise: Promise<T>;
  /** True once `resolve` or `reject` was called. */
  readonly settled: boolean;
  resolve(value: T): void;
  reject(error: unknown): void;
}

/** A promise the test settles by hand. Its rejection is never reported as unhandled. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  let settled = false;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return {
    promise,
    get settled() {
      return settled;
    },
    resolve(value) {
      settled = true;
      resolve(value);
    },
    reject(error) {
      settled = true;
      reject(error);
    },
  };
}

/**
 * Settles to the rejection reason, or to 'ok'; attached at once so nothing goes unhandled. The
 * reason is the first cause as it happened: the original under the library's wrapper (a
 * consumer's throw under its ConsumerError, an errno error under its IoError), which is what
 * the guarantee tests judge; test/api/errors-ours.test.ts proves the wrapping itself.
 */
export function settle(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => 'ok',
    (e: unknown) => originalOf(e),
  );
}

/** Lets `n` macrotask turns pass, so work already started in the background can finish. */
export async function macrotasks(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Turns checked at once (in-memory progress shows within a few); later checks are on timer ticks. */
const QUICK_TURNS = 100;

/**
 * Polls `predicate` until it holds: a state, never a duration. The first checks come once per
 * macrotask turn, later ones once per timer tick, so real disk I/O can progress without a busy
 * loop. False if it still does not hold after `limitMs` (a hang guard, not a timing assertion).
 */
export async function eventually(predicate: () => boolean, limitMs = 20_000): Promise<boolean> {
  const deadline = Date.now() + limitMs;
  for (let turn = 0; !predicate(); turn++) {
    if (Date.now() > deadline) return predicate();
    await new Promise<void>((resolve) =>
      turn < QUICK_TURNS ? setImmediate(resolve) : setTimeout(resolve, 1),
    );
  }
  return true;
}

/** {@link eventually} as an assertion: throws `never happened: <what>` on a hang. */
export async function until(predicate: () => boolean, what: string, limitMs = 20_000) {
  if (!(await eventually(predicate, limitMs))) throw new Error(`never happened: ${what}`);
}

export class HangError extends Error {}

/**
 * A deadlock detector, not a timing assertion: a promise that should settle but does not is a
 * hang (e.g. a close waiting forever on a fenced read), reported as such instead of letting the
 * whole suite time out.
 */
export function withHangGuard<T>(p: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new HangError(`hang: ${what} did not settle`)), ms);
    timer.unref();
  });
  return Promise.race([p, guard]).finally(() => clearTimeout(timer));
}

export interface SeamPause {
  /** Resolves when the matching operation is held. */
  reached: Promise<void>;
  /** Lets the held operation (and everything after it) run. */
  release(): void;
  /** Every seam operation requested after the held one, in order. */
  after: { op: FsOp; path: string }[];
}

/**
 * Holds the first seam operation that matches until `release()`: `match` is an operation
 * (optionally on a path containing `pathIncludes`) or a predicate. Later operations pass
 * through and are recorded in `after`. Replaces any fs hook already set.
 */
export function pauseOn(
  match: FsOp | ((op: FsOp, path: string) => boolean),
  pathIncludes = '',
): SeamPause {
  const matches =
    typeof match === 'function'
      ? match
      : (op: FsOp, path: string) => op === match && path.includes(pathIncludes);
  const reached = deferred();
  const gate = deferred();
  const after: SeamPause['after'] = [];
  let paused = false;
  seam.setFsHook(async (op, path) => {
    if (paused) {
      after.push({ op, path });
    } else if (matches(op, path)) {
      paused = true;
      reached.resolve();
      await gate.promise;
    }
  });
  return { reached: reached.promise, release: () => gate.resolve(), after };
}

export async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
