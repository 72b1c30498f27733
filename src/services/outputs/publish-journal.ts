/**
 * The publish's journal and its steps (output-dir.ts): the names it uses in the staging dir,
 * the journal's text, fsyncs, and the loops the moves run in. Every operation goes through the
 * file seam handed in.
 */
import { join } from 'node:path';
import { addSuppressed } from '../errors.ts';
import type { FileSystem } from '../fs.ts';

/** Undo and roll-back moves in flight at once: several, so the thread pool is never idle. */
export const PUBLISH_IN_FLIGHT = 8;
/**
 * Files moved synchronously per turn of the event loop: a link through the thread pool cost
 * more than the link itself (262,144 one-byte channels), and between turns a signal still gets
 * in and aborts the publish before its commit point.
 */
export const SYNC_MOVES_PER_TURN = 256;
/** Where a replaced file waits inside the staging dir until the publish is complete. */
export const REPLACED = '.replaced-';
/** The journal before the commit point: moves may be in DIR, to be undone after a crash. */
export const PUBLISHING = 'publishing';
/** The journal after it: every new file is in place, the run is complete. */
export const COMMITTED = 'committed';
/** The staging dir's owner marker (judged as the spill root's owner dirs are). */
export const MARKER = 'owner.json';

export function journalText(overwrite: boolean, dirs: readonly string[]): string {
  return (
    JSON.stringify({
      overwrite,
      // The dirs this publish creates in DIR (a tree's), removed again by an undo while empty.
      dirs,
      moves: ['<name> -> DIR/<name> (hard link)', '.replaced-<name> <- DIR/<name> (rename)'],
      undo: 'unlink DIR/<name> if it is <name> (same inode); rename .replaced-<name> back',
    }) + '\n'
  );
}

/** Writes `path` exclusively and fsyncs it and its dir: the journal survives a crash. */
export async function writeSynced(fs: FileSystem, path: string, text: string): Promise<void> {
  const file = await fs.open(path, 'wx', 0o600);
  try {
    await file.write(Buffer.from(text));
    await file.sync();
  } finally {
    await file.close();
  }
  await syncDir(fs, join(path, '..'));
}

/** fsync of a directory: its entries (renames, links) survive a crash. */
export async function syncDir(fs: FileSystem, dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Runs the synchronous `fn` over the indices `0 … count-1`, yielding to the event loop every
 * {@link SYNC_MOVES_PER_TURN} (a signal's handler runs then); stops at the first throw.
 */
export async function forEachInTurns(count: number, fn: (index: number) => void): Promise<void> {
  for (let k = 0; k < count; k++) {
    if (k > 0 && k % SYNC_MOVES_PER_TURN === 0) {
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    fn(k);
  }
}

/**
 * Runs `fn` over the indices `0 … count-1`, at most `limit` at once. On the first failure it starts nothing more,
 * waits for what is running, and rejects with that failure (later ones suppressed).
 */
export async function forEachLimited(
  count: number,
  limit: number,
  fn: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: Error | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < count) {
      const index = next++;
      try {
        await fn(index);
      } catch (error) {
        if (failure === undefined) failure = error as Error;
        else addSuppressed(failure, error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
  if (failure !== undefined) throw failure;
}
