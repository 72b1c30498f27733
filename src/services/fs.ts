/**
 * The one file-system seam. Every file operation Spillway performs goes through `fsSeam`, and
 * nothing else under `src/` imports node:fs (the CLI and the bench aside). A fault seam handed
 * in with {@link interceptFs} can make the N-th call of any operation fail with a real errno,
 * count what a recovery does, or pause an operation to force an interleaving, all without
 * mocking the unit under test; the fault registry itself is not here (src/pool/fault-seam.ts).
 */
import * as fsp from 'node:fs/promises';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { removeSmallTreeSync, removeTree, type TreeOps, type TreeOpsSync } from './remove-tree.ts';
import { errnoOf } from './errors.ts';

// What the rest of Spillway needs of node:fs besides operations: nothing else imports it.
export { constants as fsConstants } from 'node:fs';
export type { Stats } from 'node:fs';

/** Every operation the seam performs; an interceptor sees these names. */
export const FS_OPS = [
  'mkdir',
  'open',
  'read',
  'write',
  'sync',
  'close',
  'unlink',
  'rm',
  'rename',
  'link',
  'copyFile',
  'stat',
  'lstat',
  'readdir',
  'readFile',
  'writeFile',
] as const;
export type FsOp = (typeof FS_OPS)[number];

/**
 * What a fault seam (the demo's `src/pool/fault-seam.ts`, the tests' `test/helpers/fault-seam.ts`)
 * hands the file seam: it runs before each operation and may fail it with a real errno, delay it,
 * or count it. The product installs none, so its file operations pay one `undefined` check.
 */
export interface FsInterceptor {
  /** Before an asynchronous operation; a returned promise delays it, a throw fails it. */
  before(op: FsOp, path: string): void | Promise<void>;
  /** Before a synchronous one (exit cleanup, where nothing async may run); a throw fails it. */
  beforeSync(op: FsOp, path: string): void;
}

let interceptor: FsInterceptor | undefined;

/**
 * Hands the seam an interceptor (or, with `undefined`, takes it away); returns the one it
 * replaces.
 *
 * @example
 * ```ts
 * const previous = interceptFs(faultSeam);
 * try { await run(); } finally { interceptFs(previous); }
 * ```
 */
export function interceptFs(next: FsInterceptor | undefined): FsInterceptor | undefined {
  const previous = interceptor;
  interceptor = next;
  return previous;
}

/**
 * Runs the interceptor, if one was handed in, before an operation. Synchronous (no promise)
 * without one, which is always outside tests and the demo's fault injection: a file operation
 * then costs the product no extra promise, and at hundreds of thousands of small files those
 * are what fill the heap.
 */
function gate(op: FsOp, path: string): void | Promise<void> {
  return interceptor?.before(op, path);
}

function gateSync(op: FsOp, path: string): void {
  interceptor?.beforeSync(op, path);
}

/** An open file whose reads, writes, syncs and close all pass through the seam. */
export class SeamFile {
  private closed = false;

  constructor(
    readonly path: string,
    private readonly handle: fsp.FileHandle,
  ) {}

  /** Reads up to `length` bytes at `position` into `buffer[offset…]`; returns bytes read. */
  async read(buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
    await gate('read', this.path);
    const { bytesRead } = await this.handle.read(buffer, offset, length, position);
    return bytesRead;
  }

  /** Writes every byte of `buffers` at the current end, in order, as one call where possible. */
  async write(...buffers: Buffer[]): Promise<number> {
    await gate('write', this.path);
    return writeAll(buffers, async (rest) => (await this.handle.writev(rest)).bytesWritten);
  }

  async sync(): Promise<void> {
    await gate('sync', this.path);
    await this.handle.sync();
  }

  async size(): Promise<number> {
    return (await this.stat()).size;
  }

  /** `fstat` of the open descriptor: what was opened, whatever the path names now. */
  async stat(): Promise<fs.Stats> {
    await gate('stat', this.path);
    return this.handle.stat();
  }

