/**
 * Paths of the many files in one dir, by concatenation: with hundreds of thousands of channel
 * files, a `path.join` per file (which normalizes the whole path every time) was the largest
 * user-time cost of writing them.
 */
import { join, sep } from 'node:path';

/**
 * `dir` normalized once, with a trailing separator, so that `dirPrefix(dir) + name` is
 * `join(dir, name)` for a plain file name (no separator, not `.` or `..`).
 *
 * @example
 * ```ts
 * const inOut = dirPrefix('out/./x'); // 'out/x/'
 * const path = inOut + 'gate-0-channel-1.bin';
 * ```
 */
export function dirPrefix(dir: string): string {
  const normalized = join(dir, '.');
  return normalized.endsWith(sep) ? normalized : normalized + sep;
}
