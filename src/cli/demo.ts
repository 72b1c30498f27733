/**
 * `spillway demo` (the default command, `npm start`): a pooled TaskManager in recovery-failure
 * loops with every fault kind injected, on a private temp spill root, showing live that no
 * spill file piles up and no failure is reported with the wrong cause.
 */
import { ALL_FAULTS, FAULT_DESCRIPTIONS, FAULT_KINDS, type FaultKind } from '../pool/faults.ts';
import { intOption, numberOption, parse, stringOption, UsageError } from './args.ts';
import { mib, printJson, type Io } from './io.ts';
import { trapSignals, type SignalScope } from './signals.ts';
import type { InspectorServer } from '../../inspector/server.ts';
import { takeInspectFlag } from './recover-inspect.ts';
import { openSandbox, type Sandbox } from './pool-sandbox.ts';
import { PoolProgress, poolClean, poolReport, poolTable, styleFor } from './pool-view.ts';
import type { PoolMetrics } from '../pool/metrics.ts';

const DEFAULTS = { tasks: 4, loops: 200, stateMb: 8, seed: 1 };

export const usage = `usage: spillway demo [--tasks N] [--loops N] [--state-mb N] [--faults all|LIST] [--seed S] [--inspect[=PORT]] [--json]

Runs a pool of N task slots that recover the same checkpoint over and over in one spill root,
with a fault injected into most loops, through the real file-system seam and task hooks:
${FAULT_KINDS.filter((k) => k !== 'none')
  // Padded to the longest kind plus two spaces, so no kind runs into its description.
  .map(
    (k) =>
      `  ${k.padEnd(Math.max(...FAULT_KINDS.map((n) => n.length)) + 2)}${FAULT_DESCRIPTIONS[k]}`,
  )
  .join('\n')}

Each loop checks that the task's spill files are gone when it ends, that a failure is reported
with the injected cause (never a cleanup error or an abort's consequence), and that every
recovered byte arrived exactly once, in order. The checkpoint is SPWC v2 with records, and the
odd slots restore it rescaled, as new subtask 0 of 2 (the filtering handler, judged against
the records that survive). Needs no arguments: it makes its own checkpoint in a temp dir and
removes it afterwards.

  --tasks N        task slots running at once (default ${DEFAULTS.tasks})
  --loops N        recoveries in all, over all slots (default ${DEFAULTS.loops})
  --state-mb N     checkpoint size in MiB (default ${DEFAULTS.stateMb})
  --faults LIST    'all' (default), 'none', or a comma-separated list of the kinds above
  --seed S         seeds the checkpoint, the fault order and every fault's position (default ${DEFAULTS.seed})
  --inspect[=PORT] serve the live inspector on 127.0.0.1 (default: a free port); after the run it
                   keeps serving until Ctrl-C, and the exit code is still the run's
  --json           print one JSON object on stdout instead of the table

Exit codes: 0 no leaked file, no masked cause, every byte right · 1 otherwise · 2 bad usage ·
130 SIGINT / 143 SIGTERM during the run (every task cancelled and cleaned up)
`;

/** `all`, `none`, or a comma list of kinds (`all` may be one of them: `all,cancel-after-failure`). */
export function parseFaults(raw: string): FaultKind[] {
  const kinds = new Set<FaultKind>();
  for (const k of raw.split(',').map((s) => s.trim())) {
    if (k === 'all') for (const a of ALL_FAULTS) kinds.add(a);
    else if ((FAULT_KINDS as readonly string[]).includes(k)) kinds.add(k as FaultKind);
    else throw new UsageError(`unknown fault kind '${k}' (kinds: all, ${FAULT_KINDS.join(', ')})`);
  }
  kinds.delete('none');
  return [...kinds];
}

/** What the command line asks for. */
interface DemoArgs {
  tasks: number;
  loops: number;
  stateMb: number;
  faults: FaultKind[];
  seed: number;
  json: boolean;
  /** `--inspect[=PORT]`: 0 for any free port; undefined without it. */
  port: number | undefined;
}

/** What a run came to: the pool's metrics and what its spill root still held at the end. */
interface Outcome {
  metrics: PoolMetrics;
  leftovers: string[];
  durationMs: number;
  clean: boolean;
}

