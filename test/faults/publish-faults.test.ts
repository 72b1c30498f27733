/**
 * G10 through the path users run: a fault injected at each link, rename and unlink of a
 * publish reaches the synchronous publish and its undo exactly as a recovery runs them (the
 * file seam has one algorithm, with or without a fault seam), and leaves the output dir exactly
 * as found — every name, byte and inode, originals back under their names — or, for a fault
 * past the commit point, fully published. The fault seam is handed to the OutputDir as its file
 * seam (`fs`), never installed for the process: what it faults is exactly what was handed it.
 *
 * Every position of a 300-file publish (two turns), with and without `--overwrite`; for a 20,000-file one
 * (79 turns of the synchronous publish) a spread of positions: the first move of each kind,
 * the first of its second turn, the last, and the moves beside the commit point.
 */
import {
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OutputDir } from '../../src/services/outputs/output-dir.ts';
import { PUBLISH_LOCK } from '../../src/services/outputs/publish-lock.ts';
import { SYNC_MOVES_PER_TURN } from '../../src/services/outputs/publish-journal.ts';
import type { FsOp } from '../../src/services/fs.ts';
import { FaultSeam } from '../helpers/fault-seam.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const OPS: readonly FsOp[] = ['link', 'rename', 'unlink'];
/**
 * The publish whose every position is faulted: more moves than one turn of the synchronous
 * publish, so the turn boundary (where a signal's handler may run) is among the positions.
 */
const EVERY = SYNC_MOVES_PER_TURN + 44;
const name = (k: number) => `gate-0-channel-${k}.bin`;

/**
 * A fault seam of this file's own, handed to each OutputDir (never installed process-wide):
 * the faults reach exactly what is handed it.
 */
const seam = new FaultSeam();

/** What a dir holds, recursively: name → content and inode (links: their target). */
function snapshot(dir: string, small: boolean): Map<string, string> {
  const out = new Map<string, string>();
  const visit = (rel: string) => {
    for (const entry of readdirSync(join(dir, rel)).sort()) {
      const path = join(dir, rel, entry);
      const st = lstatSync(path);
      if (st.isDirectory()) {
        out.set(join(rel, entry) + '/', 'dir');
        visit(join(rel, entry));
      } else {
        // The inode proves it is the same file (a publish never writes into one); the bytes,
        // read only where few, that it holds what it held.
        const bytes = small ? readFileSync(path, 'latin1') : String(st.size);
        out.set(join(rel, entry), `${st.ino}:${bytes}`);
      }
    }
  };
  visit('');
  return out;
}

/**
 * A user's output dir: a file of theirs, and with `overwrite` an original of every channel
 * (hard links of the `originals` template: cheap at 20,000, and each its own name to restore).
 */
function userDir(dir: string, files: number, originals: string | undefined): string {
  mkdirSync(dir);
  writeFileSync(join(dir, 'notes.txt'), 'the user’s own file');
  if (originals !== undefined) {
    for (let k = 0; k < files; k++) linkSync(join(originals, name(k)), join(dir, name(k)));
  }
  return dir;
}

/**
 * One publish of `files` staged channel files into `dir` with the fault armed (or none); the
 * staged files are hard links of one template dir (cheap at 20,000).
 */
async function publish(
  dir: string,
  template: string,
  files: number,
  overwrite: boolean,
  fault?: { op: FsOp; nth: number },
): Promise<{ error?: Error; counts: Record<FsOp, number> }> {
  const out = await OutputDir.open(dir, { overwrite, fs: seam.fs });
  for (let k = 0; k < files; k++) linkSync(join(template, name(k)), join(out.stagingDir, name(k)));
  const channels = Array.from({ length: files }, (_, k) => name(k));
  seam.resetFsSeam();
  if (fault !== undefined) {
    seam.injectFault({ op: fault.op, code: 'EIO', nth: fault.nth, pathIncludes: dir });
  }
  let error: Error | undefined;
  try {
    await out.publish(channels);
  } catch (e) {
    error = e as Error;
  }
  const counts = seam.fsOpCounts();
  seam.resetFsSeam();
  return { error, counts };
}

/** `files` channel files with `what <k>` in each. */
function template(dir: string, files: number, what: string): string {
  mkdirSync(dir);
  for (let k = 0; k < files; k++) writeFileSync(join(dir, name(k)), `${what} ${k}`);
  return dir;
}

/**
 * The dir after a complete publish: the user's file as found, and under every channel's name
 * the new file itself (the staged files are links of `tpl`: the same inode).
 */
function isPublished(
  dir: string,
  tpl: string,
  found: Map<string, string>,
  files: number,
): string | undefined {
  const now = snapshot(dir, files <= EVERY);
  // A fault on the publish lock's release, past the commit point, leaves the lock behind: its
  // holder (this run's staging dir) is gone, so the next run into DIR removes it as stale.
  const lock = now.get(PUBLISH_LOCK);
  if (lock !== undefined) {
    const holder = readFileSync(join(dir, PUBLISH_LOCK), 'utf8').trim();
    if (readdirSync(dir).includes(holder)) return `the publish lock's holder ${holder} is there`;
    now.delete(PUBLISH_LOCK);
  }
  if (now.get('notes.txt') !== found.get('notes.txt')) return 'the user’s file changed';
  if (now.size !== files + 1) return `${now.size - 1} entries besides the user’s file`;
  for (let k = 0; k < files; k++) {
    const ino = lstatSync(join(tpl, name(k))).ino;
    if (!now.get(name(k))?.startsWith(`${ino}:`)) return `${name(k)} is not the new file`;
  }
  return undefined;
}

