/**
 * G10 publishing as one step, through the real CLI in child processes with real signals: a
 * signal at any point of a 20,000-file publish (with and without --overwrite) leaves the output
 * dir byte-identical to before (exit 130/143) or complete (exit 0, past the commit point) —
 * never a mix; `kill -9` mid-publish loses no user file (the next run restores them, or
 * completes a publish past its commit point); a directory under a channel file's name is
 * refused and untouched; a live staging dir of a run in another pid namespace is never
 * removed. The signal is sent by the child itself at the Nth move into the dir
 * (test/fixtures/cli-signal-at-step.ts), so every point is reached on purpose.
 */
import { statSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oneByteOf, writeOneByteChannels } from '../../bench/channels.ts';
import { boot8, bootId, deadPid, spawnFixture } from '../helpers/processes.ts';
import { makeTempRoot, removeDir, tempDir } from '../helpers/temp.ts';
import { lines, listTree, runCli, spillLeftovers } from './harness.ts';

const GATES = 5000;
const PER_GATE = 4;
const FILES = GATES * PER_GATE;
let dir = '';
let checkpoint = '';

beforeAll(async () => {
  dir = await tempDir();
  checkpoint = join(dir, 'many.spwc');
  await writeOneByteChannels(checkpoint, GATES, PER_GATE);
}, 300_000);
afterAll(() => removeDir(dir));

type Snapshot = Map<string, string>;

/** Runs `fn` over `items`, 32 at a time: 20,000 files one by one is minutes on a loaded box. */
async function inParallel<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: 32 }, worker));
}

/** Every entry of `out` (recursively) with its content (files) or kind: what "as found" means. */
async function snapshot(out: string): Promise<Snapshot> {
  const result: Snapshot = new Map();
  await inParallel(await listTree(out), async (p) => {
    const st = statSync(join(out, p), { throwIfNoEntry: false });
    result.set(p, st?.isFile() ? (await readFile(join(out, p))).toString('hex') : 'dir');
  });
  return result;
}

/** What a complete run leaves: `before`'s other files and one new file per channel. */
function completed(before: Snapshot): Snapshot {
  const result = new Map([...before].filter(([p]) => !/^gate-\d+-channel-\d+\.bin$/.test(p)));
  for (let g = 0; g < GATES; g++) {
    for (let c = 0; c < PER_GATE; c++) {
      result.set(`gate-${g}-channel-${c}.bin`, Buffer.from([oneByteOf(g, c)]).toString('hex'));
    }
  }
  return result;
}

function same(a: Snapshot, b: Snapshot): boolean {
  return a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);
}

async function setup(originals: boolean) {
  const base = await makeTempRoot();
  const out = join(base, 'out');
  const root = join(base, 'spill');
  await mkdir(out);
  await mkdir(root);
  await writeFile(join(out, 'notes.txt'), 'the user keeps this');
  if (originals) {
    const keys = Array.from({ length: FILES }, (_, k) => [k >> 2, k & 3] as const);
    await inParallel(keys, ([g, c]) =>
      writeFile(join(out, `gate-${g}-channel-${c}.bin`), `original ${g}/${c}`),
    );
  }
  return { out, root, before: await snapshot(out) };
}

async function recoverSignalledAt(
  signal: string,
  ops: string,
  step: number,
  out: string,
  root: string,
  extra: string[] = [],
) {
  const child = spawnFixture('cli-signal-at-step.ts', [
    signal,
    ops,
    String(step),
    'recover',
    checkpoint,
    '--out',
    out,
    '--spill-root',
    root,
    ...extra,
  ]);
  const { code, signal: by } = await child.exited;
  const settle = /settle-ms=(\d+)/.exec(child.stderr);
  return { code, by, stderr: child.stderr, settleMs: settle ? Number(settle[1]) : undefined };
}

