/**
 * What the end-to-end suites share beyond the test kit (test/helpers/: child processes, polls,
 * temp dirs, each channel's expected bytes): run the real `bin/spillway`, check its outputs byte
 * for byte, and list what a run left behind.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { lstat, mkdir, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { expect } from 'vitest';
import {
  bootId,
  boot8,
  repoRoot,
  spawnTracked,
  waitFor,
  type Child,
} from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { makeSmallCheckpoint } from '../helpers/checkpoints.ts';

// The suites of test/inspector/ import these from here too.
export { makeTempRoot, repoRoot, spawnTracked, waitFor, type Child };

export const spillwayBin = join(repoRoot, 'bin', 'spillway');

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Starts `bin/spillway args` (the real CLI, through its shebang). */
export function spawnCli(args: string[], env?: NodeJS.ProcessEnv): Child {
  // SPILLWAY_SPILL_ROOT must not leak in from the developer's shell: every test names its root.
  return spawnTracked(spillwayBin, args, { env: { SPILLWAY_SPILL_ROOT: '', ...env } });
}

/** Runs `bin/spillway args` to its end. */
export async function runCli(args: string[], env?: NodeJS.ProcessEnv): Promise<Finished> {
  const child = spawnCli(args, env);
  child.proc.stdin!.end();
  const { code, signal } = await child.exited;
  return { code, signal, stdout: child.stdout, stderr: child.stderr };
}

/** Runs `spillway recover file --out out --spill-root root ...extra` to its end. */
export function runRecover(
  file: string,
  out: string,
  root: string,
  extra: string[] = [],
): Promise<Finished> {
  return runCli(['recover', file, '--out', out, '--spill-root', root, ...extra]);
}

/** Every path under `dir` (relative, sorted), without following symlinks; [] if it is gone. */
export async function listTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(d);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw e;
    }
    for (const name of names) {
      const p = join(d, name);
      out.push(relative(dir, p));
      if ((await lstat(p).catch(() => undefined))?.isDirectory()) await walk(p);
    }
  };
  await walk(dir);
  return out.sort();
}

/**
 * A channel file staged for `out` (relative to `out`'s parent): in a staging dir inside an
 * existing `out`, or in the holder beside a new one (`.spillway-new-…/tree/`).
 */
export async function stagedChannelFile(out: string): Promise<string | undefined> {
  const inside = (await listTree(out)).find((p) => /^\.spillway-staging-[^/]+\/gate-/.test(p));
  if (inside !== undefined) return join(basename(out), inside);
  const parent = await readdir(dirname(out)).catch(() => [] as string[]);
  for (const holder of parent.filter((n) => n.startsWith('.spillway-new-'))) {
    const staged = (await listTree(join(dirname(out), holder, 'tree'))).find((p) =>
      /(^|\/)(gate|partition)-/.test(p),
    );
    if (staged !== undefined) return join(holder, 'tree', staged);
  }
  return undefined;
}

/** The holders of new output dirs (`.spillway-new-…`) in `dir`. */
export async function holders(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [] as string[])).filter((n) =>
    n.startsWith('.spillway-new-'),
  );
}

/** What a spill root holds of any process: owner dirs, task dirs, spill files, swept-* dirs. */
export async function spillLeftovers(root: string): Promise<string[]> {
  return (await listTree(root)).filter((p) => p !== 'spillway');
}

/** The names of spill files under `root` (any depth). */
export async function spillFiles(root: string): Promise<string[]> {
  return (await listTree(root)).filter((p) => /spill-segment-\d+\.bin$/.test(p));
}

/** The owner dirs under `<root>/spillway`. */
export async function ownerDirs(root: string): Promise<string[]> {
  const names = await readdir(join(root, 'spillway')).catch(() => [] as string[]);
  return names.filter((n) => n.startsWith('owner-')).map((n) => join(root, 'spillway', n));
}

/**
 * Asserts that `outDir` holds exactly one `<channel>.bin` per channel of `expected`, each equal
 * byte for byte; a mismatch names the file and the first differing offset.
 */
