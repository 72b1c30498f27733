/**
 * G7 crash safety with real processes: `kill -9` leaves a dead owner's files, and
 * `spillway sweep` or the next process opening the same spill root removes them; a live
 * recovery beside a sweep keeps its files and finishes byte-exact; the sweeper judges owners by
 * boot id + pid + start time, never follows symlinks, survives garbage markers; every spill
 * directory is private (0700).
 *
 * Children are stopped at exact points: the CLI by watching its files appear, the fixture
 * (test/fixtures/recover-child.ts) by pausing in the fs seam hook or its channel consumer.
 */
import { existsSync } from 'node:fs';
import {
  lstat,
  mkdir,
  readdir,
  readFile,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { channelBytes, suiteCheckpoint, vector } from '../helpers/checkpoints.ts';
import {
  boot8,
  bootId,
  deadPid,
  nextMessage,
  spawnFixture,
  spawnTracked,
  startTicksOf,
  waitFor,
  type Child,
} from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import {
  expectByteExact,
  lines,
  holders,
  ownerDirs,
  runCli,
  spawnCli,
  spillFiles,
  spillLeftovers,
  plantOwner,
  spillwayBin,
  stagedChannelFile,
} from './harness.ts';

interface SweepJson {
  swept: string[];
  kept: string[];
  errors: { path: string; message: string }[];
}

interface Paused {
  event: 'paused';
  phase: 'fetch' | 'drain' | 'checkpoint';
  taskDir: string;
  ownerDir: string;
}

/** 32 MiB over 2 × 4 channels: with 2 MiB spill files, 10+ files and ~0.2 s per stage. */
const input = suiteCheckpoint((dir) =>
  makeCheckpoint({ out: join(dir, 'cp32.spwc'), gates: 2, channels: 4, mb: 32, seed: 11 }),
);

async function newRoot(): Promise<{ dir: string; root: string; out: string }> {
  const dir = await makeTempRoot();
  const root = join(dir, 'root');
  await mkdir(root);
  return { dir, root, out: join(dir, 'out') };
}

async function sweep(root: string): Promise<SweepJson> {
  const run = await runCli(['sweep', '--spill-root', root, '--json']);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stderr).not.toContain('    at ');
  return JSON.parse(run.stdout) as SweepJson;
}

async function sigkill(child: Child): Promise<void> {
  child.proc.kill('SIGKILL');
  // Reaped once 'exit' fired: only then is the pid provably gone for the sweeper.
  expect((await child.exited).signal).toBe('SIGKILL');
}

/** What a dead recovery must have left: its owner dir, marker, task dir and spill files. */
async function expectDeadOwnerFiles(root: string): Promise<string> {
  const owners = await ownerDirs(root);
  expect(owners).toHaveLength(1);
  const owner = owners[0]!;
  expect(existsSync(join(owner, 'owner.json'))).toBe(true);
  expect((await readdir(owner)).filter((n) => n.startsWith('task-'))).toHaveLength(1);
  expect((await spillFiles(root)).length).toBeGreaterThan(0);
  return owner;
}

const mode = async (path: string): Promise<number> => (await lstat(path)).mode & 0o777;

