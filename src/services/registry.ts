/**
 * The `resourceCloser` backstop (Flink `AutoCloseableRegistry`, §7.1/§7.3): whatever is
 * registered here is closed when the task ends, whichever path it ends by. A dropped mail (row GAP3)
 * leaves no other owner for the fetched state, so this registry must never skip an entry and
 * must never let a late registration slip through unclosed (F5).
 */
import { ErrorCollector, RegistryClosedError } from './errors.ts';

/** Anything the registry can close; `close()` may be sync or async, and may throw. */
export interface Closeable {
  close(): void | Promise<void>;
}

/**
 * Closes its entries in reverse registration order, once.
 *
 * - Every entry is attempted even when some fail; the first failure is the error and later
 *   ones are attached to its `.suppressed` (row C3).
 * - Registering after `close()` started closes the argument instead and throws
 *   {@link RegistryClosedError} (row F5).
 *
 * @example
 * ```ts
 * const registry = new CloseableRegistry();
 * registry.register(state); // closed second
 * registry.register(drainer); // closed first
 * await registry.close(); // rejects with the first close error, later ones suppressed
 * await registry.settled(); // also waits for arguments closed by late register() calls
 * ```
 */
export class CloseableRegistry {
  // A Map keeps insertion order and collapses duplicates at their first position, like the
  // LinkedHashMap Flink uses. Keyed, so an owner can name what it registered (the task's
  // resource ids) instead of keeping a second map from names to closeables.
  private readonly entries = new Map<unknown, Closeable>();
  private closing: Promise<void> | undefined;
  // Late closes run detached from any caller; tracking them is what lets settled() prove
  // that nothing is still being closed in the background.
  private readonly lateCloses: Promise<void>[] = [];
  private readonly closeFinished: Promise<void>;
  private markCloseFinished: () => void = () => {};

  constructor() {
    // settled() may be called before close(), so it needs something to wait on already.
    this.closeFinished = new Promise<void>((resolve) => (this.markCloseFinished = resolve));
  }

  /** True from the first `close()` call on (also while entries are still being closed). */
  get isClosed(): boolean {
    return this.closing !== undefined;
  }

  /** Number of registered entries (0 once `close()` has taken its snapshot). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Registers `c` to be closed by {@link close}, under `key` (default: `c` itself); a key that
   * is registered already keeps its place and gets the new closeable. Synchronous so that a
   * caller can register before posting the first mail without an await in between (row GAP3).
   *
   * @throws RegistryClosedError if the registry is closed or closing; `c` has then already been
   *   told to close (its errors are swallowed, its completion is awaited by {@link settled}).
   */
  register(c: Closeable, key: unknown = c): void {
    if (this.closing === undefined) {
      this.entries.set(key, c);
      return;
    }
    this.lateCloses.push(closeQuietly(c));
    throw new RegistryClosedError('registry already closed; closed the argument instead');
  }

  /**
   * Returns true iff something was registered under `key` (a closeable registered without a
   * key is its own key); it will then not be closed by this registry.
   */
  unregister(key: unknown): boolean {
    return this.entries.delete(key);
  }

  /**
   * Closes every entry in reverse registration order, one after the other (later resources may
   * depend on earlier ones, so they go first). Rejects with the first error, the rest
   * suppressed. Every call returns the same promise.
   */
  close(): Promise<void> {
    if (this.closing !== undefined) return this.closing;
    // Snapshot and clear first: register() during the close must take the late path, and
    // unregister() must no longer be able to pull an entry out of the running close.
    const snapshot = [...this.entries.values()].reverse();
    this.entries.clear();
    this.closing = closeAll(snapshot);
    this.closing.then(this.markCloseFinished, this.markCloseFinished);
    return this.closing;
  }

  /**
   * Resolves (never rejects) once {@link close} has finished and every argument closed by a
   * late {@link register} has finished closing. Waits for `close()` to be called.
   */
  async settled(): Promise<void> {
    await this.closeFinished;
    // A late register() may happen while we wait, so loop until the list stops growing.
    let seen = -1;
    while (seen !== this.lateCloses.length) {
      seen = this.lateCloses.length;
      await Promise.all(this.lateCloses);
    }
  }
}

async function closeAll(snapshot: readonly Closeable[]): Promise<void> {
  const errors = new ErrorCollector();
  for (const c of snapshot) {
    try {
      await c.close();
    } catch (e) {
      errors.add(e);
    }
  }
  errors.throwIfAny();
}

/** Starts `c.close()` now (so the argument is closing before register() throws); never rejects. */
function closeQuietly(c: Closeable): Promise<void> {
  try {
    return Promise.resolve(c.close()).then(
      () => undefined,
      () => undefined,
    );
  } catch {
    return Promise.resolve();
  }
}
