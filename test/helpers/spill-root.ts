/**
 * The spill-root half of the test kit: what a spill root holds at an instant (the G1 check),
 * and its removal once a suite is done with it.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { SpillRoot } from '../../src/services/spill-root/spill-root.ts';
import { originalOf } from '../../src/services/errors.ts';
import { removeDir } from './temp.ts';

/** What a spill root holds right now, read synchronously (so it can be taken at an instant). */
export interface SpillListing {
  /** `task-*` dirs under any `owner-*` dir. */
  taskDirs: string[];
  /** `spill-segment-*.bin` files anywhere under the root. */
  spillFiles: string[];
}

export function listSpill(spillRoot: string): SpillListing {
  const base = join(spillRoot, 'spillway');
  const taskDirs: string[] = [];
  const spillFiles: string[] = [];
  if (!existsSync(base)) return { taskDirs, spillFiles };
  for (const entry of readdirSync(base, { recursive: true, encoding: 'utf8' })) {
    const name = entry.split('/').at(-1)!;
    if (/^task-/.test(name) && /^owner-[^/]+\/task-[^/]+$/.test(entry)) taskDirs.push(entry);
    if (/^spill-segment-\d+\.bin$/.test(name)) spillFiles.push(entry);
  }
  return { taskDirs, spillFiles };
}

/**
 * Settles `done` to its report or error, taking the {@link listSpill} of `spillRoot` in the
 * first callback on it: G1 is about the instant `done` settles, not a moment later.
 */
export function outcomeWithListing<R>(
  done: Promise<R>,
  spillRoot: string,
): Promise<{ report?: R; error?: Error; atDone: SpillListing }> {
  return done.then(
    (report) => ({ report, atDone: listSpill(spillRoot) }),
    // The first cause as it happened (see settle() in ./async.ts).
    (error: Error) => ({ error: originalOf(error) as Error, atDone: listSpill(spillRoot) }),
  );
}

/** Closes the spill root's owner dir (if this process opened it) and removes `dir`. */
export async function removeSpillRoot(dir: string): Promise<void> {
  try {
    await (await SpillRoot.open(dir, { sweep: false })).close();
  } catch {
    // The root may never have been opened, or a test fault broke it: rm below still cleans.
  }
  await removeDir(dir);
}
