/**
 * `spillway demo` (the default command, `npm start`): a pooled TaskManager in recovery-failure
 * loops with every fault kind injected, on a private temp spill root, showing live that no
 * spill file piles up and no failure is reported with the wrong cause.
 */
import { ALL_FAULTS, FAULT_DESCRIPTIONS, FAULT_KINDS, type FaultKind } from '../pool/faults.ts';
import { intOption, numberOption, parse, stringOption, UsageError } from './args.ts';
import { mib, printJson, type Io } from './io.ts';
import { trapSignals } from './signals.ts';
import type { InspectorServer } from '../../inspector/server.ts';
import { openSandbox } from './pool-sandbox.ts';
import { PoolProgress, poolClean, poolTable, styleFor } from './pool-view.ts';

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

/**
 * `--inspect` / `--inspect=PORT` (node's parseArgs has no optional values): taken out of argv
 * before parsing.
 */
function takeInspect(argv: string[]): { rest: string[]; port: number | undefined } {
  let port: number | undefined;
  const rest: string[] = [];
  for (const [i, arg] of argv.entries()) {
    if (arg === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    const m = /^--inspect(?:=(.*))?$/.exec(arg);
    if (m === null) {
      rest.push(arg);
      continue;
    }
    const raw = m[1];
    if (raw === undefined) port = 0;
    else if (/^\d{1,5}$/.test(raw) && Number(raw) <= 65535) port = Number(raw);
    else throw new UsageError(`--inspect=PORT needs a port 0..65535, got '${raw}'`);
  }
  return { rest, port };
}

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

export async function run(argv: string[], io: Io): Promise<number> {
  const { rest, port } = takeInspect(argv);
  const { values } = parse(rest, {
    tasks: { type: 'string' },
    loops: { type: 'string' },
    'state-mb': { type: 'string' },
    faults: { type: 'string' },
    seed: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (values.help) {
    io.out.write(usage);
    return 0;
  }
  const tasks = intOption(values, 'tasks', DEFAULTS.tasks, { min: 1, max: 256 });
  const loops = intOption(values, 'loops', DEFAULTS.loops, { min: 1, max: 10_000_000 });
  const stateMb = numberOption(values, 'state-mb', DEFAULTS.stateMb);
  if (stateMb <= 0 || stateMb > 4096) {
    throw new UsageError(`--state-mb must be more than 0 and at most 4096, got ${stateMb}`);
  }
  const faults = parseFaults(stringOption(values, 'faults') ?? 'all');
  const seed = intOption(values, 'seed', DEFAULTS.seed, { max: 2 ** 32 - 1 });
  const json = values.json === true;
  const err = styleFor(io.err);

  const signals = trapSignals();
  // A closed terminal or reader (EIO, EPIPE on stdout or stderr) leaves no one to watch: the run
  // stops as on a signal, so its temp dir goes now rather than after every remaining loop.
  const outputGone = new AbortController();
  const onOutputError = (e: Error) => {
    if (!outputGone.signal.aborted) outputGone.abort(e);
  };
  io.out.on('error', onOutputError);
  io.err.on('error', onOutputError);
  const stop = AbortSignal.any([signals.signal, outputGone.signal]);
  let server: InspectorServer | undefined;
  try {
    if (port !== undefined) {
      // Loaded only with --inspect: the demo itself needs none of the inspector's modules.
      const mod = await import('../../inspector/server.ts');
      try {
        server = await mod.startInspectorServer({ port });
      } catch (e) {
        throw new UsageError(`--inspect: ${(e as Error).message}`);
      }
      io.err.write(`spillway demo: live inspector at ${err.bold(server.url)}\n`);
    }
    const inspector = server;

    const started = performance.now();
    const box = await openSandbox({
      name: 'demo',
      tasks,
      stateMb,
      faults,
      seed,
      rescaled: true,
      ...(inspector ? { inspect: (e) => inspector.inspect(e) } : {}),
    });
    const progress = new PoolProgress(io.err);
    if (progress.enabled && !json) {
      io.err.write(
        `spillway demo: ${tasks} task slots, ${loops} recoveries of a ${mib(box.checkpoint.payloadBytes)} ` +
          `checkpoint in one spill root, ${faults.length} fault kinds injected (seed ${seed}); ` +
          `odd slots restore rescaled, as subtask 0 of 2\n`,
      );
    }
    let ticks = 0;
    const tick = () => {
      const m = box.pool.metrics;
      progress.update(m, loops);
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
      metrics = await box.pool.run(loops, { signal: stop });
    } finally {
      clearInterval(timer);
      progress.done();
      ({ leftovers } = await box.close());
    }
    inspector?.publishMetrics({ files: 0, bytes: 0, liveTasks: 0 });
    const durationMs = Math.round(performance.now() - started);
    const clean = poolClean(metrics) && leftovers.length === 0;

    if (json) {
      printJson(io, {
        recoveries: metrics.loops,
        outcomes: metrics.outcomes,
        faults: metrics.faults,
        abortPaths: metrics.abortPaths,
        leakedFiles: metrics.leakedFiles + leftovers.length,
        maskedCauses: metrics.maskedCauses,
        deliveryErrors: metrics.deliveryErrors,
        faultsMissed: metrics.faultsMissed,
        checkpointsVerified: metrics.checkpointsVerified,
        bytesDelivered: metrics.bytesDelivered,
        spillFilesWritten: metrics.spillFilesWritten,
        peakLiveFiles: metrics.peakLiveFiles,
        peakLiveBytes: metrics.peakLiveBytes,
        spillRootClean: leftovers.length === 0,
        interrupted: signals.exitCode !== undefined,
        tasks,
        stateBytes: box.checkpoint.payloadBytes,
        seed,
        durationMs,
        ...(metrics.problems.length > 0 ? { problems: metrics.problems } : {}),
      });
    } else {
      const out = styleFor(io.out);
      io.out.write(
        `\n${out.bold('spillway demo')}  ${tasks} task slots · ${metrics.loops} recoveries · ` +
          `${mib(box.checkpoint.payloadBytes)} checkpoint · seed ${seed} · ` +
          `${(durationMs / 1000).toFixed(1)} s\n\n` +
          poolTable(metrics, out, [
            [
              'spill root',
              leftovers.length === 0
                ? `empty at the end; ${box.dir} removed`
                : out.red(`left behind: ${leftovers.join(', ')}`),
            ],
          ]),
      );
    }

    if (signals.exitCode !== undefined) {
      io.err.write(
        `spillway demo: cancelled by ${signals.signal.reason} after ${metrics.loops} recoveries; ` +
          `${clean ? 'every task cleaned up, spill root removed' : 'NOT clean (see above)'}\n`,
      );
      return clean ? signals.exitCode : 1;
    }
    // Cut short with no one left to tell: not a success, whatever the loops so far showed.
    if (outputGone.signal.aborted && metrics.loops < loops) return 1;
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
  } finally {
    io.out.off('error', onOutputError);
    io.err.off('error', onOutputError);
    signals.dispose();
    await server?.close();
  }
}
