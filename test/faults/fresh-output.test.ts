/**
 * G10 for an output dir that does not exist yet (services/outputs/fresh-output.ts): the run
 * stages the whole tree in a holder beside it and publishes it by one rename. Proven through
 * the path users run, with the file seam handed to the OutputDir as its `fs` (never installed
 * process-wide): a fault at every operation of the open and the publish leaves the parent dir
 * exactly as found (no DIR, no holder, no parent the run made) or DIR fully published; a DIR
 * made meanwhile is published into the journaled way, never clobbered; dead runs' holders are
 * removed and live ones kept.
 */
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { OutputExistsError } from '../../src/services/errors.ts';
import { OutputDir } from '../../src/services/outputs/output-dir.ts';
import { FS_OPS, type FsOp } from '../../src/services/fs.ts';
import { FaultSeam } from '../helpers/fault-seam.ts';
import { spawnFixture } from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const seam = new FaultSeam();
afterEach(() => seam.resetFsSeam());

const name = (k: number) => `gate-0-channel-${k}.bin`;
const FILES = 40;
const names = Array.from({ length: FILES }, (_, k) => name(k));
/** What mkdir(1) makes of 0777 here: a dir made the plain way, under this process's umask. */
function plainDirMode(parent: string): number {
  const probe = join(parent, 'probe');
  mkdirSync(probe, { mode: 0o777 });
  const mode = statSync(probe).mode & 0o777;
  rmdirSync(probe);
  return mode;
}

const roots: string[] = [];
afterAll(async () => {
  const { rm } = await import('node:fs/promises');
  for (const r of roots) await rm(r, { recursive: true, force: true });
});

async function parentDir(): Promise<string> {
  const dir = await makeTempRoot();
  roots.push(dir);
  writeFileSync(join(dir, 'notes.txt'), 'the user’s own file');
  return dir;
}

/** Opens `out` (new), stages FILES channel files, publishes; the error if it failed. */
async function run(
  out: string,
  fault?: { op: FsOp; nth: number; pathIncludes: string },
  between?: () => void,
): Promise<Error | undefined> {
  seam.resetFsSeam();
  if (fault !== undefined) seam.injectFault({ ...fault, code: 'EIO' });
  let dir: OutputDir | undefined;
  try {
    dir = await OutputDir.open(out, { fs: seam.fs });
    for (let k = 0; k < FILES; k++) writeFileSync(join(dir.stagingDir, name(k)), `new ${k}`);
    between?.();
    await dir.publish(names);
    return undefined;
  } catch (error) {
    await dir?.discard().catch(() => undefined);
    return error as Error;
  } finally {
    seam.resetFsSeam();
  }
}

/** Every file of a complete publish, and nothing else. */
function isPublished(out: string): boolean {
  const found = readdirSync(out).sort();
  return (
    found.join() === [...names].sort().join() &&
    names.every((n, k) => readFileSync(join(out, n), 'utf8') === `new ${k}`)
  );
}

const holdersIn = (dir: string) => readdirSync(dir).filter((n) => n.startsWith('.spillway-new-'));

describe('G10 a new output dir is staged beside it and published by one rename', () => {
  it('G10 before the rename nothing is at DIR; after it every file; the holder is gone', async () => {
    const parent = await parentDir();
    const out = join(parent, 'out');
    let atRename: { dirThere: boolean; holders: number } | undefined;
    seam.setFsSyncHook((op, path) => {
      if (op === 'rename' && path.endsWith('/tree')) {
        atRename = {
          dirThere: readdirSync(parent).includes('out'),
          holders: holdersIn(parent).length,
        };
      }
    });
    const opened = await OutputDir.open(out, { fs: seam.fs });
    expect(opened.createdDir).toBe(true);
    expect(readdirSync(parent)).not.toContain('out');
    for (let k = 0; k < FILES; k++) writeFileSync(join(opened.stagingDir, name(k)), `new ${k}`);
    await opened.publish(names);
    expect(atRename).toEqual({ dirThere: false, holders: 1 });
    expect(isPublished(out)).toBe(true);
    expect(readdirSync(parent).sort()).toEqual(['notes.txt', 'out']);
    // As mkdir(1) makes a dir: 0777 & umask (the holder was private, the tree never was less).
    expect(statSync(out).mode & 0o777).toBe(plainDirMode(parent));
  });

  it('G10 a failed run into a new dir leaves no trace: no DIR, no holder, no parent it made', async () => {
    const parent = await parentDir();
    const out = join(parent, 'a', 'b', 'out');
    const opened = await OutputDir.open(out, { fs: seam.fs });
    writeFileSync(join(opened.stagingDir, name(0)), 'new');
    await opened.discard();
    expect(readdirSync(parent)).toEqual(['notes.txt']);
  });

  it('G10 a cancel before the rename leaves no trace', async () => {
    const parent = await parentDir();
    const out = join(parent, 'out');
    const opened = await OutputDir.open(out, { fs: seam.fs });
    writeFileSync(join(opened.stagingDir, name(0)), 'new');
    const error = await opened
      .publish([name(0)], { signal: AbortSignal.abort(new Error('stop')) })
      .catch((e: unknown) => e as Error);
    expect(error?.name).toBe('AbortedError');
    expect(readdirSync(parent)).toEqual(['notes.txt']);
  });
});

