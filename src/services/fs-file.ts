/**
 * An open file of the file seam (services/fs.ts): its reads, writes, syncs and close pass
 * through the same gate as every other operation of the seam it was opened on.
 */
import type * as fsp from 'node:fs/promises';
import type { Stats } from 'node:fs';
import type { FsOp } from './fs-ops.ts';

/** What a {@link SeamFile} runs before each of its operations: its seam's gate. */
export type FsGate = (op: FsOp, path: string) => void | Promise<void>;

/**
 * An open file whose reads, writes, syncs and close all pass through the seam.
 *
 * @example
 * ```ts
 * const file = await fs.open(path, 'r');
 * try { await file.read(buffer, 0, 4096, 0); } finally { await file.close(); }
 * ```
 */
export class SeamFile {
  private closed = false;

  constructor(
    readonly path: string,
    private readonly handle: fsp.FileHandle,
    private readonly gate: FsGate,
  ) {}

  /** Reads up to `length` bytes at `position` into `buffer[offset…]`; returns bytes read. */
  async read(buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
    await this.gate('read', this.path);
    const { bytesRead } = await this.handle.read(buffer, offset, length, position);
    return bytesRead;
  }

  /** Writes every byte of `buffers` at the current end, in order, as one call where possible. */
  async write(...buffers: Buffer[]): Promise<number> {
    await this.gate('write', this.path);
    return writeAll(buffers, async (rest) => (await this.handle.writev(rest)).bytesWritten);
  }

  async sync(): Promise<void> {
    await this.gate('sync', this.path);
    await this.handle.sync();
  }

  async size(): Promise<number> {
    return (await this.stat()).size;
  }

  /** `fstat` of the open descriptor: what was opened, whatever the path names now. */
  async stat(): Promise<Stats> {
    await this.gate('stat', this.path);
    return this.handle.stat();
  }

  /**
   * Closes the descriptor. Idempotent. An injected close fault still releases the descriptor,
   * as a real failed close(2) does: no fd may leak through a test.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await closeEvenIfFaulted(this.gate, this.path, () => this.handle.close());
  }
}

/**
 * Writes every byte of `buffers` with `writev`, which may write fewer than asked: short writes
 * are legal, so the rest is written again, without re-entering the seam. Returns the total.
 */
export async function writeAll(
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
export async function closeEvenIfFaulted(
  gate: FsGate,
  path: string,
  close: () => Promise<void>,
): Promise<void> {
  let fault: unknown;
  try {
    await gate('close', path);
  } catch (e) {
    fault = e;
  }
  await close();
  if (fault !== undefined) throw fault;
}
