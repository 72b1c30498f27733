/**
 * The CLI's start-up against bare node: `spillway --help` from the compiled package, and an
 * `import()` of the package entry, against `node -e ''`, rotating, each run a fresh process. Both get the same one-line `--import`
 * hook that reports the process's own peak RSS (`process.resourceUsage().maxRSS`) at exit on
 * fd 3, so the hook's cost is on both sides and cancels out of the ratio.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { spread, type Spread } from './stats.ts';

const HOOK = `data:text/javascript,${encodeURIComponent(
  "import{writeSync}from'node:fs';process.on('exit',()=>{try{const u=process.resourceUsage();writeSync(3,u.maxRSS+' '+(u.userCPUTime+u.systemCPUTime))}catch{}})",
)}`;

/** The installed bin of this package (compiled; `npm run build` makes it in a checkout). */
export function packageBin(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const bin = join(dir, 'bin', 'spillway');
    if (existsSync(join(dir, 'package.json')) && existsSync(bin)) return bin;
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the spillway bin above the bench');
    dir = up;
  }
}

interface Sample {
  ms: number;
  rssMiB: number;
  /** User + system CPU time of the process, ms (what the load of other processes distorts least). */
  cpuMs: number;
}

function once(args: string[]): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, ['--import', HOOK, ...args], {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    });
    let rss = '';
    let err = '';
    child.stdio[3]!.on('data', (d: Buffer) => (rss += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - t0;
      if (code !== 0) reject(new Error(`${args.join(' ')} exited ${code}: ${err.trim()}`));
      else {
        const [kb, cpuUs] = rss.split(' ').map(Number);
        resolve({ ms, rssMiB: kb! / 1024, cpuMs: cpuUs! / 1000 });
      }
    });
  });
}

/** Median wall time and peak RSS of each side, and their ratios (spillway ÷ node). */
export interface StartupFigures {
  nodeMs: Spread;
  spillwayMs: Spread;
  nodeRssMiB: Spread;
  spillwayRssMiB: Spread;
  /** spillway --help wall ÷ node -e '' wall, median of the per-pair ratios. */
  timeRatio: Spread;
  rssRatio: Spread;
  /** `node -e "import('spillway')"` (the compiled package entry) wall time. */
  importMs: Spread;
  /** import wall ÷ node -e '' wall of the same round. */
  importRatio: Spread;
  /** The same two ratios in CPU time (user + system) of each process. */
  cpuRatio: Spread;
  importCpuRatio: Spread;
  nodeCpuMs: Spread;
}

/**
 * Measures `runs` rounds of three fresh processes — `node -e ''`, `spillway --help` and an
 * `import()` of the package entry — rotating which goes first.
 *
 * @example
 * ```ts
 * const { timeRatio, importRatio } = await measureStartup(11); // goals: ≤ 1.5, ≤ 1.3
 * ```
 */
export async function measureStartup(runs: number, signal?: AbortSignal): Promise<StartupFigures> {
  const bin = packageBin();
  const entry = pathToFileURL(join(dirname(dirname(bin)), 'dist', 'src', 'index.js')).href;
  const sides: Record<'node' | 'cli' | 'imp', string[]> = {
    node: ['-e', ''],
    cli: [bin, '--help'],
    imp: ['-e', `import(${JSON.stringify(entry)})`],
  };
  const order = ['node', 'cli', 'imp'] as const;
  const got: Record<'node' | 'cli' | 'imp', Sample[]> = { node: [], cli: [], imp: [] };
  // One of each first, unmeasured: the first spawn pays for the disk cache.
  for (const side of order) await once(sides[side]);
  for (let k = 0; k < runs; k++) {
    signal?.throwIfAborted();
    for (let j = 0; j < order.length; j++) {
      const side = order[(j + k) % order.length]!;
      got[side].push(await once(sides[side]));
    }
  }
  const { node, cli, imp } = got;
  return {
    nodeMs: spread(node.map((s) => s.ms)),
    spillwayMs: spread(cli.map((s) => s.ms)),
    nodeRssMiB: spread(node.map((s) => s.rssMiB)),
    spillwayRssMiB: spread(cli.map((s) => s.rssMiB)),
    timeRatio: spread(cli.map((s, k) => s.ms / node[k]!.ms)),
    rssRatio: spread(cli.map((s, k) => s.rssMiB / node[k]!.rssMiB)),
    importMs: spread(imp.map((s) => s.ms)),
    importRatio: spread(imp.map((s, k) => s.ms / node[k]!.ms)),
    cpuRatio: spread(cli.map((s, k) => s.cpuMs / node[k]!.cpuMs)),
    importCpuRatio: spread(imp.map((s, k) => s.cpuMs / node[k]!.cpuMs)),
    nodeCpuMs: spread(node.map((s) => s.cpuMs)),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await measureStartup(Number(process.argv[2] ?? 11)), null, 1));
}
