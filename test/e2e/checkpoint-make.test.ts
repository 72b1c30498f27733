/**
 * `spillway checkpoint make` writes under a temporary name beside `--out` and links the file
 * into place only when it is complete: a signal mid-write leaves nothing at `--out` and no
 * temporary file (it used to leave a truncated multi-GB file at `--out`).
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempRoot } from '../helpers/temp.ts';
import { runCli, spawnCli, waitFor } from './harness.ts';

describe('checkpoint make', () => {
  it('SIGTERM mid-write: exit 143, nothing at --out and no temporary file left', async () => {
    const dir = await makeTempRoot();
    const out = join(dir, 'big.spwc');
    const child = spawnCli(['checkpoint', 'make', '--out', out, '--mb', '4096']);
    const tmp = await waitFor(
      'the temporary file growing',
      async () => {
        const name = (await readdir(dir)).find((n) => /^\.spillway-make-[0-9a-f]{8}\.tmp$/.test(n));
        if (name === undefined) return undefined;
        const size = (await stat(join(dir, name)).catch(() => undefined))?.size ?? 0;
        return size > 1024 * 1024 ? name : undefined;
      },
      { child },
    );
    expect(tmp).toBeDefined();
    child.proc.kill('SIGTERM');
    const { code } = await child.exited;
    expect(code, child.stderr).toBe(143);
    expect(await readdir(dir)).toEqual([]);
    expect(child.stderr).not.toMatch(/\n\s+at /);
  });

  it('a complete make leaves exactly --out, and an existing --out is refused untouched (exit 2)', async () => {
    const dir = await makeTempRoot();
    const out = join(dir, 'small.spwc');
    const made = await runCli(['checkpoint', 'make', '--out', out, '--mb', '1', '--json']);
    expect(made.code, made.stderr).toBe(0);
    expect(JSON.parse(made.stdout).path).toBe(out);
    expect(await readdir(dir)).toEqual(['small.spwc']);
    const size = (await stat(out)).size;
    const again = await runCli(['checkpoint', 'make', '--out', out, '--mb', '2']);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already exists');
    expect((await stat(out)).size).toBe(size);
    expect(await readdir(dir)).toEqual(['small.spwc']);
  });
});