  /**
   * Closes the descriptor. Idempotent. An injected close fault still releases the descriptor,
   * as a real failed close(2) does: no fd may leak through a test.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await closeEvenIfFaulted(this.path, () => this.handle.close());
  }
}

/**
 * Writes every byte of `buffers` with `writev`, which may write fewer than asked: short writes
 * are legal, so the rest is written again, without re-entering the seam. Returns the total.
 */
async function writeAll(
  buffers: readonly Buffer[],
  writev: (buffers: Buffer[]) => Promise<number>,
): Promise<number> {
  let total = 0;
  for (const b of buffers) total += b.length;
  let rest = buffers as Buffer[];
  let left = total;
  for (;;) {
    const written = await writev(rest);
    if (written >= left) return total;
    left -= written;
    rest = [Buffer.concat(rest).subarray(written)];
  }
}

/**
 * The `close` operation: an injected fault still closes the descriptor, as a real failed
 * close(2) does (no descriptor may leak through a test), and is thrown after it.
 */
async function closeEvenIfFaulted(path: string, close: () => Promise<void>): Promise<void> {
  let fault: unknown;
  try {
    await gate('close', path);
  } catch (e) {
    fault = e;
  }
  await close();
  if (fault !== undefined) throw fault;
}

/** The tree delete's operations: the listing and the unlinks are the seam's own (faults reach them). */
const treeOps: TreeOps = {
  lstat: (path) => fsp.lstat(path),
  async readdir(path) {
    await gate('readdir', path);
    return fsp.readdir(path);
  },
  async unlink(path) {
    await gate('unlink', path);
    await fsp.unlink(path);
  },
  rmdir: (path) => fsp.rmdir(path),
  rmAll: (path) => fsp.rm(path, { recursive: true, force: true }),
};

/** The same, synchronously: only with no interceptor installed (nothing to gate). */
const treeOpsSync: TreeOpsSync = {
  lstatSync: (path) => fs.lstatSync(path, { throwIfNoEntry: false }),
  readdirSync: (path) => fs.readdirSync(path),
  unlinkSync: (path) => fs.unlinkSync(path),
  rmdirSync: (path) => fs.rmdirSync(path),
};

/** The seam itself: the only way Spillway touches the file system. */
export const fsSeam = {
  async mkdir(path: string, options: { mode?: number; recursive?: boolean } = {}): Promise<void> {
    await gate('mkdir', path);
    await fsp.mkdir(path, { mode: options.mode ?? 0o700, recursive: options.recursive ?? false });
  },

  /**
   * Opens a file. `flags` as in fs.open: a string ('wx' = create exclusively, 'r' = read) or
   * the `fs.constants` bits (`O_NOFOLLOW`, `O_NONBLOCK`, …) where a string cannot say it.
   */
  async open(path: string, flags: string | number, mode = 0o600): Promise<SeamFile> {
    await gate('open', path);
    return new SeamFile(path, await fsp.open(path, flags, mode));
  },

  async unlink(path: string): Promise<void> {
    await gate('unlink', path);
    await fsp.unlink(path);
  },

  /** Removes a file or a whole tree; missing paths are fine. Never follows symlinks. */
  async rm(path: string): Promise<void> {
    await gate('rm', path);
    // A task dir of a few dozen spill files goes in one synchronous step (no thread-pool waits
    // on a cancel); a big tree, or a seam with faults to inject, takes the async path.
    if (interceptor === undefined && removeSmallTreeSync(path, treeOpsSync)) return;
    await removeTree(path, treeOps);
  },

  async rename(from: string, to: string): Promise<void> {
    await gate('rename', from);
    await fsp.rename(from, to);
  },

  /** A new hard link: fails with EEXIST instead of replacing `to` (a safe publish). */
  async link(from: string, to: string): Promise<void> {
    await gate('link', to);
    await fsp.link(from, to);
  },

  /** Copies a file, never replacing an existing `to`. */
  async copyFile(from: string, to: string): Promise<void> {
    await gate('copyFile', to);
    await fsp.copyFile(from, to, fs.constants.COPYFILE_EXCL);
  },

  async stat(path: string): Promise<fs.Stats> {
    await gate('stat', path);
    return fsp.stat(path);
  },

  async lstat(path: string): Promise<fs.Stats> {
    await gate('lstat', path);
    return fsp.lstat(path);
  },

  /** `stat` without a thread-pool round trip, for a check that must not let time pass. */
  statSync(path: string): fs.Stats {
    gateSync('stat', path);
    return fs.statSync(path);
  },

  /** Where `path` really leads (every symlink resolved); gated as an `lstat`, what it does. */
  async realpath(path: string): Promise<string> {
    await gate('lstat', path);
    return fsp.realpath(path);
  },

  async readdir(path: string): Promise<string[]> {
    await gate('readdir', path);
    return fsp.readdir(path);
  },

  async readFile(path: string): Promise<Buffer> {
    await gate('readFile', path);
    return fsp.readFile(path);
  },

  async writeFile(path: string, data: string | Buffer, mode = 0o600): Promise<void> {
    await gate('writeFile', path);
    await fsp.writeFile(path, data, { mode });
  },

  /** Synchronous removal for `process.on('exit')`, where nothing async may run. */
  rmSync(path: string): void {
    gateSync('rm', path);
    fs.rmSync(path, { recursive: true, force: true });
  },

  /** Synchronous removal of an empty dir, for `process.on('exit')` (the `rm` operation). */
  rmdirSync(path: string): void {
    gateSync('rm', path);
    fs.rmdirSync(path);
  },

  readFileSync(path: string): Buffer {
    gateSync('readFile', path);
    return fs.readFileSync(path);
  },

  /**
   * Reads a small file of /proc, the process's own identity (not counted, never faulted): a
   * fault a test arms on the seam must not poison who this process is and name its owner dir
   * wrongly.
   */
  readProcText(path: string): string {
    return fs.readFileSync(path, 'utf8');
  },

  /** The inode of a /proc entry (a pid namespace); not counted, never faulted, as above. */
  procInode(path: string): number {
    return fs.statSync(path).ino;
  },

  /**
   * Opens a file as a bare descriptor (the `open` operation). For writers of very many small
   * files: a descriptor is a number, where a {@link SeamFile} is an event emitter per file.
   */
  async openFd(path: string, flags: number, mode = 0o600): Promise<number> {
    await gate('open', path);
    return new Promise((resolve, reject) =>
      fs.open(path, flags, mode, (error, fd) => (error ? reject(error) : resolve(fd))),
    );
  },

  /** Writes every byte of `buffers` at the descriptor's position (the `write` operation). */
  async writeFd(fd: number, path: string, buffers: readonly Buffer[]): Promise<void> {
    await gate('write', path);
    await writeAll(
      buffers,
      (rest) =>
        new Promise<number>((resolve, reject) =>
          fs.writev(fd, rest, (error, n) => (error ? reject(error) : resolve(n))),
        ),
    );
  },

  /**
   * Creates a small file, writes all of `buffers` and closes it, synchronously: the `open`,
   * `write` and `close` operations without three thread-pool round trips (at hundreds of
   * thousands of one-byte files those round trips, not the kernel, were the cost). Returns
   * false and does nothing when an interceptor is installed (tests, the demo's faults): it may
   * pause an operation, which only the async operations can wait for, so the caller takes them. As with {@link closeFd}, the descriptor is closed whatever fails.
   */
  writeNewFileSync(path: string, flags: number, mode: number, buffers: readonly Buffer[]): boolean {
    if (interceptor !== undefined) return false;
    gateSync('open', path);
    const fd = fs.openSync(path, flags, mode);
    try {
      gateSync('write', path);
      let rest = buffers;
      let total = rest.reduce((n, b) => n + b.length, 0);
      while (total > 0) {
        const written = fs.writevSync(fd, rest as Buffer[]);
        if (written >= total) break;
        rest = [Buffer.concat(rest).subarray(written)];
        total -= written;
      }
    } catch (error) {
      fs.closeSync(fd);
      throw error;
    }
    let fault: unknown;
    try {
      gateSync('close', path);
    } catch (e) {
      fault = e;
    }
    fs.closeSync(fd);
    if (fault !== undefined) throw fault;
    return true;
  },

  /**
   * Whether the synchronous operations below may be used: only when no interceptor is installed
   * (tests, the demo's faults), since an interceptor may pause an operation, which only the async
   * operations can wait for. Callers take the async path otherwise, as
   * {@link fsSeam.writeNewFileSync} does.
   *
   * @example
   * ```ts
   * if (fsSeam.syncAllowed()) fsSeam.linkSync(staged, target);
   * else await fsSeam.link(staged, target);
   * ```
   */
  syncAllowed(): boolean {
    return interceptor === undefined;
  },

  /**
   * {@link fsSeam.link} without a thread-pool round trip (publishing hundreds of thousands of
   * small files: the round trips, not the kernel, were the cost). Only where
   * {@link fsSeam.syncAllowed}.
   */
  linkSync(from: string, to: string): void {
    gateSync('link', to);
    fs.linkSync(from, to);
  },

  /** {@link fsSeam.rename}, synchronously; only where {@link fsSeam.syncAllowed}. */
  renameSync(from: string, to: string): void {
    gateSync('rename', from);
    fs.renameSync(from, to);
  },

  /**
   * {@link fsSeam.lstat}, synchronously; undefined for a missing path. Only where
   * {@link fsSeam.syncAllowed}, or where no time may pass (the checkpoint out check).
   */
  lstatSync(path: string): fs.Stats | undefined {
    gateSync('lstat', path);
    return fs.lstatSync(path, { throwIfNoEntry: false });
  },

  /** {@link fsSeam.unlink}, synchronously; only where {@link fsSeam.syncAllowed}. */
  unlinkSync(path: string): void {
    gateSync('unlink', path);
    fs.unlinkSync(path);
  },

  /**
   * Closes a descriptor (the `close` operation). An injected fault still closes it, as a real
   * failed close(2) does: no descriptor may leak through a test.
   */
  async closeFd(fd: number, path: string): Promise<void> {
    await closeEvenIfFaulted(
      path,
      () =>
        new Promise<void>((resolve, reject) =>
          fs.close(fd, (error) => (error ? reject(error) : resolve())),
        ),
    );
  },
};

/**
 * Every non-directory entry under `path` (itself included if it is a file), with its size.
 * Entries that vanish while it looks are skipped: it is used to watch dirs that tasks are
 * deleting. Never follows symlinks.
 *
 * @example
 * ```ts
 * const files = await listFiles(spillRoot.ownerDir);
 * const bytes = files.reduce((n, f) => n + f.size, 0);
 * ```
 */
export async function listFiles(path: string): Promise<{ path: string; size: number }[]> {
  const out: { path: string; size: number }[] = [];
  const visit = async (p: string): Promise<void> => {
    let st: fs.Stats;
    try {
      st = await fsSeam.lstat(p);
    } catch (e) {
      if (errnoOf(e) === 'ENOENT') return;
      throw e;
    }
    if (!st.isDirectory()) {
      out.push({ path: p, size: st.size });
      return;
    }
    let names: string[];
    try {
      names = await fsSeam.readdir(p);
    } catch (e) {
      if (errnoOf(e) === 'ENOENT') return;
      throw e;
    }
    for (const name of names) await visit(join(p, name));
  };
  await visit(path);
  return out;
}
