/**
 * `spillway soak`: the demo's pool for many seeded loops, watching for the slow leaks a short
 * run cannot show: spill files, heap and file descriptors.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ALL_FAULTS, FAULT_KINDS } from '../pool/faults.ts';
import type { PoolMetrics } from '../pool/metrics.ts';
import { fsSeam } from '../services/fs.ts';
import { intOption, parse } from './args.ts';
import { printJson, table, type Io } from './io.ts';
import { trapSignals } from './signals.ts';
import { openSandbox } from './pool-sandbox.ts';
import { PoolProgress, pathList, poolClean, poolReport, styleFor } from './pool-view.ts';

const TASKS = 4;
const STATE_MB = 2;
/** Heap growth above this (MiB, after GC, end minus after warm-up) counts as a leak. */
export const HEAP_GROWTH_LIMIT_MIB = 5;

export const usage = `usage: spillway soak [--loops N] [--seed S] [--json]

Runs the demo's pool (${TASKS} task slots, a ${STATE_MB} MiB checkpoint, every fault kind) for N
recoveries and reports what would grow if anything leaked:
  leakedFiles    spill files or dirs of ended tasks found in the spill root
  maskedCauses   failures reported with something other than the injected cause
  heapGrowthMiB  heap after GC at the end minus after the warm-up (the first tenth, at least
                 two rounds of every fault kind)
  fdDelta        open descriptors in /proc/self/fd at the end (before any final GC, which
                 would close leaked handles for us) minus at the start
  fdsClosedByGc  descriptors Node had to close on garbage collection (a handle never closed)

  --loops N   recoveries in all (default 500)
  --seed S    seeds the checkpoint, the fault order and every fault's position (default 1)
  --json      print one JSON object on stdout instead of the table

Exit codes: 0 nothing leaked · 1 a leak (files, masked causes, wrong bytes, heap growth over
${HEAP_GROWTH_LIMIT_MIB} MiB, or descriptors) · 2 bad usage · 130 SIGINT / 143 SIGTERM
`;

/** A full collection; the flag can be set at run time, `gc` is then reachable from a new context. */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

async function settledHeap(gc: () => void): Promise<number> {
  // Several passes with turns between them, so finalizers (closed FileHandles, …) run too.
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().heapUsed;
}

async function openFds(): Promise<number | undefined> {
  try {
    return (await fsSeam.readdir('/proc/self/fd')).length;
  } catch {
    return undefined; // not Linux: no /proc
  }
}

export async function run(argv: string[], io: Io): Promise<number> {
  const { values } = parse(argv, {
    loops: { type: 'string' },
    seed: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (values.help) {
    io.out.write(usage);
    return 0;
  }
  const loops = intOption(values, 'loops', 500, { min: 1, max: 10_000_000 });
  const seed = intOption(values, 'seed', 1, { max: 2 ** 32 - 1 });
  const json = values.json === true;

  const gc = collector();
  const signals = trapSignals();
  // A FileHandle dropped without close() is closed by GC with this warning: a leak GC hid.
  let fdsClosedByGc = 0;
  const onWarning = (w: Error) => {
    if (/Closing file descriptor \d+ on garbage collection/.test(w.message)) fdsClosedByGc++;
  };
  process.on('warning', onWarning);
  try {
    const fdStart = await openFds();
    const started = performance.now();
    const box = await openSandbox({
      name: 'soak',
      tasks: TASKS,
      stateMb: STATE_MB,
      faults: ALL_FAULTS,
      seed,
    });
    const warmup = Math.min(loops, Math.max(2 * FAULT_KINDS.length, Math.ceil(loops / 10)));
    const progress = new PoolProgress(io.err);
    const timer = setInterval(() => {
      const m = box.pool.metrics;
      progress.update(m, loops);
    }, 100);
    let metrics: PoolMetrics;
    let heapBase: number;
    let heapEnd: number;
    let fdEnd: number | undefined;
    let leftovers: string[];
    try {
      await box.pool.run(warmup, { signal: signals.signal });
      heapBase = await settledHeap(gc);
      metrics = await box.pool.run(loops - warmup, { signal: signals.signal });
      // Every task has ended and the pool holds no file open between runs: count now, before
      // a GC could close a leaked handle and hide it.
      fdEnd = await openFds();
      heapEnd = await settledHeap(gc);
    } finally {
      clearInterval(timer);
      progress.done();
      ({ leftovers } = await box.close());
    }
    const heapGrowthMiB = Math.round(((heapEnd - heapBase) / 1024 / 1024) * 100) / 100;
    const fdDelta = fdStart !== undefined && fdEnd !== undefined ? fdEnd - fdStart : null;
    const leakedFiles = metrics.leakedFiles + leftovers.length;
    const leak =
      !poolClean(metrics) ||
      leftovers.length > 0 ||
      heapGrowthMiB > HEAP_GROWTH_LIMIT_MIB ||
      (fdDelta ?? 0) > 0 ||
      fdsClosedByGc > 0;
    const report = {
      loops: metrics.loops,
      warmupLoops: warmup,
      heapGrowthMiB,
      fdDelta,
      fdsClosedByGc,
      ...poolReport(metrics, leftovers, signals.exitCode !== undefined),
      seed,
      durationMs: Math.round(performance.now() - started),
      ...(metrics.problems.length > 0 ? { problems: metrics.problems } : {}),
    };
    if (json) printJson(io, report);
    else {
      const s = styleFor(io.out);
      const zero = (n: number | null, limit = 0) =>
        n === null ? 'n/a' : n <= limit ? s.green(String(n)) : s.bold(s.red(String(n)));
      io.out.write(
        `${s.bold('spillway soak')}  ${report.loops} recoveries · seed ${seed} · ` +
          `${(report.durationMs / 1000).toFixed(1)} s\n` +
          table([
            [
              'outcomes',
              `${metrics.outcomes.finished} finished · ${metrics.outcomes.failed} failed · ` +
                `${metrics.outcomes.cancelled} cancelled`,
            ],
            ['abort paths', pathList(metrics.abortPaths)],
            ['spill files', String(metrics.spillFilesWritten)],
            ['leaked files', zero(leakedFiles)],
            ['masked causes', zero(metrics.maskedCauses)],
            ['delivery errors', zero(metrics.deliveryErrors)],
            [
              'heap growth',
              `${zero(heapGrowthMiB, HEAP_GROWTH_LIMIT_MIB)} MiB (after GC; limit ${HEAP_GROWTH_LIMIT_MIB})`,
            ],
            ['fd delta', zero(fdDelta)],
            ['fds closed by GC', zero(fdsClosedByGc)],
          ]),
      );
      for (const p of metrics.problems) io.out.write(`  ${p}\n`);
    }
    if (signals.exitCode !== undefined) {
      io.err.write(`spillway soak: cancelled by ${signals.signal.reason}; spill root removed\n`);
      return leak ? 1 : signals.exitCode;
    }
    return leak ? 1 : 0;
  } finally {
    process.off('warning', onWarning);
    signals.dispose();
  }
}