describe('G10 a new DIR given with . and .. in its path', () => {
  it('G10 parent/missing/../out and parent/./out2/ are published whole, nothing else left', async () => {
    const parent = await parentDir();
    // The path is used as given (no path.join here, which would normalize it away).
    for (const out of [`${parent}/missing/../out`, `${parent}/./out2/`]) {
      const opened = await OutputDir.open(out, { fs: seam.fs });
      for (let k = 0; k < FILES; k++) writeFileSync(join(opened.stagingDir, name(k)), `new ${k}`);
      await opened.publish(names);
    }
    expect(isPublished(join(parent, 'out'))).toBe(true);
    expect(isPublished(join(parent, 'out2'))).toBe(true);
    expect(readdirSync(parent).sort()).toEqual(['notes.txt', 'out', 'out2']);
  });
});

describe('G10 a fault at every operation of a new dir’s open and publish', () => {
  it('G10 each fault leaves the parent exactly as found, or DIR fully published', async () => {
    // The operations of one clean run, counted per kind (paths under the parent only).
    const parent0 = await parentDir();
    const counted = new Map<FsOp, number>();
    seam.resetFsSeam();
    seam.setFsSyncHook(() => undefined);
    const baseline = await (async () => {
      const counts: Record<string, number> = {};
      seam.setFsHook(async (op, path) => {
        if (path.includes(parent0)) counts[op] = (counts[op] ?? 0) + 1;
      });
      seam.setFsSyncHook((op, path) => {
        if (path.includes(parent0)) counts[op] = (counts[op] ?? 0) + 1;
      });
      const opened = await OutputDir.open(join(parent0, 'out'), { fs: seam.fs });
      for (let k = 0; k < FILES; k++) writeFileSync(join(opened.stagingDir, name(k)), `new ${k}`);
      await opened.publish(names);
      return counts;
    })();
    seam.resetFsSeam();
    for (const op of FS_OPS) if ((baseline[op] ?? 0) > 0) counted.set(op, baseline[op]!);
    expect([...counted.keys()]).toEqual(
      expect.arrayContaining(['mkdir', 'writeFile', 'open', 'sync', 'rename', 'lstat', 'rm']),
    );
    let faults = 0;
    for (const [op, count] of counted) {
      for (let nth = 1; nth <= count; nth++) {
        const parent = await parentDir();
        const out = join(parent, 'out');
        const error = await run(out, { op, nth, pathIncludes: parent });
        faults++;
        const left = readdirSync(parent).sort();
        const where = `${op} #${nth}: ${String(error?.message)}`;
        if (error !== undefined) {
          expect(left, where).toEqual(['notes.txt']);
        } else {
          expect(isPublished(out), where).toBe(true);
          // A fault past the commit point (the holder's removal) may leave the holder, with
          // nothing but its marker in it: the next run beside it removes it.
          for (const h of holdersIn(parent)) {
            expect(readdirSync(join(parent, h)), where).toEqual(['owner.json']);
          }
        }
      }
    }
    expect(faults).toBeGreaterThan(8);
  });
});

