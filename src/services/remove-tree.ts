/**
 * A recursive delete with few round trips: what a cancel waits for (cancelCleanupP99Ms).
 *
 * Node 20's `fs.promises.rm({ recursive })` walks the tree one operation at a time — an lstat
 * and an unlink per file, each its own trip through the thread pool and back to the event loop.
 * Measured here on a loaded 2-core machine, cancelling recoveries with ~64 spill files: the
 * worst cancels spent 23–43 ms of their 24–43 ms in that delete (the wait for in-flight I/O
 * before it was ≤ 6 ms). A task dir is flat, so this reads it once, unlinks its entries in
 * bounded parallel batches and removes it: four round trips instead of ~130. Anything
 * unexpected (a subdirectory, a non-empty dir after the batch) falls back to `fs.promises.rm`.
 *
 * It touches the disk only through the operations it is handed (rimraf's pattern): the file
 * seam (fs.ts) hands in its own, so a fault a test arms on the listing or an unlink reaches a
 * task-dir delete. The listing and the unlinks are the fast path and best effort; the general
 * delete they fall back to is the one step whose failure is the delete's.
 */
import { join } from 'node:path';
import { errnoOf } from './errors.ts';

/** The operations a tree delete needs, as the file seam provides them. */
export interface TreeOps {
  lstat(path: string): Promise<{ isDirectory(): boolean }>;
  readdir(path: string): Promise<string[]>;
  unlink(path: string): Promise<void>;
  rmdir(path: string): Promise<void>;
  /** The general delete: a file or a whole tree, missing is fine, links never followed. */
  rmAll(path: string): Promise<void>;
}

/** Unlinks in flight at once: enough to keep the thread pool busy, bounded for huge dirs. */
const BATCH = 64;

/**
 * A flat dir of at most this many entries is deleted synchronously: ~64 unlinks take well under a millisecond of the event loop, while
 * each trip through the thread pool waited for a worker thread — on a loaded machine that wait,
 * not the kernel's work, was the tail of cancel → task dir gone. A bigger dir (a staging dir
 * of many channel files) keeps the batched async path, so the event loop is never held long.
 */
export const SYNC_TREE_MAX_ENTRIES = 256;

/** The synchronous operations of {@link removeSmallTreeSync}. */
export interface TreeOpsSync {
  lstatSync(path: string): { isDirectory(): boolean } | undefined;
  readdirSync(path: string): string[];
  unlinkSync(path: string): void;
  rmdirSync(path: string): void;
}

/**
 * Removes `path` synchronously when it is missing, a file, or a flat dir of at most
 * {@link SYNC_TREE_MAX_ENTRIES} entries; returns false, having removed nothing, for anything
 * else or on any failure before the first unlink, and false after a failure midway too (the
 * caller's async {@link removeTree} then finishes the job and reports what fails).
 *
 * @example
 * ```ts
 * if (!removeSmallTreeSync(taskDir, syncOps)) await removeTree(taskDir, ops);
 * ```
 */
export function removeSmallTreeSync(path: string, ops: TreeOpsSync): boolean {
  try {
    const st = ops.lstatSync(path);
    if (st === undefined) return true;
    if (!st.isDirectory()) {
      ops.unlinkSync(path);
      return true;
    }
    const names = ops.readdirSync(path);
    if (names.length > SYNC_TREE_MAX_ENTRIES) return false;
    const prefix = path.endsWith('/') ? path : `${path}/`;
    for (const name of names) ops.unlinkSync(prefix + name);
    ops.rmdirSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Removes `path` (a file or a tree); a missing path is fine; symlinks are removed, never
 * followed.
 *
 * @example
 * ```ts
 * await removeTree(taskDir, ops);
 * ```
 */
export async function removeTree(path: string, ops: TreeOps): Promise<void> {
  let names: string[];
  try {
    // readdir follows a symlink: only a real directory is listed here; a link, a file or
    // anything else goes to the general delete, which removes the link and never its target.
    if (!(await ops.lstat(path)).isDirectory()) return await ops.rmAll(path);
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return;
    throw e;
  }
  try {
    names = await ops.readdir(path);
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return;
    // The listing is the fast path: the general delete decides.
    return ops.rmAll(path);
  }
  for (let i = 0; i < names.length; i += BATCH) {
    await Promise.all(
      names.slice(i, i + BATCH).map(async (name) => {
        const child = join(path, name);
        try {
          await ops.unlink(child);
        } catch (e) {
          if (errnoOf(e) === 'ENOENT') return;
          // EISDIR (Linux) / EPERM (macOS) for a directory, or a failed unlink: the general
          // delete takes it, and its failure is the delete's.
          await ops.rmAll(child);
        }
      }),
    );
  }
  try {
    await ops.rmdir(path);
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return;
    if (errnoOf(e) === 'ENOTEMPTY' || errnoOf(e) === 'EEXIST') {
      // Something was created meanwhile: the general delete takes it all.
      return ops.rmAll(path);
    }
    throw e;
  }
}
