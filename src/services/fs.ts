/**
 * The one file-system seam. Every file operation Spillway performs goes through a
 * {@link FileSystem}, and nothing else under `src/` imports node:fs (the CLI and the bench
 * aside). A fault seam given to one (an {@link FsInterceptor}) can make the N-th call of any
 * operation fail with a real errno, count what a recovery does, or pause an asynchronous
 * operation to force an interleaving, all without mocking the unit under test; the fault
 * registry itself is not here (src/pool/fault-seam.ts).
 *
 * There is one algorithm: the product's seam and a faulty one run the same operations, the
 * synchronous ones (the publish, small files, small deletes) included, so the path users run is
 * the path the fault tests break.
 */
import * as fsp from 'node:fs/promises';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { removeSmallTreeSync, removeTree, type TreeOps, type TreeOpsSync } from './remove-tree.ts';
import { errnoOf } from './errors.ts';
import { closeEvenIfFaulted, SeamFile, writeAll } from './fs-file.ts';
import { NO_INTERCEPTOR, type FsInterceptor, type FsOp } from './fs-ops.ts';

// What the rest of Spillway needs of node:fs besides operations: nothing else imports it.
export { constants as fsConstants } from 'node:fs';
export type { Stats } from 'node:fs';
export { FS_OPS, NO_INTERCEPTOR, type FsInterceptor, type FsOp } from './fs-ops.ts';
export { SeamFile } from './fs-file.ts';

/**
 * The file system as Spillway uses it: each operation runs its interceptor first (the
 * product's does nothing), then Node's call.
 *
 * @example
 * ```ts
 * const fs = new FileSystem(faultSeam); // a test's: faults, counts, pauses
 * await fs.mkdir(dir, { mode: 0o700 });
 * fs.linkSync(staged, target);
 * ```
 */
export class FileSystem {
  /** The tree delete's operations: the listing and the unlinks are the seam's own. */
  private readonly treeOps: TreeOps;
  /** The same, synchronously (a small tree goes in one step): gated as well. */
  private readonly treeOpsSync: TreeOpsSync;

  constructor(private interceptor: FsInterceptor = NO_INTERCEPTOR) {
    this.treeOps = {
      lstat: (path) => fsp.lstat(path),
      readdir: async (path) => {
        await this.gate('readdir', path);
        return fsp.readdir(path);
      },
      unlink: async (path) => {
        await this.gate('unlink', path);
        await fsp.unlink(path);
      },
      rmdir: (path) => fsp.rmdir(path),
      rmAll: (path) => fsp.rm(path, { recursive: true, force: true }),
    };
    this.treeOpsSync = {
      lstatSync: (path) => fs.lstatSync(path, { throwIfNoEntry: false }),
      readdirSync: (path) => {
        this.gateSync('readdir', path);
        return fs.readdirSync(path);
      },
      unlinkSync: (path) => {
        this.gateSync('unlink', path);
        fs.unlinkSync(path);
      },
      rmdirSync: (path) => fs.rmdirSync(path),
    };
  }

  /**
   * Hands this seam another interceptor; returns the one it replaces. Only the process's
   * {@link fsSeam} is re-pointed this way (the demo's fault injection, the tests).
   */
  intercept(next: FsInterceptor): FsInterceptor {
    const previous = this.interceptor;
    this.interceptor = next;
    return previous;
  }

  /** Runs the interceptor before an asynchronous operation (it may pause it). */
  private readonly gate = (op: FsOp, path: string): void | Promise<void> =>
    this.interceptor.before(op, path);

  /** Runs the interceptor before a synchronous operation (it may fail it, never pause it). */
  private gateSync(op: FsOp, path: string): void {
    this.interceptor.beforeSync(op, path);
  }

  async mkdir(path: string, options: { mode?: number; recursive?: boolean } = {}): Promise<void> {
    await this.gate('mkdir', path);
    await fsp.mkdir(path, { mode: options.mode ?? 0o700, recursive: options.recursive ?? false });
  }

