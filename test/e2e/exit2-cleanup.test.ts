/**
 * Bad input does not hide a failed cleanup (hardening issue): a corrupt checkpoint exits 2 with
 * its one line naming file and offset, and when deleting the spill files failed on the way
 * out, a second line says so — a file may have been left behind, and the user must know —
 * while the registry's retry still leaves the spill root empty.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { spawnFixture } from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { lines, spillLeftovers } from './harness.ts';

describe('the exit-2 path reports cleanup failures', () => {
  it('a corrupt checkpoint whose spill dir could not be deleted at first: exit 2, the offset line, then the cleanup failure', async () => {
    const dir = await makeTempRoot();
    const root = join(dir, 'root');
    await mkdir(root);
    const made = await makeCheckpoint({
      out: join(dir, 'good.spwc'),
      gates: 1,
      channels: 2,
      mb: 4,
      seed: 2,
    });
    // Cut inside the last entry's payload: 4 MiB spill before the reader meets the end.
    const bytes = await readFile(made.path);
    const corrupt = join(dir, 'cut.spwc');
    await writeFile(corrupt, bytes.subarray(0, bytes.length - 100));
    const child = spawnFixture('cli-with-fault.ts', [
      JSON.stringify({ op: 'rm', code: 'EIO', pathIncludes: 'task-' }),
      'recover',
      corrupt,
      '--out',
      join(dir, 'out'),
      '--spill-root',
      root,
    ]);
    const { code } = await child.exited;
    expect(code, child.stderr).toBe(2);
    const [first, second, ...rest] = lines(child.stderr);
    expect(first).toMatch(/cut\.spwc: corrupt checkpoint at byte \d+: /);
    expect(second).toMatch(/1 later error\(s\) suppressed, 1 of them cleanup failures: EIO/);
    expect(rest).toEqual([]);
    expect(child.stderr).not.toContain('    at ');
    expect(await spillLeftovers(root)).toEqual([]);
  });
});
