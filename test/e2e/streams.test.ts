/**
 * Every output stream (docs/cli.md): a full device on stdout or stderr (`> /dev/full`,
 * `2> /dev/full`) or a stdout closed before the command writes never gives a stack trace and
 * never changes the exit code — the recovery's result stands, its outputs are published and the
 * spill root is clean. Real /dev/full, real pipes.
 */
import { spawn } from 'node:child_process';
import { openSync, closeSync, existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { channelBytes, suiteCheckpoint } from '../helpers/checkpoints.ts';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { readFlinkFixture, FLINK_FIXTURES_DIR } from '../helpers/flink-expected.ts';
import { expectByteExact, spillLeftovers, spillwayBin } from './harness.ts';

const input = suiteCheckpoint((dir) =>
  makeCheckpoint({ out: join(dir, 'in.spwc'), gates: 2, channels: 3, mb: 1, seed: 4 }),
);

type Where = 'full' | 'pipe' | 'closed';

/** Runs `spillway args` with stdout and stderr each a pipe, /dev/full, or a pipe closed at once. */
function runWith(args: string[], out: Where, err: Where) {
  const full = openSync('/dev/full', 'w');
  const child = spawn(spillwayBin, args, {
    stdio: ['ignore', out === 'full' ? full : 'pipe', err === 'full' ? full : 'pipe'],
    env: { ...process.env, SPILLWAY_SPILL_ROOT: '' },
  });
  closeSync(full);
  let stdout = '';
  let stderr = '';
  if (out === 'closed') child.stdout!.destroy();
  else child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  if (err === 'closed') child.stderr!.destroy();
  else child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
}

async function setup() {
  const dir = await makeTempRoot();
  const root = join(dir, 'spill');
  await mkdir(root);
  return { out: join(dir, 'out'), root };
}

const cases: [string, Where, Where][] = [
  ['`--json > /dev/full`', 'full', 'pipe'],
  ['`2> /dev/full`', 'pipe', 'full'],
  ['`> /dev/full 2> /dev/full`', 'full', 'full'],
  ['a stdout closed before the first write (EPIPE)', 'closed', 'pipe'],
  ['a stdout and a stderr both closed (EPIPE)', 'closed', 'closed'],
];

describe('every output stream', () => {
  it.each(cases)(
    '%s: exit 0, no stack trace, outputs published, spill root clean',
    async (_name, out, err) => {
      expect(existsSync('/dev/full')).toBe(true);
      const { out: dir, root } = await setup();
      const run = await runWith(
        ['recover', input.path, '--out', dir, '--spill-root', root, '--json'],
        out,
        err,
      );
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      await expectByteExact(dir, await channelBytes(input.path));
      expect(await spillLeftovers(root)).toEqual([]);
    },
  );

  it('`2> /dev/full` on a failed run keeps its exit code (2 for a missing checkpoint, 1 never)', async () => {
    const { out, root } = await setup();
    const run = await runWith(
      ['recover', join(root, 'missing.spwc'), '--out', out, '--spill-root', root],
      'pipe',
      'full',
    );
    expect(run.code).toBe(2);
    expect(await spillLeftovers(root)).toEqual([]);
  });

  it('`--json > /dev/full` on a usage error keeps exit 2', async () => {
    const run = await runWith(['recover', '--json'], 'full', 'full');
    expect(run.code).toBe(2);
  });
});

describe('flink records: its stdout is its result', () => {
  const fixture = readFlinkFixture(join(FLINK_FIXTURES_DIR, '1.20.5-file'));
  const args = [
    'flink',
    'records',
    fixture.checkpoint,
    '--operator',
    'b04c65efe1b1b80162da73517c40e7de',
    '--subtask',
    '0',
  ];

  it('`> /dev/full` is exit 1 with one line naming ENOSPC, never a truncated result with exit 0', async () => {
    const run = await runWith(args, 'full', 'pipe');
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('cannot write the records to stdout: ENOSPC');
  });

  it('a stdout closed by its reader (`| head`, EPIPE) ends the read: exit 0, no stack trace', async () => {
    const run = await runWith(args, 'closed', 'pipe');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
  });

  it('a whole stdout: every element, exit 0', async () => {
    const run = await runWith(args, 'pipe', 'pipe');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n').length).toBeGreaterThan(10);
  });
});
