/**
 * The floors the product is measured against: the fastest known way to move the same bytes
 * from Node on this machine — what `dd` does, in-process. A synchronous loop of 512 KiB
 * `pread`s (and `write`s) into one reused buffer: no thread-pool round trip per chunk, no
 * parsing, no checksums, no framing. They use `node:fs` directly, not Spillway's fs seam, on
 * purpose: they stand for "the hardware plus Node", and everything else is the product's cost.
 * (An async loop over `fs/promises` costs a round trip through libuv's thread pool per chunk:
 * reading 1 GiB from a tmpfs it took ~15–25% more CPU time than this loop, so it is no floor.)
 *
 * With `checksum`, each loop also runs the product's CRC-32 (src/services/crc32.ts, the same
 * native implementation fetch and drain call) over every byte it moves, once: the floor of a
 * spill or a drain, which must checksum every byte (G9), is I/O plus that one pass, not I/O
 * alone. The CRC is returned so the pass cannot be optimised away.
 */
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { crc32 } from '../src/services/crc32.ts';

/**
 * The loops' chunk: the fastest of 128 KiB–2 MiB for each of the four (copy and read, with and
 * without the CRC; 256 MiB, tmpfs and disk, 7 alternating runs each): 512 KiB was the fastest
 * or within 1 % of it in all eight, 1–5 % faster than 1 MiB (the CRC pass runs over bytes still
 * in the core's cache).
 */
export const CHUNK_BYTES = 512 * 1024;

/**
 * Copies `from` into a new file `to` (exclusive) with sequential {@link CHUNK_BYTES} `pread`s
 * and `write`s, as `dd` does. Returns the bytes copied.
 *
 * @example
 * ```ts
 * const bytes = await rawCopy('in.spwc', 'copy.bin');
 * await rawCopy('in.spwc', 'crc-copy.bin', true); // the spill floor: copy + CRC-32
 * ```
 */
export async function rawCopy(from: string, to: string, checksum = false): Promise<number> {
  const src = openSync(from, 'r');
  try {
    const dst = openSync(to, 'wx', 0o600);
    try {
      const buf = Buffer.allocUnsafe(CHUNK_BYTES);
      let pos = 0;
      let crc = 0;
      for (;;) {
        const n = readSync(src, buf, 0, CHUNK_BYTES, pos);
        if (n === 0) break;
        if (checksum) crc = crc32(n === CHUNK_BYTES ? buf : buf.subarray(0, n), crc);
        let off = 0;
        while (off < n) off += writeSync(dst, buf, off, n - off);
        pos += n;
      }
      return checksum && crc === 0.5 ? -1 : pos; // reads `crc`: the pass must stay
    } finally {
      closeSync(dst);
    }
  } finally {
    closeSync(src);
  }
}

/**
 * Reads every file of `files` start to end in {@link CHUNK_BYTES} `pread`s into one reused
 * buffer and discards the bytes. Returns the bytes read.
 *
 * @example
 * ```ts
 * const bytes = await rawRead(state.files);
 * ```
 */
export async function rawRead(files: readonly string[], checksum = false): Promise<number> {
  const buf = Buffer.allocUnsafe(CHUNK_BYTES);
  let total = 0;
  let crc = 0;
  for (const path of files) {
    const fd = openSync(path, 'r');
    try {
      let pos = 0;
      for (;;) {
        const n = readSync(fd, buf, 0, CHUNK_BYTES, pos);
        if (n === 0) break;
        if (checksum) crc = crc32(n === CHUNK_BYTES ? buf : buf.subarray(0, n), crc);
        pos += n;
      }
      total += pos;
    } finally {
      closeSync(fd);
    }
  }
  return checksum && crc === 0.5 ? -1 : total; // reads `crc`: the pass must stay
}
