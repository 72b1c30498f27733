/**
 * The seam's recursive delete (src/services/remove-tree.ts), the cleanup every cancel waits
 * for: a flat task dir in a few round trips, anything else as `fs.rm` would, and never through
 * a link.
 */
import { lstat, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { removeTree } from '../../src/services/remove-tree.ts';
import { exists } from '../helpers/async.ts';
import { makeTempRoot } from '../helpers/temp.ts';

describe('removeTree', () => {
  it('G1 removes a flat task dir of 200 spill files, and a missing path is fine', async () => {
    const dir = join(await makeTempRoot(), 'task-1');
    await mkdir(dir);
    for (let i = 0; i < 200; i++) await writeFile(join(dir, `spill-segment-${i}.bin`), 'x');
    await removeTree(dir);
    expect(await exists(dir)).toBe(false);
    await removeTree(dir);
  });

  it('removes nested dirs and a lone file', async () => {
    const root = await makeTempRoot();
    const dir = join(root, 'a');
    await mkdir(join(dir, 'b', 'c'), { recursive: true });
    await writeFile(join(dir, 'b', 'c', 'f'), 'x');
    await writeFile(join(dir, 'g'), 'x');
    await removeTree(dir);
    expect(await exists(dir)).toBe(false);
    await writeFile(join(root, 'lone'), 'x');
    await removeTree(join(root, 'lone'));
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
    await removeTree(join(root, 'link-to-dir'));
    await removeTree(dir);
    expect(await exists(dir)).toBe(false);
    await expect(lstat(join(root, 'link-to-dir'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readFile(join(target, 'keep.bin'), 'utf8')).toBe('precious');
  });
});
