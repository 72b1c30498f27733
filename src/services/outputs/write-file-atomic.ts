/**
 * A file that appears whole or not at all: written to a temp file beside it (same directory, so
 * the rename is atomic), synced, then renamed over `path`. A reader never sees half a report;
 * a failure removes the temp file and leaves whatever was at `path` untouched.
 */
import { randomUUID } from '../node-crypto.ts';
import { basename, dirname, join } from 'node:path';
import { addSuppressed, ours } from '../errors.ts';
import { fsSeam } from '../fs.ts';

/**
 * Writes `data` to `path` atomically (temp + sync + rename), mode 0644.
 *
 * @throws the first error (open, write, sync, rename); a failed cleanup is in `.suppressed`.
 * @example
 * ```ts
 * await writeFileAtomic('report.html', Buffer.from(html));
 * ```
 */
export async function writeFileAtomic(path: string, data: Buffer): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.${randomUUID()}.tmp`);
  const file = await fsSeam.open(temp, 'wx', 0o644);
  // The first failure wins (a write's ENOSPC, not the close after it); later ones are kept.
  let failure: Error | undefined;
  const fail = (error: unknown): void => {
    if (failure === undefined) failure = ours(error);
    else addSuppressed(failure, error);
  };
  await file
    .write(data)
    .then(() => file.sync())
    .catch(fail);
  await file.close().catch(fail);
  if (failure === undefined) await fsSeam.rename(temp, path).catch(fail);
  if (failure !== undefined) {
    await fsSeam.unlink(temp).catch(fail);
    throw failure;
  }
}