/**
 * Which calls of `op` to fault: every one for a small publish; for a big one the first, the
 * first of the second turn (a turn is 256 moves), the last, and the ones beside the commit
 * point (`near`).
 */
function positions(count: number, all: boolean, near: readonly number[]): number[] {
  if (all) return Array.from({ length: count }, (_, i) => i + 1);
  const picked = new Set<number>([1, 257, count, ...near]);
  return [...picked].filter((n) => n >= 1 && n <= count).sort((a, b) => a - b);
}

interface Tally {
  runs: number;
  restored: number;
  published: number;
}
const tallies = new Map<string, Tally>();

afterAll(() => {
  for (const [what, t] of tallies) {
    console.log(
      `publish faults, ${what}: ${t.runs} runs, ${t.restored} as found, ${t.published} fully published`,
    );
  }
});

for (const files of [EVERY, 20_000]) {
  for (const overwrite of [false, true]) {
    const what = `${files.toLocaleString('en')} files${overwrite ? ', --overwrite' : ''}`;
    describe(`G10 a fault at ${files === EVERY ? 'each' : 'a spread of the'} link/rename/unlink of a ${what} publish`, () => {
      it('leaves the dir exactly as found, or fully published past the commit point', async () => {
        const root = await makeTempRoot();
        const tpl = template(join(root, 'new'), files, 'new');
        const originals = overwrite ? template(join(root, 'old'), files, 'old') : undefined;
        let runs = 0;
        const fresh = () => userDir(join(root, `out-${runs++}`), files, originals);
        // The clean run: how many of each call a publish makes.
        const clean = await publish(fresh(), tpl, files, overwrite);
        expect(clean.error).toBeUndefined();
        // Without --overwrite: a link per file, the commit rename, an unlink per staged link
        // after it; with it, a rename aside per original and an unlink per parked original too.
        expect(clean.counts.link).toBe(files + 1); // and the publish lock's
        expect(clean.counts.rename).toBe(overwrite ? files + 1 : 1);
        expect(clean.counts.unlink).toBeGreaterThanOrEqual(overwrite ? 2 * files : files);
        const tally: Tally = { runs: 0, restored: 0, published: 0 };
        tallies.set(what, tally);
        const problems: string[] = [];
        for (const op of OPS) {
          // Beside the commit point: the last move before it (the last link; with --overwrite
          // the last rename aside too), the commit rename, the first cleanup after it.
          const near =
            op === 'rename'
              ? [clean.counts.rename - 1, clean.counts.rename]
              : op === 'link'
                ? [files]
                : [1];
          for (const nth of positions(clean.counts[op], files <= EVERY, near)) {
            tally.runs++;
            const dir = fresh();
            const found = snapshot(dir, files <= EVERY);
            const run = await publish(dir, tpl, files, overwrite, { op, nth });
            if (run.counts[op] < nth) problems.push(`${op} #${nth}: the fault never fired`);
            else if (run.error !== undefined) {
              if (!run.error.message.endsWith('(injected)')) {
                problems.push(`${op} #${nth}: failed with ${run.error.message}`);
              }
              const now = snapshot(dir, files <= EVERY);
              if (JSON.stringify([...now]) === JSON.stringify([...found])) tally.restored++;
              else problems.push(`${op} #${nth}: failed and the dir is not as found`);
            } else {
              const wrong = isPublished(dir, tpl, found, files);
              if (wrong === undefined) tally.published++;
              else problems.push(`${op} #${nth}: resolved but ${wrong}`);
            }
            rmSync(dir, { recursive: true, force: true });
          }
        }
        expect(problems).toEqual([]);
        expect(tally.restored).toBeGreaterThan(0);
      }, 300_000);
    });
  }
}

describe('G10 a fault at each open/write/sync/close/mkdir/readdir/lstat of a publish (its journal, syncs and lock)', () => {
  it('leaves the dir exactly as found (no staging dir, no lock), or fully published past the commit point', async () => {
    const files = 5;
    // (An rm fault past the commit point leaves the committed staging dir to the next run.)
    const ops: readonly FsOp[] = ['open', 'write', 'sync', 'close', 'mkdir', 'readdir', 'lstat'];
    const root = await makeTempRoot();
    const tpl = template(join(root, 'new'), files, 'new');
    let runs = 0;
    const fresh = () => userDir(join(root, `out-${runs++}`), files, undefined);
    const clean = await publish(fresh(), tpl, files, false);
    expect(clean.error).toBeUndefined();
    const problems: string[] = [];
    let restored = 0;
    for (const op of ops) {
      for (let nth = 1; nth <= clean.counts[op]; nth++) {
        const dir = fresh();
        const found = snapshot(dir, true);
        const run = await publish(dir, tpl, files, false, { op, nth });
        if (run.error !== undefined) {
          const now = snapshot(dir, true);
          if (JSON.stringify([...now]) === JSON.stringify([...found])) restored++;
          else problems.push(`${op} #${nth}: failed and left ${[...now.keys()].join(', ')}`);
        } else {
          const wrong = isPublished(dir, tpl, found, files);
          if (wrong !== undefined) problems.push(`${op} #${nth}: resolved but ${wrong}`);
        }
        rmSync(dir, { recursive: true, force: true });
      }
    }
    expect(problems).toEqual([]);
    expect(restored).toBeGreaterThan(0);
  });
});