  /**
   * Opens a file. `flags` as in fs.open: a string ('wx' = create exclusively, 'r' = read) or
   * the `fs.constants` bits (`O_NOFOLLOW`, `O_NONBLOCK`, …) where a string cannot say it.
   */
  async open(path: string, flags: string | number, mode = 0o600): Promise<SeamFile> {
    await this.gate('open', path);
    return new SeamFile(path, await fsp.open(path, flags, mode), this.gate);
  }

  async unlink(path: string): Promise<void> {
    await this.gate('unlink', path);
    await fsp.unlink(path);
  }

  /**
   * Removes a file or a whole tree; missing paths are fine. Never follows symlinks. A task dir
   * of a few dozen spill files goes in one synchronous step (no thread-pool waits on a cancel);
   * a big tree, or one whose synchronous step failed, takes the batched async delete.
   */
  async rm(path: string): Promise<void> {
    await this.gate('rm', path);
    if (removeSmallTreeSync(path, this.treeOpsSync)) return;
    await removeTree(path, this.treeOps);
  }

  async rename(from: string, to: string): Promise<void> {
    await this.gate('rename', from);
    await fsp.rename(from, to);
  }

  /** A new hard link: fails with EEXIST instead of replacing `to` (a safe publish). */
  async link(from: string, to: string): Promise<void> {
    await this.gate('link', to);
    await fsp.link(from, to);
  }

  /** Copies a file, never replacing an existing `to`. */
  async copyFile(from: string, to: string): Promise<void> {
    await this.gate('copyFile', to);
    await fsp.copyFile(from, to, fs.constants.COPYFILE_EXCL);
  }

  async stat(path: string): Promise<fs.Stats> {
    await this.gate('stat', path);
    return fsp.stat(path);
  }

  async lstat(path: string): Promise<fs.Stats> {
    await this.gate('lstat', path);
    return fsp.lstat(path);
  }

  /** `stat` without a thread-pool round trip, for a check that must not let time pass. */
  statSync(path: string): fs.Stats {
    this.gateSync('stat', path);
    return fs.statSync(path);
  }

  /** Where `path` really leads (every symlink resolved); gated as an `lstat`, what it does. */
  async realpath(path: string): Promise<string> {
    await this.gate('lstat', path);
    return fsp.realpath(path);
  }

  async readdir(path: string): Promise<string[]> {
    await this.gate('readdir', path);
    return fsp.readdir(path);
  }

  async readFile(path: string): Promise<Buffer> {
    await this.gate('readFile', path);
    return fsp.readFile(path);
  }

  async writeFile(path: string, data: string | Buffer, mode = 0o600): Promise<void> {
    await this.gate('writeFile', path);
    await fsp.writeFile(path, data, { mode });
  }

  /** Synchronous removal for `process.on('exit')`, where nothing async may run. */
  rmSync(path: string): void {
    this.gateSync('rm', path);
    fs.rmSync(path, { recursive: true, force: true });
  }

  /** Synchronous removal of an empty dir, for `process.on('exit')` (the `rm` operation). */
  rmdirSync(path: string): void {
    this.gateSync('rm', path);
    fs.rmdirSync(path);
  }

  readFileSync(path: string): Buffer {
    this.gateSync('readFile', path);
    return fs.readFileSync(path);
  }

  /**
   * Reads a small file of /proc, the process's own identity (not counted, never faulted): a
   * fault a test arms on the seam must not poison who this process is and name its owner dir
   * wrongly.
   */
  readProcText(path: string): string {
    return fs.readFileSync(path, 'utf8');
  }

  /** The inode of a /proc entry (a pid namespace); not counted, never faulted, as above. */
  procInode(path: string): number {
    return fs.statSync(path).ino;
  }

  /**
   * Opens a file as a bare descriptor (the `open` operation). For writers of very many small
   * files: a descriptor is a number, where a {@link SeamFile} is an event emitter per file.
   */
  async openFd(path: string, flags: number, mode = 0o600): Promise<number> {
    await this.gate('open', path);
    return new Promise((resolve, reject) =>
      fs.open(path, flags, mode, (error, fd) => (error ? reject(error) : resolve(fd))),
    );
  }

