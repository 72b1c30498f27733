/**
 * The CLI's start-up against bare node: `spillway --help` from the compiled package against
 * `node -e ''`, alternating, each run a fresh process. Both get the same one-line `--import`
 * hook that reports the process's own peak RSS (`process.resourceUsage().maxRSS`) at exit on
 * fd 3, so the hook's cost is on both sides and cancels out of the ratio.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spread, type Spread } from './stats.ts';

const HOOK = `data:text/javascript,${encodeURIComponent(
  "import{writeSync}from'node:fs';process.on('exit',()=>{try{writeSync(3,String(process.resourceUsage().maxRSS))}catch{}})",
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
      else resolve({ ms, rssMiB: Number(rss) / 1024 });
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
}

/**
 * Measures `runs` alternating pairs (A B, B A, …).
 *
 * @example
 * ```ts
 * const { timeRatio } = await measureStartup(11); // goal: median ≤ 2
 * ```
 */
export async function measureStartup(runs: number, signal?: AbortSignal): Promise<StartupFigures> {
  const bin = packageBin();
  const node: Sample[] = [];
  const cli: Sample[] = [];
  // One of each first, unmeasured: the first spawn pays for the disk cache.
  await once(['-e', '']);
  await once([bin, '--help']);
  for (let k = 0; k < runs; k++) {
    signal?.throwIfAborted();
    if (k % 2 === 0) {
      node.push(await once(['-e', '']));
      cli.push(await once([bin, '--help']));
    } else {
      cli.push(await once([bin, '--help']));
      node.push(await once(['-e', '']));
    }
  }
  return {
    nodeMs: spread(node.map((s) => s.ms)),
    spillwayMs: spread(cli.map((s) => s.ms)),
    nodeRssMiB: spread(node.map((s) => s.rssMiB)),
    spillwayRssMiB: spread(cli.map((s) => s.rssMiB)),
    timeRatio: spread(cli.map((s, k) => s.ms / node[k]!.ms)),
    rssRatio: spread(cli.map((s, k) => s.rssMiB / node[k]!.rssMiB)),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await measureStartup(Number(process.argv[2] ?? 11)), null, 1));
}
