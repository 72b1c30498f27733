/**
 * `spillway recover` end to end (DESIGN §4): byte-exact output through many spill
 * files, an empty spill root afterwards, and the usage contract (exit 2, one line, --help 0).
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointWriter } from '../../src/services/formats/spwc/writer.ts';
import { readCheckpoint } from '../../src/services/formats/spwc/reader.ts';
import { channelBytes, vector } from '../helpers/checkpoints.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { expectByteExact, lines, runCli, spillLeftovers } from './harness.ts';

describe('spillway recover', () => {
  it('G1 G6 recovers 48 MiB over 18 channels byte-exact through ≥ 10 spill files and leaves the spill root empty', async () => {
    const dir = await makeTempRoot();
    const checkpoint = join(dir, 'cp48.spwc');
    const root = join(dir, 'root');
    const out = join(dir, 'out');
    const made = await runCli([
      'checkpoint',
      'make',
      '--out',
      checkpoint,
      '--gates',
      '3',
      '--channels',
      '6',
      '--mb',
      '48',
      '--json',
    ]);
    expect(made.code, made.stderr).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({ channels: 18, payloadBytes: 48 * 1024 ** 2 });
    await mkdir(root);

    // Computed independently of the recovery: the reader, entry by entry, in file order.
    const expected = await channelBytes(checkpoint);
    expect(expected.size).toBe(18);
    const zeroLengthEntries = await countZeroLengthEntries(checkpoint);
    expect(zeroLengthEntries, 'the checkpoint must hold zero-length entries').toBeGreaterThan(0);

    const run = await runCli([
      'recover',
      checkpoint,
      '--out',
      out,
      '--spill-root',
      root,
      '--max-spill-file-bytes',
      '4M',
      '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as Record<string, number>;
    expect(report.spillFiles).toBeGreaterThanOrEqual(10);
    expect(report.channels).toBe(18);
    expect(report.bytes).toBe(48 * 1024 ** 2);
    await expectByteExact(out, expected);
    // No owner dir, no task dir, no spill file: only the shared `spillway/` dir may remain.
    expect(await spillLeftovers(root)).toEqual([]);
  });

  it('recovers the tiny vector to its expected files (an empty entry in between)', async () => {
    const dir = await makeTempRoot();
    const out = join(dir, 'out');
    const root = join(dir, 'root');
    await mkdir(root);
    const run = await runCli(['recover', vector('tiny.spwc'), '--out', out, '--spill-root', root]);
    expect(run.code, run.stderr).toBe(0);
    const expected = await channelBytes(vector('tiny.spwc'));
    expect(expected.get('gate-0-channel-1')?.toString()).toBe('ABCDE');
    expect(expected.get('gate-7-channel-3')?.toString()).toBe('xyz');
    await expectByteExact(out, expected);
    expect(await spillLeftovers(root)).toEqual([]);
  });
});

describe('spillway recover edge shapes', () => {
  it('G6 a channel of only zero-length entries gets an empty output file', async () => {
    const dir = await makeTempRoot();
    const root = join(dir, 'root');
    await mkdir(root);
    const checkpoint = join(dir, 'empties.spwc');
    const writer = await CheckpointWriter.create(checkpoint);
    await writer.append(0, 0, Buffer.alloc(0));
    await writer.append(3, 9, Buffer.from('data'));
    await writer.append(0, 0, Buffer.alloc(0));
    await writer.append(3, 9, Buffer.alloc(0));
    await writer.close();
    const out = join(dir, 'out');
    const run = await runCli(['recover', checkpoint, '--out', out, '--spill-root', root]);
    expect(run.code, run.stderr).toBe(0);
    const expected = await channelBytes(checkpoint);
    expect(expected.get('gate-0-channel-0')?.length).toBe(0);
    await expectByteExact(out, expected);
    expect(await spillLeftovers(root)).toEqual([]);
  });
});

describe('spillway usage', () => {
  const usageCases: [string, string[], RegExp][] = [
    ['missing --out', ['recover', vector('tiny.spwc')], /missing --out/],
    ['missing CHECKPOINT', ['recover', '--out', 'x'], /missing CHECKPOINT/],
    ['an unknown option', ['recover', vector('tiny.spwc'), '--out', 'x', '--bogus'], /--bogus/],
    ['an unknown command', ['frobnicate'], /unknown command 'frobnicate'/],
    ['an unknown checkpoint subcommand', ['checkpoint', 'bake'], /unknown subcommand 'bake'/],
    [
      'a bad --max-spill-file-bytes',
      ['recover', 'a', '--out', 'x', '--max-spill-file-bytes', '4Q'],
      /max-spill-file-bytes/,
    ],
  ];
  for (const [what, args, message] of usageCases) {
    it(`exits 2 with one line and no stack trace on ${what}`, async () => {
      const dir = await makeTempRoot();
      // Relative paths land in a temp dir, never in the repository.
      const run = await runCli(args.map((a) => (a === 'x' ? join(dir, 'x') : a)));
      expect(run.code).toBe(2);
      expect(lines(run.stderr)).toHaveLength(1);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).not.toContain('    at ');
      expect(run.stdout).toBe('');
      // A usage error creates nothing, not even the output dir.
      expect(await readdir(dir)).toEqual([]);
    });
  }

  it('exits 2 with one line naming the file when the checkpoint does not exist', async () => {
    const dir = await makeTempRoot();
    const missing = join(dir, 'nope.spwc');
    const root = join(dir, 'root');
    await mkdir(root);
    const run = await runCli(['recover', missing, '--out', join(dir, 'out'), '--spill-root', root]);
    expect(run.code).toBe(2);
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toContain(missing);
    expect(run.stderr).not.toContain('    at ');
    expect(await spillLeftovers(root)).toEqual([]);
    // The output dir the command created for nothing is gone again.
    expect(await readdir(dir)).toEqual(['root']);
  });

  it('exits 2 with one line when the checkpoint is a directory', async () => {
    const dir = await makeTempRoot();
    const run = await runCli(['recover', dir, '--out', join(dir, 'out'), '--spill-root', dir]);
    expect(run.code).toBe(2);
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toContain(`${dir}: is a directory, not a checkpoint file`);
    expect(await readdir(dir)).toEqual([]);
  });

  it('exits 2 with one line when --out is an existing file, and leaves the file alone', async () => {
    const dir = await makeTempRoot();
    const file = join(dir, 'taken');
    await writeFile(file, 'mine');
    const run = await runCli(['recover', vector('tiny.spwc'), '--out', file]);
    expect(run.code).toBe(2);
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toContain(`${file}: is not a directory`);
    expect(await readFile(file, 'utf8')).toBe('mine');
  });

  const helpCases: [string, string[], RegExp][] = [
    ['spillway --help', ['--help'], /^usage: spillway COMMAND/],
    ['spillway recover --help', ['recover', '--help'], /^usage: spillway recover CHECKPOINT/],
    ['spillway checkpoint --help', ['checkpoint', '--help'], /^usage: spillway checkpoint make/],
    [
      'spillway checkpoint make --help',
      ['checkpoint', 'make', '--help'],
      /^usage: spillway checkpoint make/,
    ],
    ['spillway sweep --help', ['sweep', '--help'], /^usage: spillway sweep/],
  ];
  for (const [what, args, usage] of helpCases) {
    it(`${what} prints the usage on stdout and exits 0`, async () => {
      const run = await runCli(args);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(usage);
      expect(run.stderr).toBe('');
    });
  }
});

async function countZeroLengthEntries(checkpoint: string): Promise<number> {
  let zero = 0;
  await readCheckpoint(checkpoint, {
    onEntry: (_g, _c, length) => void (length === 0 && zero++),
    onPayload: () => undefined,
  });
  return zero;
}