describe('G7 kill -9 leaves files that a sweep removes', () => {
  it('G7 kill -9 during fetch leaves spill files; spillway sweep removes them all', async () => {
    const { root, out } = await newRoot();
    const child = spawnCli([
      'recover',
      input.path,
      '--out',
      out,
      '--spill-root',
      root,
      '--max-spill-file-bytes',
      '2M',
    ]);
    await waitFor(
      'the fourth spill file',
      async () => (await spillFiles(root)).find((p) => p.endsWith('spill-segment-3.bin')),
      { child },
    );
    await sigkill(child);
    const owner = await expectDeadOwnerFiles(root);

    const report = await sweep(root);
    expect(report.swept.length).toBeGreaterThanOrEqual(1);
    expect(report.swept).toContain(owner);
    expect(report.errors).toEqual([]);
    expect(await spillLeftovers(root)).toEqual([]);
  });

  it('G7 kill -9 during drain leaves spill files; spillway sweep removes them all', async () => {
    const { dir, root, out } = await newRoot();
    const child = spawnCli([
      'recover',
      input.path,
      '--out',
      out,
      '--spill-root',
      root,
      '--max-spill-file-bytes',
      '2M',
    ]);
    await waitFor('the first staged channel file', () => stagedChannelFile(out), { child });
    await sigkill(child);
    const owner = await expectDeadOwnerFiles(root);

    const report = await sweep(root);
    expect(report.swept).toContain(owner);
    expect(await spillLeftovers(root)).toEqual([]);
    // G10: the new output dir never appeared; its holder stays beside it until the next run
    // into a new dir there (or into that dir) judges it dead and removes it.
    expect(await readdir(dir)).not.toContain('out');
    expect(await holders(dir)).toHaveLength(1);
    const next = await runCli([
      'recover',
      input.path,
      '--out',
      join(dir, 'again'),
      '--spill-root',
      root,
    ]);
    expect(next.code, next.stderr).toBe(0);
    expect(await holders(dir)).toEqual([]);
  });

  it('G7 kill -9 while a checkpoint remainder is being written leaves spill files; spillway sweep removes them all', async () => {
    const { dir, root, out } = await newRoot();
    const remainder = join(dir, 'cp-1.spwc');
    const child = spawnFixture('recover-child.ts', [
      JSON.stringify({
        checkpoint: input.path,
        spillRoot: root,
        out,
        maxSpillFileBytes: 2 * 1024 * 1024,
        pauseDrain: true,
        checkpointOut: remainder,
      }),
    ]);
    const paused = await nextMessage<Paused>(child, (m) => m.phase === 'checkpoint');
    // Mid-write: the remainder is staged in the task dir with its first megabyte, more is to
    // come; nothing is published at its destination yet.
    const staged = (await readdir(paused.taskDir)).filter((f) => f.endsWith('cp-1.spwc.partial'));
    expect(staged).toHaveLength(1);
    expect((await stat(join(paused.taskDir, staged[0]!))).size).toBeGreaterThan(0);
    expect(existsSync(remainder)).toBe(false);
    expect(child.stdout).not.toContain('"event":"checkpoint"');
    await sigkill(child);
    const owner = await expectDeadOwnerFiles(root);
    expect(owner).toBe(paused.ownerDir);
    expect(existsSync(paused.taskDir)).toBe(true);

    const report = await sweep(root);
    expect(report.swept).toEqual([owner]);
    expect(await spillLeftovers(root)).toEqual([]);
    // The sweep took the half-written remainder with the task dir; no truncated checkpoint.
    expect(existsSync(remainder)).toBe(false);
  });

  it('G7 the next spillway recover in the same spill root sweeps the dead owner dir at start-up', async () => {
    const { dir, root, out } = await newRoot();
    const child = spawnCli(['recover', input.path, '--out', out, '--spill-root', root]);
    await waitFor(
      'a spill file',
      async () => (await spillFiles(root)).find((p) => p.endsWith('spill-segment-0.bin')),
      { child },
    );
    await sigkill(child);
    const owner = await expectDeadOwnerFiles(root);

    // SPILLWAY_DEBUG shows the start-up sweep's decisions on stderr.
    const next = await runCli(
      ['recover', vector('tiny.spwc'), '--out', join(dir, 'out2'), '--spill-root', root, '--json'],
      { SPILLWAY_DEBUG: '1' },
    );
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).toContain(`swept ${owner}`);
    expect(existsSync(owner)).toBe(false);
    expect(await spillLeftovers(root)).toEqual([]);
  });
});

describe('G7 a live recovery beside sweeps', () => {
  it('G7 a live recovery keeps its task dir through every sweep and finishes byte-exact', async () => {
    const { root, out } = await newRoot();
    const child = spawnFixture('recover-child.ts', [
      JSON.stringify({
        checkpoint: input.path,
        spillRoot: root,
        out,
        maxSpillFileBytes: 2 * 1024 * 1024,
        pauseAtSpillFile: 2,
        pauseDrain: true,
      }),
    ]);
    const expected = await channelBytes(input.path);

    const sweepTwice = async (paused: Paused): Promise<void> => {
      const before = await readdir(paused.taskDir);
      expect(before.length).toBeGreaterThan(0);
      for (let i = 0; i < 2; i++) {
        const report = await sweep(root);
        expect(report.kept).toContain(paused.ownerDir);
        expect(report.swept).not.toContain(paused.ownerDir);
        expect(report.errors).toEqual([]);
        expect((await readdir(paused.taskDir)).sort()).toEqual(before.sort());
      }
    };

    const inFetch = await nextMessage<Paused>(child, (m) => m.phase === 'fetch');
    // A dead owner beside it (planted now: the child's start-up sweep would have taken it), so
    // the sweeps are seen to act, not to idle.
    const dead = await plantOwner(root, { pid: deadPid(), startTicks: 1 });
    await sweepTwice(inFetch);
    expect(existsSync(dead)).toBe(false);
    child.proc.stdin!.write('go\n');

    const inDrain = await nextMessage<Paused>(child, (m) => m.phase === 'drain');
    expect(inDrain.taskDir).toBe(inFetch.taskDir);
    await sweepTwice(inDrain);
    child.proc.stdin!.write('go\n');

    const done = await nextMessage<{ report: { spillFiles: number } }>(
      child,
      (m) => m.event === 'done' || m.event === 'failed',
    );
    expect(done.report?.spillFiles, child.stdout).toBeGreaterThan(2);
    expect((await child.exited).code).toBe(0);
    await expectByteExact(out, expected);
    expect(await spillLeftovers(root)).toEqual([]);
  });
});

