/**
 * Small test utilities shared by the model, race and fault suites: deferreds, a hang guard, a
 * synchronous look at what a spill root holds, and the tiny checkpoint they all recover.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCheckpoint, type MadeCheckpoint } from '../../src/services/checkpoint/generator.ts';
import { SpillRoot } from '../../src/services/spill-root/spill-root.ts';
import type { SpillLimits } from '../../src/services/spill/limits.ts';

export interface Deferred<T = void> {
  readonly promise: Promise<T>;
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

export class HangError extends Error {}

/** Lets `n` macrotask turns pass, so work already started in the background can finish. */
export async function turns(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Polls `predicate` once per macrotask turn; false if it never held within `maxTurns`. */
export async function eventually(predicate: () => boolean, maxTurns = 2_000): Promise<boolean> {
  for (let i = 0; i < maxTurns; i++) {
    if (predicate()) return true;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return predicate();
}

/** What a spill root holds right now, read synchronously (so it can be taken at an instant). */
export interface SpillListing {
  /** `task-*` dirs under any `owner-*` dir. */
  taskDirs: string[];
  /** `spill-segment-*.bin` files anywhere under the root. */
  spillFiles: string[];
}

export function listSpill(spillRoot: string): SpillListing {
  const base = join(spillRoot, 'spillway');
  const taskDirs: string[] = [];
  const spillFiles: string[] = [];
  if (!existsSync(base)) return { taskDirs, spillFiles };
  for (const entry of readdirSync(base, { recursive: true, encoding: 'utf8' })) {
    const name = entry.split('/').at(-1)!;
    if (/^task-/.test(name) && /^owner-[^/]+\/task-[^/]+$/.test(entry)) taskDirs.push(entry);
    if (/^spill-segment-\d+\.bin$/.test(name)) spillFiles.push(entry);
  }
  return { taskDirs, spillFiles };
}

/** A temp dir that the caller removes with {@link removeDir}; prefix `spillway-test-`. */
export function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'spillway-test-'));
}

/** Closes the spill root's owner dir (if this process opened it) and removes `dir`. */
export async function removeSpillRoot(dir: string): Promise<void> {
  try {
    await (await SpillRoot.open(dir, { sweep: false })).close();
  } catch {
    // The root may never have been opened, or a test fault broke it: rm below still cleans.
  }
  await rm(dir, { recursive: true, force: true });
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/**
 * Limits that make a 128 KiB checkpoint produce several spill files of several segments each,
 * and several read chunks and buffers per file: every lazy open and rotation happens.
 */
export const SMALL_LIMITS: SpillLimits = {
  maxSpillFileBytes: 32 * 1024,
  maxSegmentBytes: 8 * 1024,
  bufferBytes: 4 * 1024,
  readChunkBytes: 16 * 1024,
};

/** A deterministic 128 KiB checkpoint over 3 channels, in `dir`. */
export function makeSmallCheckpoint(dir: string, kib = 128): Promise<MadeCheckpoint> {
  return makeCheckpoint({
    out: join(dir, 'in.spwc'),
    gates: 1,
    channels: 3,
    mb: kib / 1024,
    seed: 7,
    maxEntryBytes: 6 * 1024,
  });
}