describe('G10 a DIR made meanwhile is never clobbered', () => {
  it('G10 DIR made with a user’s file before the rename: published into it the journaled way', async () => {
    const parent = await parentDir();
    const out = join(parent, 'out');
    const error = await run(out, undefined, () => {
      mkdirSync(out);
      writeFileSync(join(out, 'theirs.txt'), 'made meanwhile');
    });
    expect(error).toBeUndefined();
    expect(readFileSync(join(out, 'theirs.txt'), 'utf8')).toBe('made meanwhile');
    expect(readdirSync(out).filter((n) => n.startsWith('gate-')).length).toBe(FILES);
    expect(readdirSync(out).filter((n) => n.startsWith('.spillway'))).toEqual([]);
    expect(holdersIn(parent)).toEqual([]);
  });

  it('G10 DIR made meanwhile holding a channel file of the same name: refused, theirs kept', async () => {
    const parent = await parentDir();
    const out = join(parent, 'out');
    const error = await run(out, undefined, () => {
      mkdirSync(out);
      writeFileSync(join(out, name(3)), 'theirs');
    });
    expect(error).toBeInstanceOf(OutputExistsError);
    expect(readdirSync(out)).toEqual([name(3)]);
    expect(readFileSync(join(out, name(3)), 'utf8')).toBe('theirs');
    expect(holdersIn(parent)).toEqual([]);
  });

  it('G10 an empty dir made at DIR in the instant before the rename is replaced: no file lost', async () => {
    const parent = await parentDir();
    const out = join(parent, 'out');
    seam.resetFsSeam();
    seam.setFsSyncHook((op, path) => {
      if (op === 'rename' && path.endsWith('/tree')) mkdirSync(out);
    });
    const opened = await OutputDir.open(out, { fs: seam.fs });
    for (let k = 0; k < FILES; k++) writeFileSync(join(opened.stagingDir, name(k)), `new ${k}`);
    await opened.publish(names);
    expect(isPublished(out)).toBe(true);
    expect(holdersIn(parent)).toEqual([]);
  });
});

describe('G7 G10 holders of other runs beside a new dir', () => {
  it('G7 a live run’s holder is kept; a dead run’s (another boot) is removed', async () => {
    const parent = await parentDir();
    const live = await OutputDir.open(join(parent, 'first'), { fs: seam.fs });
    const dead = join(parent, '.spillway-new-00000000-4242-1-0123abcd');
    mkdirSync(join(dead, 'tree'), { recursive: true });
    writeFileSync(join(dead, 'tree', name(0)), 'a dead run’s');
    const log: string[] = [];
    const second = await OutputDir.open(join(parent, 'second'), {
      fs: seam.fs,
      log: (l) => log.push(l),
    });
    expect(holdersIn(parent)).toHaveLength(2);
    expect(readdirSync(parent)).not.toContain(dead.slice(parent.length + 1));
    expect(log.join('\n')).toMatch(/removed .*spillway-new-00000000-4242-1-0123abcd/);
    expect(log.join('\n')).toMatch(/kept .*spillway-new-/);
    await live.discard();
    await second.discard();
    expect(readdirSync(parent)).toEqual(['notes.txt']);
  });
});

describe('G7 G10 a kill -9 past the rename (or in the journaled fallback) leaves DIR existing', () => {
  it('G10 the next run into DIR itself removes a dead holder beside it; a live one is kept', async () => {
    // What a kill -9 between the rename and the holder's removal leaves: DIR complete, and a
    // holder beside it (here a dead run's, of another boot, with a staged file still in it, as
    // a kill -9 in the fallback into a DIR made meanwhile leaves it).
    const parent = await parentDir();
    const out = join(parent, 'out');
    mkdirSync(out);
    writeFileSync(join(out, 'theirs.txt'), 'published before');
    const live = await OutputDir.open(join(parent, 'other'), { fs: seam.fs });
    const dead = join(parent, '.spillway-new-00000000-4242-1-0123abcd');
    mkdirSync(join(dead, 'tree'), { recursive: true });
    writeFileSync(join(dead, 'tree', name(0)), 'a dead run’s');
    const log: string[] = [];
    const next = await OutputDir.open(out, { fs: seam.fs, log: (l) => log.push(l) });
    writeFileSync(join(next.stagingDir, name(0)), 'new 0');
    await next.publish([name(0)]);
    expect(readdirSync(parent)).not.toContain(dead.slice(parent.length + 1));
    expect(log.join('\n')).toMatch(/removed .*spillway-new-00000000-4242-1-0123abcd/);
    expect(holdersIn(parent)).toHaveLength(1);
    expect(readdirSync(out).sort()).toEqual([name(0), 'theirs.txt']);
    await live.discard();
    expect(readdirSync(parent).sort()).toEqual(['notes.txt', 'out']);
  });
});

