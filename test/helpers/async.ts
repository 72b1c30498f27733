import { stat } from 'node:fs/promises';
import { setFsHook, type FsOp } from '../../src/services/fs.ts';

/** Lets several macrotasks pass, so anything that could still settle has had its chance. */
export async function macrotasks(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((res) => (resolve = res));
  return { promise, resolve };
}

/** Settles to the rejection reason, or to 'ok'; attached at once so nothing goes unhandled. */
export function settle(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => 'ok',
    (e: unknown) => e,
  );
}

/**
 * Pauses the first seam operation matching `op` (and `pathIncludes`) until `release()`;
 * `reached` resolves when it is paused.
 */
export function pauseOn(
  op: FsOp,
  pathIncludes = '',
): { reached: Promise<void>; release: () => void } {
  const reached = deferred();
  const gate = deferred();
  let armed = true;
  setFsHook(async (o, path) => {
    if (armed && o === op && path.includes(pathIncludes)) {
      armed = false;
      reached.resolve();
      await gate.promise;
    }
  });
  return { reached: reached.promise, release: gate.resolve };
}

export async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