export async function run(argv: string[], io: Io): Promise<number> {
  const args = parseArgs(argv);
  if (args === 'help') {
    io.out.write(usage);
    return 0;
  }
  const signals = trapSignals();
  const output = watchOutput(io);
  const stop = AbortSignal.any([signals.signal, output.gone]);
  let server: InspectorServer | undefined;
  try {
    server = await startInspector(args.port, io);
    const started = performance.now();
    const box = await openSandbox({
      name: 'demo',
      tasks: args.tasks,
      stateMb: args.stateMb,
      faults: args.faults,
      seed: args.seed,
      rescaled: true,
      ...(server ? { inspect: (e) => server!.inspect(e) } : {}),
    });
    const outcome = await runPool(args, box, io, server, stop, started);
    printSummary(io, args, box, outcome, signals);
    return await exitCode(io, args, outcome, signals, output.gone, stop, server);
  } finally {
    output.dispose();
    signals.dispose();
    await server?.close();
  }
}

/** The options, parsed and checked (usage errors: exit 2), or `'help'`. */
function parseArgs(argv: string[]): DemoArgs | 'help' {
  const { rest, port, holdSeconds, waitForPage } = takeInspectFlag(argv);
  if (holdSeconds > 0 || waitForPage) {
    throw new UsageError('--inspect-hold and --wait-for-page are options of recover --inspect');
  }
  const { values } = parse(rest, {
    tasks: { type: 'string' },
    loops: { type: 'string' },
    'state-mb': { type: 'string' },
    faults: { type: 'string' },
    seed: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (values.help) return 'help';
  const tasks = intOption(values, 'tasks', DEFAULTS.tasks, { min: 1, max: 256 });
  const loops = intOption(values, 'loops', DEFAULTS.loops, { min: 1, max: 10_000_000 });
  const stateMb = numberOption(values, 'state-mb', DEFAULTS.stateMb);
  if (stateMb <= 0 || stateMb > 4096) {
    throw new UsageError(`--state-mb must be more than 0 and at most 4096, got ${stateMb}`);
  }
  const faults = parseFaults(stringOption(values, 'faults') ?? 'all');
  const seed = intOption(values, 'seed', DEFAULTS.seed, { max: 2 ** 32 - 1 });
  return { tasks, loops, stateMb, faults, seed, json: values.json === true, port };
}

/**
 * A closed terminal or reader (EIO, EPIPE on stdout or stderr) leaves no one to watch: the run
 * stops as on a signal, so its temp dir goes now rather than after every remaining loop.
 */
function watchOutput(io: Io): { gone: AbortSignal; dispose(): void } {
  const outputGone = new AbortController();
  const onOutputError = (e: Error) => {
    if (!outputGone.signal.aborted) outputGone.abort(e);
  };
  io.out.on('error', onOutputError);
  io.err.on('error', onOutputError);
  return {
    gone: outputGone.signal,
    dispose: () => {
      io.out.off('error', onOutputError);
      io.err.off('error', onOutputError);
    },
  };
}

/** `--inspect`: the live inspector's server, announced on stderr; a port in use is exit 2. */
async function startInspector(
  port: number | undefined,
  io: Io,
): Promise<InspectorServer | undefined> {
  if (port === undefined) return undefined;
  // Loaded only with --inspect: the demo itself needs none of the inspector's modules.
  const mod = await import('../../inspector/server.ts');
  let server: InspectorServer;
  try {
    server = await mod.startInspectorServer({ port });
  } catch (e) {
    throw new UsageError(`--inspect: ${(e as Error).message}`);
  }
  io.err.write(`spillway demo: live inspector at ${styleFor(io.err).bold(server.url)}\n`);
  return server;
}

/** Runs the loops with a live progress line (and the inspector's plot), then closes the box. */
async function runPool(
  args: DemoArgs,
  box: Sandbox,
  io: Io,
  inspector: InspectorServer | undefined,
  stop: AbortSignal,
  started: number,
): Promise<Outcome> {
  const progress = new PoolProgress(io.err);
  if (progress.enabled && !args.json) {
    io.err.write(
      `spillway demo: ${args.tasks} task slots, ${args.loops} recoveries of a ${mib(box.checkpoint.payloadBytes)} ` +
        `checkpoint in one spill root, ${args.faults.length} fault kinds injected (seed ${args.seed}); ` +
        `odd slots restore rescaled, as subtask 0 of 2\n`,
    );
  }
  let ticks = 0;
  const tick = () => {
    const m = box.pool.metrics;
    progress.update(m, args.loops);
    if (inspector && ticks++ % 2 === 0) {
      inspector.publishMetrics({
        files: m.liveFiles,
        bytes: m.liveBytes,
        liveTasks: m.liveTasks,
      });
    }
  };
  const timer = setInterval(tick, 100);
  let metrics;
  let leftovers: string[];
  try {
    metrics = await box.pool.run(args.loops, { signal: stop });
  } finally {
    clearInterval(timer);
    progress.done();
    ({ leftovers } = await box.close());
  }
  inspector?.publishMetrics({ files: 0, bytes: 0, liveTasks: 0 });
  const durationMs = Math.round(performance.now() - started);
  return { metrics, leftovers, durationMs, clean: poolClean(metrics) && leftovers.length === 0 };
}

/** The JSON object, or the table on stdout. */
function printSummary(
  io: Io,
  args: DemoArgs,
  box: Sandbox,
  { metrics, leftovers, durationMs }: Outcome,
  signals: SignalScope,
): void {
  if (args.json) {
    printJson(io, {
      recoveries: metrics.loops,
      ...poolReport(metrics, leftovers, signals.exitCode !== undefined),
      checkpointsVerified: metrics.checkpointsVerified,
      peakLiveFiles: metrics.peakLiveFiles,
      peakLiveBytes: metrics.peakLiveBytes,
      tasks: args.tasks,
      stateBytes: box.checkpoint.payloadBytes,
      seed: args.seed,
      durationMs,
      ...(metrics.problems.length > 0 ? { problems: metrics.problems } : {}),
    });
    return;
  }
  const out = styleFor(io.out);
  io.out.write(
    `\n${out.bold('spillway demo')}  ${args.tasks} task slots · ${metrics.loops} recoveries · ` +
      `${mib(box.checkpoint.payloadBytes)} checkpoint · seed ${args.seed} · ` +
      `${(durationMs / 1000).toFixed(1)} s\n\n` +
      poolTable(metrics, out, [
        [
          'spill root',
          leftovers.length === 0
            ? `empty at the end; ${box.dir} removed`
            : out.red(`left behind: ${leftovers.join(', ')}`),
        ],
      ]) +
      out.dim(WHAT_IT_SHOWS),
  );
}

/**
 * The table in words, for someone who has never seen a Flink task restart: what a loop is and
 * what the two zero lines prove.
 */
const WHAT_IT_SHOWS = `
  What this shows: when a Flink task fails while it restores its in-flight data, it is
  restarted and restores again (a recovery-failure loop). Most recoveries above had one fault
  injected at one step — reading the checkpoint, building the drainer, draining into the
  channels, a cancel, a crash of a consumer — and ended as it would in production.
    leaked files 0   no spill file of any ending survived it (Flink can leave them behind)
    masked causes 0  every failure was reported with the fault that caused it, never with a
                     cleanup error that came after it
  Next: 'spillway tour' shows a real Flink checkpoint; 'spillway demo --help' lists the faults.
`;

/**
 * The run's exit code, with its closing line: cancelled by a signal (128+n when clean), cut
 * short by a closed output (1), failed (1) or clean (0); with `--inspect` the server keeps
 * serving until Ctrl-C first.
 */
async function exitCode(
  io: Io,
  args: DemoArgs,
  { metrics, leftovers, clean }: Outcome,
  signals: SignalScope,
  outputGone: AbortSignal,
  stop: AbortSignal,
  inspector: InspectorServer | undefined,
): Promise<number> {
  const err = styleFor(io.err);
  if (signals.exitCode !== undefined) {
    io.err.write(
      `spillway demo: cancelled by ${signals.signal.reason} after ${metrics.loops} recoveries; ` +
        `${clean ? 'every task cleaned up, spill root removed' : 'NOT clean (see above)'}\n`,
    );
    return clean ? signals.exitCode : 1;
  }
  // Cut short with no one left to tell: not a success, whatever the loops so far showed.
  if (outputGone.aborted && metrics.loops < args.loops) return 1;
  if (!clean) {
    io.err.write(
      `spillway demo: ${err.red('FAILED')}: ${metrics.leakedFiles + leftovers.length} leaked, ` +
        `${metrics.maskedCauses} masked, ${metrics.deliveryErrors} delivery errors\n`,
    );
  }
  if (inspector) {
    io.err.write(`spillway demo: inspector still serving at ${inspector.url} — Ctrl-C to exit\n`);
    await new Promise<void>((resolve) => {
      if (stop.aborted) resolve();
      else stop.addEventListener('abort', () => resolve(), { once: true });
    });
  }
  return clean ? 0 : 1;
}