describe('G7 what the sweeper removes and keeps', () => {
  it('G7 an owner.json with a live pid but another start time is swept (pid reused)', async () => {
    const { root } = await newRoot();
    // This test process is alive; an owner dir naming its pid with another start time is not it.
    const reused = await plantOwner(root, {
      pid: process.pid,
      startTicks: startTicksOf(process.pid) + 1,
    });
    const report = await sweep(root);
    expect(report.swept).toEqual([reused]);
    expect(await spillLeftovers(root)).toEqual([]);
  });

  it("G7 an owner dir with the sweeping process's own identity is kept", async () => {
    const { root } = await newRoot();
    // The shell waits for a line, then execs the CLI in place: same pid, same start time, so
    // the owner dir can be planted with the sweeper's identity before the sweeper runs.
    const child = spawnTracked('/bin/sh', [
      '-c',
      'read line; exec "$0" sweep --spill-root "$1" --json',
      spillwayBin,
      root,
    ]);
    const pid = child.proc.pid!;
    const mine = await plantOwner(root, { pid, startTicks: startTicksOf(pid) });
    child.proc.stdin!.end('go\n');
    expect((await child.exited).code, child.stderr).toBe(0);
    const report = JSON.parse(child.stdout) as SweepJson;
    expect(report.kept).toEqual([mine]);
    expect(report.swept).toEqual([]);
    expect(existsSync(join(mine, 'task-planted-abcdef', 'spill-segment-0.bin'))).toBe(true);
  });

  it('G7 G9 a symlink planted in the spill root is not followed and its target survives', async () => {
    const { dir, root } = await newRoot();
    const outside = join(dir, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'precious.txt'), 'keep me');
    // A dead owner dir whose task dir holds a link to the outside dir ...
    const dead = await plantOwner(root, { pid: deadPid(), startTicks: 1 });
    await symlink(outside, join(dead, 'task-planted-abcdef', 'link-out'));
    // ... and an "owner dir" that is itself a link to it, named for a dead owner.
    const linked = join(root, 'spillway', `owner-${boot8}-${deadPid()}-2`);
    await symlink(outside, linked);

    const report = await sweep(root);
    expect(report.swept).toEqual([dead]);
    expect(report.kept).toEqual([linked]);
    expect(report.errors).toEqual([]);
    expect((await lstat(linked)).isSymbolicLink()).toBe(true);
    expect(await readdir(outside)).toEqual(['precious.txt']);
    expect(await readFile(join(outside, 'precious.txt'), 'utf8')).toBe('keep me');
  });

  it('G7 a garbage owner.json is judged with a logged decision and no crash', async () => {
    const { root } = await newRoot();
    const garbage = '\u0000{{not json at all\u00ff';
    // Old enough to be judged by its name (a dead pid): swept. Young: may still be being
    // written by a live owner: kept.
    const old = await plantOwner(root, {
      pid: deadPid(),
      startTicks: 3,
      marker: garbage,
      old: true,
    });
    const young = await plantOwner(root, { pid: deadPid(), startTicks: 4, marker: garbage });

    const run = await runCli(['sweep', '--spill-root', root]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toContain('    at ');
    const log = lines(run.stderr);
    expect(log.find((l) => l.includes(`swept ${old}`))).toMatch(
      /not valid JSON.*judged by its name/,
    );
    expect(log.find((l) => l.includes(`kept ${young}`))).toMatch(/not valid JSON.*may still be/);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(young)).toBe(true);
  });

  it('G7 spill dirs are private: spillway/, the owner dir and a live task dir are 0700', async () => {
    const { root, out } = await newRoot();
    const child = spawnFixture('recover-child.ts', [
      JSON.stringify({
        checkpoint: input.path,
        spillRoot: root,
        out,
        maxSpillFileBytes: 2 * 1024 * 1024,
        pauseAtSpillFile: 1,
      }),
    ]);
    const paused = await nextMessage<Paused>(child, (m) => m.phase === 'fetch');
    expect(await mode(join(root, 'spillway'))).toBe(0o700);
    expect(await mode(paused.ownerDir)).toBe(0o700);
    expect(await mode(paused.taskDir)).toBe(0o700);
    expect(await mode(join(paused.ownerDir, 'owner.json'))).toBe(0o600);
    expect(await mode(join(paused.taskDir, 'spill-segment-0.bin'))).toBe(0o600);
    child.proc.stdin!.write('go\n');
    expect((await child.exited).code, child.stderr).toBe(0);
    expect(await spillLeftovers(root)).toEqual([]);
  });
});