describe('G10 publishing is one step', () => {
  // Moves without --overwrite: one link per file, then the commit rename (step FILES).
  const plain = [0, 7_000, FILES - 1, FILES];
  it.each(plain)(
    'G10 SIGTERM at move %i of a 20,000-file publish: the dir is as found (143) or complete (0), never a mix',
    async (step) => {
      const { out, root, before } = await setup(false);
      const run = await recoverSignalledAt('SIGTERM', 'link,rename', step, out, root);
      const after = await snapshot(out);
      if (run.code === 0) expect(same(after, completed(before)), run.stderr).toBe(true);
      else {
        expect(run.code, run.stderr).toBe(143);
        expect(same(after, before), run.stderr).toBe(true);
      }
      // Well before the end the cancel must win; at the last moves the commit may come first.
      if (step <= FILES / 2) expect(run.code).toBe(143);
      expect(await spillLeftovers(root)).toEqual([]);
      console.log(
        `G10 publish, SIGTERM at move ${step}: exit ${run.code}, settled in ${run.settleMs} ms`,
      );
    },
    300_000,
  );

  // Moves with --overwrite: per file a rename aside and a link, then the commit rename.
  const overwrite = [1, 2, 15_001, 2 * FILES - 1, 2 * FILES];
  it.each(overwrite)(
    'G10 SIGTERM at move %i of a 20,000-file --overwrite publish: the originals all back (143) or all replaced (0), never a mix',
    async (step) => {
      const { out, root, before } = await setup(true);
      const run = await recoverSignalledAt('SIGTERM', 'link,rename', step, out, root, [
        '--overwrite',
      ]);
      const after = await snapshot(out);
      if (run.code === 0) expect(same(after, completed(before)), run.stderr).toBe(true);
      else {
        expect(run.code, run.stderr).toBe(143);
        expect(same(after, before), run.stderr).toBe(true);
      }
      if (step <= FILES) expect(run.code).toBe(143);
      expect(await spillLeftovers(root)).toEqual([]);
      console.log(
        `G10 --overwrite publish, SIGTERM at move ${step}: exit ${run.code}, settled in ${run.settleMs} ms`,
      );
    },
    300_000,
  );

  // Without a fs hook the publish moves files synchronously, 256 per turn of the event loop:
  // a signal must still get in between turns and undo every move.
  it.each([false, true])(
    'G10 SIGTERM mid-publish on the synchronous batched path (overwrite %s): the dir is as found, exit 143',
    async (overwriting) => {
      const { out, root, before } = await setup(overwriting);
      const child = spawnFixture('cli-signal-at-publish.ts', [
        'SIGTERM',
        'recover',
        checkpoint,
        '--out',
        out,
        '--spill-root',
        root,
        ...(overwriting ? ['--overwrite'] : []),
      ]);
      const { code } = await child.exited;
      expect(child.stderr).toContain('signalled-at=publishing');
      expect(code, child.stderr).toBe(143);
      expect(same(await snapshot(out), before), child.stderr).toBe(true);
      expect(await spillLeftovers(root)).toEqual([]);
    },
    300_000,
  );

  it('G10 kill -9 mid --overwrite publish, then a new run: every original is restored, no user file lost', async () => {
    const { out, root, before } = await setup(true);
    const killed = await recoverSignalledAt('SIGKILL', 'link,rename', 15_001, out, root, [
      '--overwrite',
    ]);
    expect(killed.by).toBe('SIGKILL');
    // Half done: some originals are parked in the staging dir, some new files in place.
    expect(same(await snapshot(out), before)).toBe(false);
    // Without --overwrite the new run restores, then refuses the originals it brought back.
    const next = await runCli(['recover', checkpoint, '--out', out, '--spill-root', root]);
    expect(next.code, next.stderr).toBe(2);
    expect(next.stderr).toMatch(/restored .* as it was before an interrupted publish/);
    expect(same(await snapshot(out), before)).toBe(true);
    // The killed run's owner dir is the sweep's (G7): the refused run never opened the root.
    expect((await runCli(['sweep', '--spill-root', root])).code).toBe(0);
    expect(await spillLeftovers(root)).toEqual([]);
  }, 300_000);

  it('G10 kill -9 past the commit point, then a new run: the publish is completed, not undone', async () => {
    const { out, root, before } = await setup(true);
    // The first removal under the dir after the commit: the staging dir's.
    const killed = await recoverSignalledAt('SIGKILL', 'rm', 0, out, root, ['--overwrite']);
    expect(killed.by).toBe('SIGKILL');
    const next = await runCli(['recover', checkpoint, '--out', out, '--spill-root', root]);
    expect(next.code, next.stderr).toBe(2);
    expect(next.stderr).toMatch(/completed the publish of a run that ended past its commit point/);
    expect(same(await snapshot(out), completed(before))).toBe(true);
  }, 300_000);
});

describe('G10 nothing but regular files this run created is removed', () => {
  it('G10 a directory named like a channel file (with files inside) is refused with --overwrite (exit 2, one line) and untouched', async () => {
    const base = await makeTempRoot();
    const out = join(base, 'out');
    const root = join(base, 'spill');
    await mkdir(join(out, 'gate-0-channel-0.bin'), { recursive: true });
    await writeFile(join(out, 'gate-0-channel-0.bin', 'precious.txt'), 'mine');
    await mkdir(root);
    const before = await snapshot(out);
    for (const extra of [['--overwrite'], []]) {
      const run = await runCli([
        'recover',
        checkpoint,
        '--out',
        out,
        '--spill-root',
        root,
        ...extra,
      ]);
      expect(run.code, run.stderr).toBe(2);
      expect(lines(run.stderr)).toHaveLength(1);
      expect(run.stderr).toContain('gate-0-channel-0.bin');
      expect(same(await snapshot(out), before)).toBe(true);
    }
  }, 300_000);

  it('G10 a live staging dir of a run in another pid namespace is not removed (judged by its owner.json, not its name)', async () => {
    const base = await makeTempRoot();
    const out = join(base, 'out');
    const root = join(base, 'spill');
    await mkdir(root);
    const pid = deadPid();
    const staging = join(out, `.spillway-staging-${boot8}-${pid}-1-0123abcd`);
    await mkdir(staging, { recursive: true, mode: 0o700 });
    const ns = statSync('/proc/self/ns/pid').ino;
    await writeFile(
      join(staging, 'owner.json'),
      JSON.stringify({
        pid,
        bootId,
        startTicks: 1,
        version: '0.1.0',
        createdAt: '',
        pidNamespace: ns + 1,
      }),
    );
    await writeFile(join(staging, 'gate-9-channel-9.bin'), 'being written by the other run');
    const run = await runCli(['recover', checkpoint, '--out', out, '--spill-root', root]);
    expect(run.code, run.stderr).toBe(0);
    expect((await readdir(staging)).sort()).toEqual(['gate-9-channel-9.bin', 'owner.json']);
  }, 300_000);
});