  /** Writes every byte of `buffers` at the descriptor's position (the `write` operation). */
  async writeFd(fd: number, path: string, buffers: readonly Buffer[]): Promise<void> {
    await this.gate('write', path);
    await writeAll(
      buffers,
      (rest) =>
        new Promise<number>((resolve, reject) =>
          fs.writev(fd, rest, (error, n) => (error ? reject(error) : resolve(n))),
        ),
    );
  }

  /**
   * Creates a small file, writes all of `buffers` and closes it, synchronously: the `open`,
   * `write` and `close` operations without three thread-pool round trips (at hundreds of
   * thousands of one-byte files those round trips, not the kernel, were the cost). As with
   * {@link FileSystem.closeFd}, the descriptor is closed whatever fails.
   */
  writeNewFileSync(path: string, flags: number, mode: number, buffers: readonly Buffer[]): void {
    this.gateSync('open', path);
    const fd = fs.openSync(path, flags, mode);
    try {
      this.gateSync('write', path);
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
      this.gateSync('close', path);
    } catch (e) {
      fault = e;
    }
    fs.closeSync(fd);
    if (fault !== undefined) throw fault;
  }

  /**
   * {@link FileSystem.link} without a thread-pool round trip (publishing hundreds of thousands
   * of small files: the round trips, not the kernel, were the cost).
   */
  linkSync(from: string, to: string): void {
    this.gateSync('link', to);
    fs.linkSync(from, to);
  }

  /** {@link FileSystem.rename}, synchronously. */
  renameSync(from: string, to: string): void {
    this.gateSync('rename', from);
    fs.renameSync(from, to);
  }

  /** {@link FileSystem.lstat}, synchronously; undefined for a missing path. */
  lstatSync(path: string): fs.Stats | undefined {
    this.gateSync('lstat', path);
    return fs.lstatSync(path, { throwIfNoEntry: false });
  }

  /** {@link FileSystem.unlink}, synchronously. */
  unlinkSync(path: string): void {
    this.gateSync('unlink', path);
    fs.unlinkSync(path);
  }

  /**
   * Closes a descriptor (the `close` operation). An injected fault still closes it, as a real
   * failed close(2) does: no descriptor may leak through a test.
   */
  async closeFd(fd: number, path: string): Promise<void> {
    await closeEvenIfFaulted(
      this.gate,
      path,
      () =>
        new Promise<void>((resolve, reject) =>
          fs.close(fd, (error) => (error ? reject(error) : resolve())),
        ),
    );
  }

  /**
   * Every non-directory entry under `path` (itself included if it is a file), with its size.
   * Entries that vanish while it looks are skipped: it is used to watch dirs that tasks are
   * deleting. Never follows symlinks.
   *
   * @example
   * ```ts
   * const files = await fs.listFiles(spillRoot.ownerDir);
   * const bytes = files.reduce((n, f) => n + f.size, 0);
   * ```
   */
  async listFiles(path: string): Promise<{ path: string; size: number }[]> {
    const out: { path: string; size: number }[] = [];
    const visit = async (p: string): Promise<void> => {
      let st: fs.Stats;
      try {
        st = await this.lstat(p);
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
        names = await this.readdir(p);
      } catch (e) {
        if (errnoOf(e) === 'ENOENT') return;
        throw e;
      }
      for (const name of names) await visit(join(p, name));
    };
    await visit(path);
    return out;
  }
}

/** The process's seam: what every recovery uses unless it is handed another. */
export const fsSeam = new FileSystem();

/**
 * Hands the process's seam an interceptor (or, with `undefined`, the product's again); returns
 * the one it replaces.
 *
 * @example
 * ```ts
 * const previous = interceptFs(faultSeam);
 * try { await run(); } finally { interceptFs(previous); }
 * ```
 */
export function interceptFs(next: FsInterceptor | undefined): FsInterceptor {
  return fsSeam.intercept(next ?? NO_INTERCEPTOR);
}

/** {@link FileSystem.listFiles} on the process's seam. */
export function listFiles(path: string): Promise<{ path: string; size: number }[]> {
  return fsSeam.listFiles(path);
}
