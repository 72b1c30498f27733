/**
 * The process half of the test kit: real child processes that no test can leak (each is
 * SIGKILLed after its test if still running), a poll for the moment to act that fails fast when
 * the child dies first, and the identity (/proc) facts the sweeper judges owners by.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
// Imported before this file registers its own afterEach: vitest runs after-hooks in reverse
// order, so children are killed before their temp dirs are removed.
import './temp.ts';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
export const fixturesDir = join(repoRoot, 'test', 'fixtures');

/** A child process with everything it printed so far. */
export interface Child {
  proc: ChildProcess;
  readonly stdout: string;
  readonly stderr: string;
  /** True once the child has exited and its output is complete. */
  readonly ended: boolean;
  /** Resolves once the child has exited and its output is complete (code, or killing signal). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
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

/** Spawns `command args` with piped stdio, killed after the test if it still runs. */
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
  let ended = false;
  proc.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  // 'close', not 'exit': it comes once the process has exited and its pipes are drained, so
  // `stdout` and `stderr` are complete when this resolves.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('close', (code, signal) => {
      ended = true;
      resolve({ code, signal });
    }),
  );
  return {
    proc,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    get ended() {
      return ended;
    },
    exited,
  };
}

/** Starts a script from test/fixtures with tsx, as the CLI's own loader would. */
export function spawnFixture(name: string, args: string[]): Child {
  return spawnTracked(process.execPath, ['--import', 'tsx', join(fixturesDir, name), ...args]);
}

/**
 * Polls `probe` until it returns something other than `undefined`: a state of the file system
 * or of a child's output, never a duration. Fails fast if `child` ends first (with its stderr;
 * its complete output is probed once more before that), or after `timeoutMs` (a hang, not a
 * timing assumption).
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  { child, timeoutMs = 30_000 }: { child?: Child; timeoutMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ended = child?.ended === true;
    const value = await probe();
    if (value !== undefined) return value;
    if (ended) {
      const { exitCode, signalCode } = child!.proc;
      throw new Error(
        `child exited (${exitCode ?? signalCode}) while waiting for ${what}: ${child!.stderr}`,
      );
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** A child's next JSON line on stdout matching `pred` (fixtures speak one JSON object a line). */
export function nextMessage<T = Record<string, unknown>>(
  child: Child,
  pred: (m: Record<string, unknown>) => boolean = () => true,
): Promise<T> {
  return waitFor<T>(
    'a message from the child',
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

/** This boot's id and its 8-hex-digit prefix as used in owner dir names. */
export const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
export const boot8 = bootId.replace(/-/g, '').slice(0, 8);

/** Field 22 of /proc/<pid>/stat: the start time the sweeper compares. */
export function startTicksOf(pid: number): number {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[19]);
}

/** A pid that no longer runs: the child has exited and been reaped (if reused, by another start). */
export function deadPid(): number {
  const pid = spawnSync('true').pid;
  if (pid === undefined) throw new Error('could not spawn');
  return pid;
}
