/**
 * Promises the library hands out are marked handled at once: a caller may keep one and await it
 * later (after `done`, say), and a rejection in between must not crash a process run with
 * `--unhandled-rejections=strict` (Node's default is `throw`). The caller's own `await` or
 * `.then` still sees the rejection: marking a promise handled only attaches a no-op reaction.
 */

/**
 * Returns `promise` itself, with a no-op rejection handler attached.
 *
 * @example
 * ```ts
 * const done = handled(runTask()); // never an unhandled rejection; `await done` still throws
 * ```
 */
export function handled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}
