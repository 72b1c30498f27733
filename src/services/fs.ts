/**
 * The one file-system seam. Every file operation Spillway performs goes through `fsSeam`, so
 * tests can make the N-th call of any operation fail with a real errno (ENOSPC, EIO, EACCES,
 * ENOENT), count what a recovery does, or pause an operation to force an interleaving, all
 * without mocking the unit under test.
 */
import * as fsp from 'node:fs/promises';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { removeTree } from './remove-tree.ts';

/** Every operation the seam performs; faults and counts are keyed by these names. */
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

/** The errno codes tests may inject. */
export type FaultCode = 'ENOSPC' | 'EIO' | 'EACCES' | 'ENOENT';

const FAULT_MESSAGES: Record<FaultCode, string> = {
  ENOSPC: 'no space left on device',
  EIO: 'i/o error',
  EACCES: 'permission denied',
  ENOENT: 'no such file or directory',
};

/** A fault armed on the seam: `op` fails at its `nth` call from now (1-based). */
export interface FaultSpec {
  op: FsOp;
  code: FaultCode;
  /** Which call (counted from when the fault is armed) fails; default 1. */
  nth?: number;
  /** Only calls whose path contains this string count. */
  pathIncludes?: string;
  /** How many consecutive calls fail once triggered; default 1. */
  times?: number;
}

interface ArmedFault extends Required<Omit<FaultSpec, 'pathIncludes'>> {
  pathIncludes: string | undefined;
  seen: number;
  fired: number;
}

/** Called before each operation; may return a promise to delay it (race tests). */
export type FsHook = (op: FsOp, path: string) => void | Promise<void>;

const faults: ArmedFault[] = [];
const counts = new Map<FsOp, number>();
let hook: FsHook | undefined;

/** Makes a real-looking errno error, as Node itself would raise it. */
export function makeFsError(code: FaultCode, op: FsOp, path: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(
    `${code}: ${FAULT_MESSAGES[code]}, ${op} '${path}' (injected)`,
  );
  error.code = code;
  error.syscall = op;
  error.path = path;
  return error;
}

/** Arms a fault; returns a function that disarms it. */
export function injectFault(spec: FaultSpec): () => void {
  const armed: ArmedFault = {
    op: spec.op,
    code: spec.code,
    nth: spec.nth ?? 1,
    times: spec.times ?? 1,
    pathIncludes: spec.pathIncludes,
    seen: 0,
    fired: 0,
  };
  faults.push(armed);
  return () => {
    const i = faults.indexOf(armed);
    if (i >= 0) faults.splice(i, 1);
  };
}

/** Disarms every fault, removes the hook and resets the counters. */
export function resetFsSeam(): void {
  faults.length = 0;
  counts.clear();
  hook = undefined;
}

/** Installs (or with `undefined` removes) the hook run before each operation. */
export function setFsHook(next: FsHook | undefined): void {
  hook = next;
}

/** How many times each operation ran since the last reset (faulted calls included). */
export function fsOpCounts(): Record<FsOp, number> {
  const out = {} as Record<FsOp, number>;
  for (const op of FS_OPS) out[op] = counts.get(op) ?? 0;
  return out;
}

function faultFor(op: FsOp, path: string): NodeJS.ErrnoException | undefined {
  counts.set(op, (counts.get(op) ?? 0) + 1);
  for (const f of faults) {
    if (f.op !== op) continue;
    if (f.pathIncludes !== undefined && !path.includes(f.pathIncludes)) continue;
    f.seen++;
    if (f.seen >= f.nth && f.fired < f.times) {
      f.fired++;
      return makeFsError(f.code, op, path);
    }
  }
  return undefined;
}

/**
 * Runs the hook and arms the faults before an operation. Synchronous (no promise) when no hook
 * is set, which is always outside tests: a file operation then costs the product no extra
 * promise, and at hundreds of thousands of small files those are what fill the heap.
 */
function gate(op: FsOp, path: string): void | Promise<void> {
  if (hook !== undefined) {
    const current = hook;
    return (async () => {
      await current(op, path);
      gateSync(op, path);
    })();
  }
  gateSync(op, path);
}

function gateSync(op: FsOp, path: string): void {
  const fault = faultFor(op, path);
  if (fault !== undefined) throw fault;
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
    let total = 0;
    for (const b of buffers) total += b.length;
    let written = (await this.handle.writev(buffers)).bytesWritten;
    if (written < total) {
      // Short writes are legal; finish the rest without re-entering the seam.
      const rest = Buffer.concat(buffers).subarray(written);
      let off = 0;
      while (off < rest.length) {
        const r = await this.handle.write(rest, off, rest.length - off);
        off += r.bytesWritten;
      }
      written = total;
    }
    return written;
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
    let fault: unknown;
    try {
      await gate('close', this.path);
    } catch (e) {
      fault = e;
    }
    await this.handle.close();
    if (fault !== undefined) throw fault;
  }
}

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
    await removeTree(path);
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

  readFileSync(path: string): Buffer {
    gateSync('readFile', path);
    return fs.readFileSync(path);
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
    let rest = buffers;
    for (;;) {
      const total = rest.reduce((n, b) => n + b.length, 0);
      const written = await new Promise<number>((resolve, reject) =>
        fs.writev(fd, rest as Buffer[], (error, n) => (error ? reject(error) : resolve(n))),
      );
      // Short writes are legal; finish the rest without re-entering the seam.
      if (written >= total) return;
      rest = [Buffer.concat(rest).subarray(written)];
    }
  },

  /**
   * Creates a small file, writes all of `buffers` and closes it, synchronously: the `open`,
   * `write` and `close` operations without three thread-pool round trips (at hundreds of
   * thousands of one-byte files those round trips, not the kernel, were the cost). Returns
   * false and does nothing when a hook is installed: hooks may be async, so the caller then
   * takes the async operations. As with {@link closeFd}, the descriptor is closed whatever fails.
   */
  writeNewFileSync(path: string, flags: number, mode: number, buffers: readonly Buffer[]): boolean {
    if (hook !== undefined) return false;
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
   * Closes a descriptor (the `close` operation). An injected fault still closes it, as a real
   * failed close(2) does: no descriptor may leak through a test.
   */
  async closeFd(fd: number, path: string): Promise<void> {
    let fault: unknown;
    try {
      await gate('close', path);
    } catch (e) {
      fault = e;
    }
    await new Promise<void>((resolve, reject) =>
      fs.close(fd, (error) => (error ? reject(error) : resolve())),
    );
    if (fault !== undefined) throw fault;
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
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
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
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw e;
    }
    for (const name of names) await visit(join(p, name));
  };
  await visit(path);
  return out;
}
