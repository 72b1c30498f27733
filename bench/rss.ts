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

const { path: CHILD, loaderArgs: LOADER_ARGS } = benchModule('rss-child');

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

function runChild(args: string[], signal: AbortSignal): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...LOADER_ARGS, CHILD, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let polled = 0;
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const poll = setInterval(() => {
      polled = Math.max(polled, hwmKiBOf(child.pid!));
    }, 25);
    // SIGINT lets the child cancel its recovery and clean its spill files up.
    const onAbort = () => child.kill('SIGINT');
    signal.addEventListener('abort', onAbort, { once: true });
    child.once('error', reject);
    child.once('exit', (code, sig) => {
      clearInterval(poll);
      signal.removeEventListener('abort', onAbort);
      if (code !== 0) {
        reject(new Error(`rss child exited with ${code ?? sig}: ${err.trim().split('\n').pop()}`));
        return;
      }
      try {
        const parsed = JSON.parse(out) as Omit<ChildResult, 'polledKiB'>;
        resolve({ ...parsed, polledKiB: polled });
      } catch {
        reject(new Error(`rss child printed no result: ${out.slice(0, 200)}`));
      }
    });
  });
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