export async function expectByteExact(
  outDir: string,
  expected: Map<string, Buffer>,
): Promise<void> {
  const files = (await readdir(outDir)).sort();
  expect(files).toEqual([...expected.keys()].map((k) => `${k}.bin`).sort());
  for (const [key, want] of expected) {
    const got = await readFile(join(outDir, `${key}.bin`));
    if (!got.equals(want)) {
      let i = 0;
      while (i < got.length && i < want.length && got[i] === want[i]) i++;
      expect.fail(
        `${key}.bin differs at byte ${i} (got ${got.length} bytes, expected ${want.length})`,
      );
    }
  }
}

/** `VmHWM` (peak RSS) of a live process, in bytes; undefined once it is gone. */
export function peakRss(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** The stderr lines that are not empty. */
export function lines(text: string): string[] {
  return text.split('\n').filter((l) => l.trim() !== '');
}

/**
 * The bad-input contract of a corrupt checkpoint (DESIGN §4): exit 2 and one stderr line naming
 * the file and the byte offset (and `reason`, when given), never a stack trace; returns the line.
 */
export function expectCorruptAt(
  run: Finished,
  file: string,
  offset: number,
  reason?: string | RegExp,
): string {
  expect(run.code, run.stderr).toBe(2);
  const errLines = lines(run.stderr);
  expect(errLines, run.stderr).toHaveLength(1);
  const line = errLines[0]!;
  expect(line).toContain(file);
  expect(line).toMatch(new RegExp(`at byte ${offset}\\b`));
  if (reason !== undefined) expect(line).toMatch(reason);
  expect(run.stderr).not.toContain('    at ');
  return line;
}

/** Plants an owner dir as another Spillway process would have left it, with a spill file. */
export async function plantOwner(
  root: string,
  p: { pid: number; startTicks: number; marker?: string; old?: boolean },
): Promise<string> {
  const spillway = join(root, 'spillway');
  await mkdir(spillway, { mode: 0o700, recursive: true });
  const dir = join(spillway, `owner-${boot8}-${p.pid}-${p.startTicks}`);
  await mkdir(join(dir, 'task-planted-abcdef'), { recursive: true, mode: 0o700 });
  await writeFile(join(dir, 'task-planted-abcdef', 'spill-segment-0.bin'), Buffer.alloc(4096, 1));
  const marker =
    p.marker ??
    JSON.stringify({
      pid: p.pid,
      bootId,
      startTicks: p.startTicks,
      version: '0.1.0',
      createdAt: new Date().toISOString(),
    });
  await writeFile(join(dir, 'owner.json'), marker);
  if (p.old) {
    const past = new Date(Date.now() - 3600_000);
    await utimes(dir, past, past);
  }
  return dir;
}

/**
 * A `spillway recover` of a fresh small checkpoint as one shell command for util-linux `script`
 * (a real pseudo-terminal, so the CLI draws its bar), or undefined — with the reason printed —
 * when `script` is not installed.
 */
export async function recoverOnPty(
  kib: number,
): Promise<{ dir: string; command: string } | undefined> {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
  } catch {
    console.log('skipped: util-linux `script` (a pseudo-terminal) is not installed');
    return undefined;
  }
  const dir = await makeTempRoot();
  const { path } = await makeSmallCheckpoint(dir, { kib, channels: 4 });
  const command = [spillwayBin, 'recover', path, '--out', join(dir, 'out'), '--spill-root', dir]
    .map((a) => `'${a}'`)
    .join(' ');
  return { dir, command };
}

/** The `spillway-demo-*` temp dirs in `tmp` (a demo's TMPDIR). */
export async function demoDirs(tmp: string): Promise<string[]> {
  return (await readdir(tmp)).filter((name) => name.startsWith('spillway-demo-'));
}

/**
 * `spillway demo ARGS` in a TMPDIR of its own, with stdin closed, returned once its temp dir
 * exists (the demo is then under way and has something to leave behind).
 */
export async function startDemo(args: string[]): Promise<{ tmp: string; child: Child }> {
  const tmp = await makeTempRoot();
  const child = spawnCli(['demo', ...args], { TMPDIR: tmp });
  child.proc.stdin!.end();
  await waitFor(
    'the demo temp dir',
    async () => ((await demoDirs(tmp)).length ? true : undefined),
    {
      child,
    },
  );
  return { tmp, child };
}
