/**
 * The baselines the product is measured against: what Node itself does with the same bytes in
 * 1 MiB chunks, with no parsing, no checksums and no framing. They use `node:fs/promises`
 * directly, not Spillway's fs seam, on purpose: they stand for "the hardware plus Node", and
 * the product's own seam overhead belongs to the product's side of each ratio.
 */
import { open } from 'node:fs/promises';

export const CHUNK_BYTES = 1024 * 1024;

/**
 * Copies `from` into a new file `to` with sequential 1 MiB reads and writes, as `cp` would.
 * Returns the bytes copied.
 *
 * @example
 * ```ts
 * const bytes = await rawCopy('in.spwc', 'copy.bin');
 * ```
 */
export async function rawCopy(from: string, to: string): Promise<number> {
  const src = await open(from, 'r');
  try {
    const dst = await open(to, 'wx', 0o600);
    try {
      const buf = Buffer.allocUnsafe(CHUNK_BYTES);
      let pos = 0;
      for (;;) {
        const { bytesRead } = await src.read(buf, 0, CHUNK_BYTES, pos);
        if (bytesRead === 0) break;
        let off = 0;
        while (off < bytesRead) off += (await dst.write(buf, off, bytesRead - off)).bytesWritten;
        pos += bytesRead;
      }
      return pos;
    } finally {
      await dst.close();
    }
  } finally {
    await src.close();
  }
}

/**
 * Reads every file of `files` start to end in 1 MiB reads into one reused buffer and discards
 * the bytes. Returns the bytes read.
 *
 * @example
 * ```ts
 * const bytes = await rawRead(state.files);
 * ```
 */
export async function rawRead(files: readonly string[]): Promise<number> {
  const buf = Buffer.allocUnsafe(CHUNK_BYTES);
  let total = 0;
  for (const path of files) {
    const file = await open(path, 'r');
    try {
      let pos = 0;
      for (;;) {
        const { bytesRead } = await file.read(buf, 0, CHUNK_BYTES, pos);
        if (bytesRead === 0) break;
        pos += bytesRead;
      }
      total += pos;
    } finally {
      await file.close();
    }
  }
  return total;
}
