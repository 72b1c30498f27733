/**
 * `peakRssMiBAt2GiB`: the peak resident set of a separate process recovering a large
 * checkpoint (G8: memory must not grow with state size). The parent polls the child's
 * `/proc/<pid>/status` VmHWM (the kernel's own high-water mark) and takes the larger of that and
 * what the child reports at its very end.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { packageBin } from './startup.ts';

/**
 * The bench module `name` for a child process to run: compiled (the installed package),
 * tsc's dist/bench/NAME.js, run by plain node (found from the package's root: the bench runs
 * from a chunk of the bundled CLI); from the sources (the repo's tests), the sibling .ts, run
 * through tsx (a dev dependency), which `loaderArgs` loads.
 */
export function benchModule(name: string): { path: string; loaderArgs: string[] } {
  if (!import.meta.url.endsWith('.ts')) {
    return {
      path: join(dirname(dirname(packageBin())), 'dist', 'bench', `${name}.js`),
      loaderArgs: [],
    };
  }
  return {
    path: fileURLToPath(new URL(`./${name}.ts`, import.meta.url)),
    loaderArgs: ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href],
  };
}

export interface RssFigures {
  peakMiB: number;
  /** The same child loading the same modules without recovering anything. */
  baselineMiB: number;
  bytes: number;
  ms: number;
  spillFiles: number;
}

function hwmKiBOf(pid: number): number {
  try {
    const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0; // exited between polls
  }
}

interface ChildResult {
  bytes: number;
  ms?: number;
  spillFiles?: number;
  vmHwmKiB: number;
  polledKiB: number;
}

/**
 * Runs bench module `name` (see {@link benchModule}) in a child process with `args` and
 * resolves with the one JSON value it prints. An abort sends it SIGINT (it stops and removes
 * its files) and rejects with the abort's reason; an exit other than 0 rejects with its last
 * line of stderr. `watch` runs while it lives (given its pid; returns what stops it).
 *
 * @example
 * ```ts
 * const figures = await runBenchChild<FlinkFigures>('flink-child', [dir, '64', '7', '1'], signal);
 * ```
 */
export function runBenchChild<T>(
  name: string,
  args: readonly string[],
  signal: AbortSignal,
  options: { nodeArgs?: readonly string[]; watch?: (pid: number) => () => void } = {},
): Promise<T> {
  const { path, loaderArgs } = benchModule(name);
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...loaderArgs, ...(options.nodeArgs ?? []), path, ...args],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const unwatch = options.watch?.(child.pid!);
    // SIGINT lets the child stop what it runs and clean its files up.
    const onAbort = () => child.kill('SIGINT');
    signal.addEventListener('abort', onAbort, { once: true });
    child.once('error', reject);
    child.once('exit', (code, sig) => {
      unwatch?.();
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted) return reject(signal.reason);
      if (code !== 0) {
        return reject(
          new Error(`${name} exited with ${code ?? sig}: ${err.trim().split('\n').pop()}`),
        );
      }
      try {
        resolve(JSON.parse(out) as T);
      } catch {
        reject(new Error(`${name} printed no result: ${out.slice(0, 200)}`));
      }
    });
  });
}

async function runChild(args: string[], signal: AbortSignal): Promise<ChildResult> {
  let polled = 0;
  const result = await runBenchChild<Omit<ChildResult, 'polledKiB'>>('rss-child', args, signal, {
    watch: (pid) => {
      const poll = setInterval(() => (polled = Math.max(polled, hwmKiBOf(pid))), 25);
      return () => clearInterval(poll);
    },
  });
  return { ...result, polledKiB: polled };
}

/**
 * Recovers `checkpoint` in a child process and reports its peak RSS in MiB.
 *
 * @example
 * ```ts
 * const { peakMiB } = await measurePeakRss('2g.spwc', spillRoot, signal);
 * ```
 */
export async function measurePeakRss(
  checkpoint: string,
  spillRoot: string,
  signal: AbortSignal,
  tasks = 1,
): Promise<RssFigures> {
  const base = await runChild(['--baseline'], signal);
  const run = await runChild([checkpoint, spillRoot, String(tasks)], signal);
  const mib = (kib: number) => kib / 1024;
  return {
    peakMiB: mib(Math.max(run.vmHwmKiB, run.polledKiB)),
    baselineMiB: mib(Math.max(base.vmHwmKiB, base.polledKiB)),
    bytes: run.bytes,
    ms: run.ms ?? 0,
    spillFiles: run.spillFiles ?? 0,
  };
}
