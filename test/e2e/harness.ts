/**
 * Shared plumbing of the end-to-end suites: run `bin/spillway` and fixture scripts as real child
 * processes, poll the file system for the moment to act (never a blind sleep), compute the bytes
 * every channel must end up with, and list what a run left behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect } from 'vitest';
import { channelKey } from '../../src/services/channel.ts';
import { readCheckpoint } from '../../src/services/checkpoint/reader.ts';
// Imported here, before this file registers its own afterEach: vitest runs after-hooks in
// reverse order, so children are killed before their temp dirs are removed.
import { makeTempRoot } from '../helpers/temp.ts';

export { makeTempRoot };

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
export const spillwayBin = join(repoRoot, 'bin', 'spillway');
export const fixturesDir = join(repoRoot, 'test', 'fixtures');
/** The repository's own checkpoint vectors (test/fixtures/vectors/README.md). */
export const vectorsDir = join(fixturesDir, 'vectors');

/** A child process with everything it printed so far. */
export interface Child {
  proc: ChildProcess;
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves once the child has exited and its output is complete (code, or killing signal). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const children: ChildProcess[] = [];

/** SIGKILLs every child a test left running, so no test leaks a process into the next one. */
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = once(child, 'exit');
      child.kill('SIGKILL');
      await gone;
    }
  }
});

/** Spawns `command args` with piped stdio, tracked for the afterEach kill. */
export function spawnTracked(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Child {
  const proc = spawn(command, args, {
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(proc);
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  // 'close', not 'exit': it comes once the process has exited and its pipes are drained, so
  // `stdout` and `stderr` are complete when this resolves.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('close', (code, signal) => resolve({ code, signal })),
  );
  return {
    proc,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    exited,
  };
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

/** Starts a fixture script from test/fixtures with tsx, as the CLI's own loader would. */
export function spawnFixture(name: string, args: string[]): Child {
  return spawnTracked(process.execPath, ['--import', 'tsx', join(fixturesDir, name), ...args]);
}

/**
 * Polls `probe` until it returns something other than `undefined`; fails fast if `child` exits
 * first (with its stderr) or after `timeoutMs` (a hang, not a timing assumption).
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  { child, timeoutMs = 30_000 }: { child?: Child; timeoutMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (child !== undefined && (child.proc.exitCode !== null || child.proc.signalCode !== null)) {
      throw new Error(
        `child exited (${child.proc.exitCode ?? child.proc.signalCode}) while waiting for ${what}: ${child.stderr}`,
      );
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** A fixture's next JSON line on stdout matching `pred` (fixtures speak one JSON object a line). */
export function nextMessage<T = Record<string, unknown>>(
  child: Child,
  pred: (m: Record<string, unknown>) => boolean,
): Promise<T> {
  return waitFor<T>(
    'a fixture message',
    () => {
      // Only complete lines: a chunk may end mid-line.
      for (const line of child.stdout.split('\n').slice(0, -1)) {
        if (!line.startsWith('{')) continue;
        const m = JSON.parse(line) as Record<string, unknown>;
        if (pred(m)) return m as T;
      }
      return undefined;
    },
    { child },
  );
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

/** Every channel's recovered bytes, computed independently of recovery from the checkpoint. */
export async function channelBytes(checkpoint: string): Promise<Map<string, Buffer>> {
  const parts = new Map<string, Buffer[]>();
  let current: Buffer[] = [];
  await readCheckpoint(checkpoint, {
    onEntry(gate, channel) {
      const key = channelKey({ gate, channel });
      current = parts.get(key) ?? [];
      parts.set(key, current);
    },
    // The reader reuses its buffer: copy.
    onPayload: (chunk) => void current.push(Buffer.from(chunk)),
  });
  return new Map([...parts].map(([k, v]) => [k, Buffer.concat(v)]));
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

/** This boot's id and its 8-hex-digit prefix as used in owner dir names. */
export const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
export const boot8 = bootId.replace(/-/g, '').slice(0, 8);

/** Field 22 of /proc/<pid>/stat: the start time the sweeper compares. */
export function startTicksOf(pid: number): number {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[19]);
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
