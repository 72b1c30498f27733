/**
 * `flink rewrite` against `recover --all` on the same Flink checkpoint (issue 31's speed goal:
 * a rewrite of 64 MiB of channel state within 1.5× the time of `recover --all` of it). Both are
 * the real CLI in child processes, run alternately (which goes first alternates too), each
 * run's output removed before the next; the figure is the ratio of the medians.
 *
 * The checkpoint is the `flinkVsSpwc` one (bench/flink.ts): an SPWC file of `mb` MiB (2 × 4
 * channels, entries up to 32 KiB) written as a Flink checkpoint, one relative channel-state file.
 *
 * Run: `npx tsx bench/flink-rewrite.ts [--mb 64] [--runs 7] [--dir DIR]` (prints one JSON line).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeCheckpoint } from '../src/services/formats/spwc/generator.ts';
import { writeSpwcAsFlink } from './flink.ts';

/** The figures of one measurement. */
export interface RewriteVsRecoverAll {
  readonly mb: number;
  readonly runs: number;
  /** Seconds per run, in run order. */
  readonly rewrite: number[];
  readonly recoverAll: number[];
  /** median(rewrite) ÷ median(recover --all): ≤ 1.5 is the goal. */
  readonly ratio: number;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** The repository's `bin/spillway`, from bench/ or from dist/bench/. */
function spillwayBin(): string {
  for (const up of ['../bin/spillway', '../../bin/spillway']) {
    const p = fileURLToPath(new URL(up, import.meta.url));
    if (existsSync(p)) return p;
  }
  throw new Error('bin/spillway not found');
}

function timed(args: string[]): number {
  const t0 = performance.now();
  const r = spawnSync(spillwayBin(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status !== 0) throw new Error(`spillway ${args.join(' ')}: ${r.stderr.toString()}`);
  return (performance.now() - t0) / 1000;
}

/**
 * Makes the checkpoint in `dir` and times both commands `runs` times each.
 *
 * @example
 * ```ts
 * const f = await measureRewriteVsRecoverAll({ dir: '/tmp/b', mb: 64, runs: 7 });
 * console.log(f.ratio); // e.g. 0.84
 * ```
 */
export async function measureRewriteVsRecoverAll(o: {
  dir: string;
  mb: number;
  runs: number;
}): Promise<RewriteVsRecoverAll> {
  const spwc = join(o.dir, 'rewrite-vs.spwc');
  await makeCheckpoint({
    out: spwc,
    gates: 2,
    channels: 4,
    mb: o.mb,
    seed: 1,
    maxEntryBytes: 32 * 1024,
  });
  const { checkpoint } = await writeSpwcAsFlink(spwc, join(o.dir, 'flink'));
  await rm(spwc, { force: true });
  const rewrite: number[] = [];
  const recoverAll: number[] = [];
  const newdir = join(o.dir, 'new');
  const all = join(o.dir, 'all');
  for (let i = 0; i < o.runs; i++) {
    const pair = [
      () => rewrite.push(timed(['flink', 'rewrite', checkpoint, '--out', newdir])),
      () => recoverAll.push(timed(['recover', checkpoint, '--all', '--out', all])),
    ];
    for (const run of i % 2 === 0 ? pair : pair.reverse()) {
      run();
      await rm(newdir, { recursive: true, force: true });
      await rm(all, { recursive: true, force: true });
    }
  }
  return {
    mb: o.mb,
    runs: o.runs,
    rewrite,
    recoverAll,
    ratio: median(rewrite) / median(recoverAll),
  };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const arg = (name: string, fallback: number): number => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? Number(process.argv[i + 1]) : fallback;
  };
  const given = process.argv.indexOf('--dir');
  const dir =
    given > 0 ? process.argv[given + 1]! : await mkdtemp(join(tmpdir(), 'spillway-rewrite-bench-'));
  try {
    const f = await measureRewriteVsRecoverAll({ dir, mb: arg('mb', 64), runs: arg('runs', 7) });
    console.log(JSON.stringify(f));
  } finally {
    if (given < 0) await rm(dir, { recursive: true, force: true });
  }
}
