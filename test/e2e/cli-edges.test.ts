/**
 * The smaller promises of the command line (issue 23, point 8), each through the real CLI:
 * usage and configuration mistakes are exit 2 in one line, a path in a message never splits it,
 * and a failed run removes the parents of `--out` it created.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeSmallCheckpoint, suiteCheckpoint } from '../helpers/checkpoints.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { lines, runCli, spillLeftovers } from './harness.ts';

const input = suiteCheckpoint((dir) => makeSmallCheckpoint(dir, { kib: 64 }));

async function setup() {
  const dir = await makeTempRoot();
  const root = join(dir, 'spill');
  await mkdir(root);
  return { dir, root };
}

function expectOneLineExit2(run: { code: number | null; stderr: string }, text: string | RegExp) {
  expect(run.code, run.stderr).toBe(2);
  expect(lines(run.stderr), run.stderr).toHaveLength(1);
  expect(run.stderr).toMatch(text);
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

describe('usage and configuration mistakes are exit 2, one line', () => {
  it('an --out whose name is too long for the file system', async () => {
    const { dir, root } = await setup();
    const out = join(dir, 'x'.repeat(300));
    const run = await runCli(['recover', input.path, '--out', out, '--spill-root', root]);
    expectOneLineExit2(run, /name too long/);
  });

  it("an empty --out ''", async () => {
    const { root } = await setup();
    const run = await runCli(['recover', input.path, '--out', '', '--spill-root', root]);
    expectOneLineExit2(run, /--out must not be empty/);
  });

  it('a repeated --out or --rescale is refused, not silently the last', async () => {
    const { dir, root } = await setup();
    const a = join(dir, 'a');
    const b = join(dir, 'b');
    const twice = await runCli([
      'recover',
      input.path,
      '--out',
      a,
      '--out',
      b,
      '--spill-root',
      root,
    ]);
    expectOneLineExit2(twice, /--out given more than once/);
    const rescale = await runCli([
      'recover',
      input.path,
      '--out',
      a,
      '--rescale',
      '0/2',
      '--rescale',
      '1/2',
      '--spill-root',
      root,
    ]);
    expectOneLineExit2(rescale, /--rescale given more than once/);
    expect(await readdir(dir)).toEqual(['spill']);
  });

  it('--key-bytes 0 is refused (every record would fall in one key group)', async () => {
    const { dir, root } = await setup();
    const run = await runCli([
      'recover',
      input.path,
      '--out',
      join(dir, 'o'),
      '--rescale',
      '0/2',
      '--key-bytes',
      '0',
      '--spill-root',
      root,
    ]);
    expectOneLineExit2(run, /--key-bytes must be between 1 and/);
  });

  it('a --spill-root that does not exist', async () => {
    const { dir } = await setup();
    const run = await runCli([
      'recover',
      input.path,
      '--out',
      join(dir, 'o'),
      '--spill-root',
      join(dir, 'nope'),
    ]);
    expectOneLineExit2(run, /does not exist/);
  });
});

describe('messages and leftovers', () => {
  it('a newline in a path is escaped: the message stays one line', async () => {
    const { dir, root } = await setup();
    const out = join(dir, 'evil\nname');
    await writeFile(out, 'a file, not a dir');
    const run = await runCli(['recover', input.path, '--out', out, '--spill-root', root]);
    expectOneLineExit2(run, /evil\\nname/);
  });

  it('a failed run into --out a/b/c removes a, b and c, which it created', async () => {
    const { dir, root } = await setup();
    const bad = join(dir, 'bad.spwc');
    const { path } = await makeSmallCheckpoint(dir, { kib: 64, name: 'good.spwc' });
    const bytes = await readFile(path);
    bytes[bytes.length - 10]! ^= 0xff;
    await writeFile(bad, bytes);
    const run = await runCli([
      'recover',
      bad,
      '--out',
      join(dir, 'a', 'b', 'c'),
      '--spill-root',
      root,
    ]);
    expect(run.code, run.stderr).toBe(2);
    expect((await readdir(dir)).sort()).toEqual(['bad.spwc', 'good.spwc', 'spill']);
    expect(await spillLeftovers(root)).toEqual([]);
  });
});
