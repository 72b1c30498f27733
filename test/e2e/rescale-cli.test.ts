/**
 * `spillway checkpoint make --records N --subtasks S` and `spillway recover --rescale I/P[/M]
 * [--key-bytes K]` end to end (DESIGN.md §4): recovering as every I of P gives each record
 * exactly once, the counts are in the JSON, and bad --rescale usage exits 2 with one line.
 */
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRecords } from '../helpers/rescale-reference.ts';
import { lines, listTree, makeTempRoot, runCli, runRecover, spillLeftovers } from './harness.ts';

async function make(dir: string): Promise<string> {
  const file = join(dir, 'v2.spwc');
  const run = await runCli([
    'checkpoint',
    'make',
    '--out',
    file,
    '--records',
    '300',
    '--subtasks',
    '4',
    '--gates',
    '1',
    '--channels',
    '3',
    '--json',
  ]);
  expect(run.code, run.stderr).toBe(0);
  expect(JSON.parse(run.stdout)).toMatchObject({ records: 300, version: 2, channels: 3 });
  return file;
}

/** Every record body in the channel files of `out`, as hex. */
async function recordsIn(out: string): Promise<string[]> {
  const names = (await readdir(out)).filter((n) => n.endsWith('.bin'));
  const all: string[] = [];
  for (const n of names) {
    for (const r of parseRecords(await readFile(join(out, n)))) all.push(r.toString('hex'));
  }
  return all;
}

describe('spillway recover --rescale', () => {
  it('as every subtask of 3 (max parallelism 64, 4-byte keys): each of the 300 records exactly once', async () => {
    const dir = await makeTempRoot();
    const root = join(dir, 'root');
    await mkdir(root);
    const file = await make(dir);
    const together: string[] = [];
    for (const i of [0, 1, 2]) {
      const out = join(dir, `out-${i}`);
      const run = await runRecover(file, out, root, [
        '--rescale',
        `${i}/3/64`,
        '--key-bytes',
        '4',
        '--json',
      ]);
      expect(run.code, run.stderr).toBe(0);
      const result = JSON.parse(run.stdout) as { records: { read: number; kept: number } };
      expect(result.records.read).toBe(300);
      const mine = await recordsIn(out);
      expect(mine.length).toBe(result.records.kept);
      expect(await listTree(out)).toHaveLength(3); // every channel, even if nothing survived
      together.push(...mine);
    }
    expect(together.length).toBe(300);
    expect(new Set(together).size).toBe(300);
    expect(await spillLeftovers(root)).toEqual([]);
  });

  const usage: [string, string[], RegExp][] = [
    ['I ≥ P', ['--rescale', '2/2'], /subtask must be an integer in 0\.\.1/],
    ['not I/P', ['--rescale', 'half'], /--rescale must be I\/P, I\/P\/M or P/],
    ['M < P', ['--rescale', '0/4/2'], /maxParallelism must be an integer in 4\.\.32768/],
    ['--key-bytes alone', ['--key-bytes', '4'], /--key-bytes needs --rescale/],
  ];
  for (const [name, args, message] of usage) {
    it(`usage: ${name} exits 2 with one line, nothing written`, async () => {
      const dir = await makeTempRoot();
      const file = await make(dir);
      const out = join(dir, 'out');
      const run = await runCli(['recover', file, '--out', out, ...args]);
      expect(run.code).toBe(2);
      expect(lines(run.stderr)).toHaveLength(1);
      expect(run.stderr).toMatch(message);
      expect(await listTree(out)).toEqual([]);
    });
  }

  it('a v1 checkpoint is not a record checkpoint: exit 2, one line saying rescaling needs v2 (not "corrupt"), text and JSON, nothing written', async () => {
    const dir = await makeTempRoot();
    const file = join(dir, 'v1.spwc');
    const made = await runCli(['checkpoint', 'make', '--out', file, '--mb', '1']);
    expect(made.code, made.stderr).toBe(0);
    const out = join(dir, 'out');
    const root = join(dir, 'root');
    await mkdir(root);
    const text = await runRecover(file, out, root, ['--rescale', '0/2']);
    expect(text.code).toBe(2);
    expect(lines(text.stderr)).toHaveLength(1);
    expect(text.stderr).toContain('not a record checkpoint (v1; rescaling needs v2');
    expect(text.stderr).not.toMatch(/corrupt|negative record length/);
    const json = await runRecover(file, out, root, ['--rescale', '0/2', '--json']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout).error.message).toContain(
      'not a record checkpoint (v1; rescaling needs v2',
    );
    expect(await listTree(out)).toEqual([]);
    expect(await spillLeftovers(root)).toEqual([]);
  });
});