describe('G10 a fault at every operation of the journaled fallback (DIR made meanwhile)', () => {
  /**
   * Another run's tree (a user's file in it) renamed to DIR between this run's check and its
   * rename, as a concurrent run publishes; then the fault, armed from that instant on.
   */
  async function raced(fault?: { op: FsOp; nth: number }) {
    const parent = await parentDir();
    const out = join(parent, 'out');
    const theirs = join(parent, 'their-tree');
    mkdirSync(theirs);
    writeFileSync(join(theirs, 'theirs.txt'), 'made meanwhile');
    const counts: Partial<Record<FsOp, number>> = {};
    let raced = false;
    seam.resetFsSeam();
    seam.setFsSyncHook((op, path) => {
      if (raced && path.includes(parent)) counts[op] = (counts[op] ?? 0) + 1;
      if (op !== 'rename' || !path.endsWith('/tree') || raced) return;
      raced = true;
      renameSync(theirs, out);
      if (fault !== undefined) seam.injectFault({ ...fault, code: 'EIO', pathIncludes: parent });
    });
    seam.setFsHook(async (op, path) => {
      if (raced && path.includes(parent)) counts[op] = (counts[op] ?? 0) + 1;
    });
    let dir: OutputDir | undefined;
    let error: Error | undefined;
    try {
      dir = await OutputDir.open(out, { fs: seam.fs });
      for (let k = 0; k < FILES; k++) writeFileSync(join(dir.stagingDir, name(k)), `new ${k}`);
      await dir.publish(names);
    } catch (e) {
      error = e as Error;
      await dir?.discard().catch(() => undefined);
    } finally {
      seam.resetFsSeam();
    }
    return { parent, out, error, counts };
  }

  it('G10 each fault leaves DIR as the other run made it, or fully published', async () => {
    const clean = await raced();
    expect(clean.error).toBeUndefined();
    expect(clean.counts.rename).toBeGreaterThan(FILES); // the moves into the inner staging dir
    const problems: string[] = [];
    let asFound = 0;
    for (const op of FS_OPS) {
      for (let nth = 1; nth <= (clean.counts[op] ?? 0); nth++) {
        const { parent, out, error } = await raced({ op, nth });
        const where = `${op} #${nth}`;
        const inOut = readdirSync(out).sort();
        if (error !== undefined) {
          if (inOut.join() === 'theirs.txt') asFound++;
          else problems.push(`${where}: failed (${error.message}) and left ${inOut.join(', ')}`);
          if (holdersIn(parent).length > 0) problems.push(`${where}: failed and left a holder`);
          continue;
        }
        const published =
          names.every((n, k) => readFileSync(join(out, n), 'utf8') === `new ${k}`) &&
          readFileSync(join(out, 'theirs.txt'), 'utf8') === 'made meanwhile';
        // Past the commit point a fault may leave the lock (its holder gone) or the committed
        // staging dir, and the holder with nothing of the run's: the next run removes them.
        const extra = inOut.filter((n) => n !== 'theirs.txt' && !names.includes(n));
        const leftOk = extra.every(
          (n) =>
            n === '.spillway-publish-lock' ||
            (n.startsWith('.spillway-staging-') && readdirSync(join(out, n)).includes('committed')),
        );
        if (!published || !leftOk) problems.push(`${where}: resolved but ${inOut.join(', ')}`);
      }
    }
    expect(problems).toEqual([]);
    expect(asFound).toBeGreaterThan(5);
  });
});

describe('G10 a failed open of a new dir leaves nothing to the exit hook', () => {
  it('G10 parents made and removed by a failed open are not removed at exit when the user makes them again', async () => {
    const parent = await parentDir();
    const child = spawnFixture('exit-hook-parents-child.ts', [parent]);
    const { code } = await child.exited;
    expect(code, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout.trim())).toEqual({ code: 'EIO' });
    // The user's a/b are still there after the child's exit hook ran.
    expect(readdirSync(join(parent, 'a'))).toEqual(['b']);
  });
});
