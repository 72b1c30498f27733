/**
 * The seam's recursive delete (src/services/remove-tree.ts), the cleanup every cancel waits
 * for: a flat task dir in a few round trips, anything else as `fs.rm` would, and never through
 * a link.
 */
import { lstat, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { lstatSync, readdirSync, rmdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fsSeam } from '../../src/services/fs.ts';
import { removeSmallTreeSync, SYNC_TREE_MAX_ENTRIES } from '../../src/services/remove-tree.ts';
import { seam } from '../helpers/fault-seam.ts';
import { exists } from '../helpers/async.ts';
import { makeTempRoot } from '../helpers/temp.ts';

afterEach(() => seam.resetFsSeam());

describe('removeTree', () => {
  it('G1 removes a flat task dir of 200 spill files, and a missing path is fine', async () => {
    const dir = join(await makeTempRoot(), 'task-1');
    await mkdir(dir);
    for (let i = 0; i < 200; i++) await writeFile(join(dir, `spill-segment-${i}.bin`), 'x');
    await fsSeam.rm(dir);
    expect(await exists(dir)).toBe(false);
    await fsSeam.rm(dir);
  });

  it('removes nested dirs and a lone file', async () => {
    const root = await makeTempRoot();
    const dir = join(root, 'a');
    await mkdir(join(dir, 'b', 'c'), { recursive: true });
    await writeFile(join(dir, 'b', 'c', 'f'), 'x');
    await writeFile(join(dir, 'g'), 'x');
    await fsSeam.rm(dir);
    expect(await exists(dir)).toBe(false);
    await writeFile(join(root, 'lone'), 'x');
    await fsSeam.rm(join(root, 'lone'));
    expect(await exists(join(root, 'lone'))).toBe(false);
  });

  it('G10 a link is removed, never followed: its target dir and files stay', async () => {
    const root = await makeTempRoot();
    const target = join(root, 'target');
    await mkdir(target);
    await writeFile(join(target, 'keep.bin'), 'precious');
    const dir = join(root, 'task');
    await mkdir(dir);
    await symlink(target, join(dir, 'planted'));
    await symlink(target, join(root, 'link-to-dir'));
    await fsSeam.rm(join(root, 'link-to-dir'));
    await fsSeam.rm(dir);
    expect(await exists(dir)).toBe(false);
    await expect(lstat(join(root, 'link-to-dir'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readFile(join(target, 'keep.bin'), 'utf8')).toBe('precious');
  });

  it('C1 the delete goes through the seam: an unlink fault armed on it reaches a task-dir delete, and the general delete still removes the dir', async () => {
    const dir = join(await makeTempRoot(), 'task-c1');
    await mkdir(dir);
    for (let i = 0; i < 3; i++) await writeFile(join(dir, `spill-segment-${i}.bin`), 'x');
    const seen: string[] = [];
    const see = (op: string, path: string) => void seen.push(`${op} ${path.slice(dir.length)}`);
    seam.setFsHook(see);
    seam.setFsSyncHook(see);
    seam.injectFault({ op: 'unlink', code: 'EIO', pathIncludes: 'spill-segment-1.bin' });
    await fsSeam.rm(dir);
    expect(await exists(dir)).toBe(false);
    // The production delete: the synchronous step lists the dir and unlinks until the fault
    // (the files before it in the listing, then the faulted one), the batched delete lists
    // what is left and unlinks it: 4 unlinks whatever the listing's order.
    expect(seam.fsOpCounts()).toMatchObject({ rm: 1, readdir: 2, unlink: 4 });
    expect(seen).toContain('unlink /spill-segment-1.bin');
  });
});

describe('removeSmallTreeSync (the delete a cancel waits for)', () => {
  const ops = {
    lstatSync: (p: string) => lstatSync(p, { throwIfNoEntry: false }),
    readdirSync: (p: string) => readdirSync(p),
    unlinkSync: (p: string) => unlinkSync(p),
    rmdirSync: (p: string) => rmdirSync(p),
  };

  it('G1 a flat task dir of up to SYNC_TREE_MAX_ENTRIES files goes in one synchronous step', async () => {
    const dir = join(await makeTempRoot(), 'task-1');
    await mkdir(dir);
    for (let i = 0; i < SYNC_TREE_MAX_ENTRIES; i++) {
      await writeFile(join(dir, `spill-segment-${i}.bin`), 'x');
    }
    expect(removeSmallTreeSync(dir, ops)).toBe(true);
    expect(await exists(dir)).toBe(false);
    expect(removeSmallTreeSync(dir, ops)).toBe(true); // missing is fine
  });

  it('a bigger dir is left whole to the async delete (the event loop is never held long)', async () => {
    const dir = join(await makeTempRoot(), 'staging');
    await mkdir(dir);
    for (let i = 0; i <= SYNC_TREE_MAX_ENTRIES; i++) await writeFile(join(dir, `f-${i}`), 'x');
    expect(removeSmallTreeSync(dir, ops)).toBe(false);
    expect(readdirSync(dir)).toHaveLength(SYNC_TREE_MAX_ENTRIES + 1);
    await fsSeam.rm(dir);
    expect(await exists(dir)).toBe(false);
  });

  it('a subdirectory makes it give up; fsSeam.rm still removes the whole tree', async () => {
    const dir = join(await makeTempRoot(), 'odd');
    await mkdir(join(dir, 'sub'), { recursive: true });
    await writeFile(join(dir, 'sub', 'f'), 'x');
    await writeFile(join(dir, 'g'), 'x');
    expect(removeSmallTreeSync(dir, ops)).toBe(false);
    await fsSeam.rm(dir);
    expect(await exists(dir)).toBe(false);
  });
});
