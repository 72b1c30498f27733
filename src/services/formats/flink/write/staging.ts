/**
 * NEWDIR appears whole or not at all: it is built in a sibling staging directory (same file
 * system, so the final rename is atomic) and renamed into place only once every file is
 * written and synced. A failure or an abort removes the staging directory; NEWDIR is never
 * created half. NEWDIR must be local, absent or an empty directory, and outside the source
 * checkpoint's directory (a staging dir there would write into the source).
 */
import { randomUUID } from '../../../node-crypto.ts';
import { basename, dirname, relative, resolve, isAbsolute } from 'node:path';
import { RewriteRefusedError, errnoOf } from '../../../errors.ts';
import { fsSeam } from '../../../fs.ts';
import { isRemoteLocation } from '../../../locations/schemes.ts';

/** A staging directory for NEWDIR. */
export interface Staging {
  /** Where to write. */
  readonly dir: string;
  /** NEWDIR, absolute. */
  readonly out: string;
}

/**
 * Checks NEWDIR (`out`) before anything is read or written.
 *
 * @throws RewriteRefusedError (`'out'`) for a remote NEWDIR, a NEWDIR that is not an empty
 *   directory, or one inside `sourceDir` (when local).
 */
export async function checkOut(out: string, sourceDir: string | undefined): Promise<string> {
  if (isRemoteLocation(out)) {
    throw new RewriteRefusedError(
      'out',
      `NEWDIR ${out} must be a local directory (a remote NEWDIR is not supported yet)`,
    );
  }
  const abs = resolve(out);
  if (sourceDir !== undefined) {
    const rel = relative(resolve(sourceDir), abs);
    if (rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))) {
      throw new RewriteRefusedError(
        'out',
        `NEWDIR ${out} is inside the source checkpoint ${sourceDir}: the source is never written`,
      );
    }
  }
  const st = await fsSeam.stat(abs).catch((error: unknown) => {
    if (errnoOf(error) === 'ENOENT') return undefined;
    throw error;
  });
  if (st !== undefined) {
    if (!st.isDirectory()) {
      throw new RewriteRefusedError('out', `NEWDIR ${out} exists and is not a directory`);
    }
    if ((await fsSeam.readdir(abs)).length > 0) {
      throw new RewriteRefusedError('out', `NEWDIR ${out} exists and is not empty`);
    }
  }
  return abs;
}

/** Makes the staging directory beside NEWDIR. */
export async function stage(out: string): Promise<Staging> {
  // A dot name beside NEWDIR: the same file system, so the final rename is atomic.
  const dir = resolve(dirname(out), `.${basename(out)}.spillway-rewrite-${randomUUID()}`);
  await fsSeam.mkdir(dir, { mode: 0o755 });
  return { dir, out };
}

/**
 * Renames the staging directory to NEWDIR (replacing an empty NEWDIR; a NEWDIR that gained
 * files meanwhile is refused and the staging removed).
 */
export async function commit(staging: Staging): Promise<void> {
  try {
    await fsSeam.rename(staging.dir, staging.out);
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'ENOTEMPTY' || errno === 'EEXIST' || errno === 'ENOTDIR') {
      throw new RewriteRefusedError(
        'out',
        `NEWDIR ${staging.out} was filled while the rewrite ran`,
      );
    }
    throw error;
  }
}

/** Removes the staging directory and everything in it. */
export async function discard(staging: Staging): Promise<void> {
  await fsSeam.rm(staging.dir);
}
