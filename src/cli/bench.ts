/** `spillway bench [--json] [--quick] [--runs N]` */
import { tmpdir } from 'node:os';
import { FULL, QUICK, TARGETS, runBench, type BenchResult } from '../../bench/run.ts';
import type { Spread } from '../../bench/stats.ts';
import { intOption, parse, UsageError } from './args.ts';
import { printJson, ProgressLine, table, type Io } from './io.ts';
import { trapSignals } from './signals.ts';

export const usage = `usage: spillway bench [--json] [--quick] [--runs N]

Measures Spillway against raw I/O on this machine, side by side in one run, as ratios:
  spillVsRawWrite     raw 1 MiB copy of the checkpoint ÷ fetch stage (checkpoint → spill files)
  drainVsRawRead      raw 1 MiB reads of the spill files ÷ drain into discarding consumers
  recoverVsPlain      plain async fetch + drain (no XState) ÷ full recovery through the machines
  cancelCleanupP99Ms  cancel → task dir gone, p99 of 50 cancels at random moments (ms)
  peakRssMiBAt2GiB    peak RSS of a child process recovering a 2 GiB checkpoint (MiB)
Each ratio is the median of N alternating runs (default 7), shown with its min and max.

It makes its own data under $TMPDIR (or the OS temp dir) and deletes all of it afterwards; a full
run needs about 4.5 GiB free there for a while and takes 1–3 minutes.

  --json      one JSON object with exactly the six keys; each ratio is {median, min, max}
  --quick     tiny sizes and one run (seconds; a smoke test, not a measurement).
              SPILLWAY_BENCH_QUICK=1 does the same.
  --runs N    alternating runs per ratio (default 7, at least 5; 1 with --quick)
`;

function fmtRatio(s: Spread): string {
  return `${s.median.toFixed(2)} (${s.min.toFixed(2)}–${s.max.toFixed(2)})`;
}

function verdict(key: keyof BenchResult, value: number): string {
  const t = TARGETS[key];
  const ok = t.op === '≥' ? value >= t.value : value <= t.value;
  return `${t.op} ${t.value}  ${ok ? 'met' : 'MISSED'}`;
}

export async function run(argv: string[], io: Io): Promise<number> {
  const { values } = parse(argv, {
    json: { type: 'boolean' },
    quick: { type: 'boolean' },
    runs: { type: 'string' },
  });
  if (values.help) {
    io.out.write(usage);
    return 0;
  }
  const quick = values.quick === true || process.env.SPILLWAY_BENCH_QUICK === '1';
  const preset = quick ? QUICK : FULL;
  const runs = intOption(values, 'runs', preset.runs, { min: 1, max: 100 });
  if (!quick && runs < 5 && values.runs !== undefined) {
    throw new UsageError('--runs must be at least 5 for a real measurement (or use --quick)');
  }
  const signals = trapSignals();
  const progress = new ProgressLine(io);
  try {
    const { result, details } = await runBench({
      ...preset,
      runs,
      tmpRoot: tmpdir(),
      signal: signals.signal,
      progress: (fraction, text) => progress.update(fraction, text),
    });
    progress.done();
    if (values.json) {
      printJson(io, result);
      return 0;
    }
    const d = details;
    const tp = d.throughput;
    const mibs = (s: Spread) =>
      `${s.median.toFixed(0)} MiB/s (${s.min.toFixed(0)}–${s.max.toFixed(0)})`;
    io.out.write(
      `spillway bench${quick ? ' --quick (smoke sizes: not a measurement)' : ''}: ${runs} alternating run(s), ` +
        `${d.checkpoint.payloadMiB} MiB checkpoint (${d.checkpoint.entries} entries, ` +
        `${d.checkpoint.channels} channels, ${d.spillFiles} spill files)\n\n` +
        table([
          ['figure', 'median (min–max)    target'],
          [
            'spillVsRawWrite',
            `${fmtRatio(result.spillVsRawWrite)}    ${verdict('spillVsRawWrite', result.spillVsRawWrite.median)}`,
          ],
          [
            'drainVsRawRead',
            `${fmtRatio(result.drainVsRawRead)}    ${verdict('drainVsRawRead', result.drainVsRawRead.median)}`,
          ],
          [
            'recoverVsPlain',
            `${fmtRatio(result.recoverVsPlain)}    ${verdict('recoverVsPlain', result.recoverVsPlain.median)}`,
          ],
          [
            'cancelCleanupP99Ms',
            `${result.cancelCleanupP99Ms.toFixed(1)} ms    ${verdict('cancelCleanupP99Ms', result.cancelCleanupP99Ms)}`,
          ],
          [
            'peakRssMiBAt2GiB',
            `${result.peakRssMiBAt2GiB.toFixed(1)} MiB    ${verdict('peakRssMiBAt2GiB', result.peakRssMiBAt2GiB)}`,
          ],
          [
            'filteringVsSpilling',
            `${fmtRatio(result.filteringVsSpilling)}    ${verdict('filteringVsSpilling', result.filteringVsSpilling.median)}`,
          ],
        ]) +
        '\nbehind the figures (medians, min–max):\n' +
        table([
          ['raw copy', mibs(tp.rawCopy)],
          ['fetch stage', mibs(tp.fetch)],
          ['raw 1 MiB read', mibs(tp.rawRead)],
          ['drain', mibs(tp.drain)],
          ['crc32 alone', mibs(tp.crc32)],
          ['plain fetch+drain', mibs(tp.plain)],
          ['full recovery', mibs(tp.full)],
          [
            'rescale 0/2 fetch',
            `${mibs(d.filtering.filtering)} vs ${mibs(d.filtering.spilling)} unfiltered; ` +
              `${d.filtering.kept} of ${d.filtering.records} records kept`,
          ],
          [
            'full − plain',
            `${d.orchestrationMs.median.toFixed(1)} ms (${d.orchestrationMs.min.toFixed(1)}–${d.orchestrationMs.max.toFixed(1)})`,
          ],
          [
            'cancel → dir gone',
            `median ${d.cancel.ms.median.toFixed(1)} ms, max ${d.cancel.ms.max.toFixed(1)} ms over ${d.cancel.samples} cancels; ` +
              `${d.cancel.filesPerRecovery} files per recovery, ${d.cancel.filesAtCancel.median} on disk at the median cancel; ` +
              `stages ${JSON.stringify(d.cancel.stages)}`,
          ],
          [
            'rss child',
            `${d.rss.peakMiB.toFixed(1)} MiB peak, ${d.rss.baselineMiB.toFixed(1)} MiB with nothing recovered; ` +
              `${(d.rss.bytes / 1024 ** 2).toFixed(0)} MiB in ${(d.rss.ms / 1000).toFixed(1)} s through ${d.rss.spillFiles} spill files`,
          ],
          [
            'every run',
            `spill ${d.runs.spillVsRawWrite.join(' ')} · drain ${d.runs.drainVsRawRead.join(' ')} · ` +
              `recover ${d.runs.recoverVsPlain.join(' ')}`,
          ],
          [
            's3:// vs ranged GET',
            'skipped' in d.remote
              ? `skipped: ${d.remote.skipped}`
              : `${fmtRatio(d.remote.s3VsRangedGet)} (goal ≥ 0.85; ${mibs(d.remote.throughput.spillway)} vs ` +
                `${mibs(d.remote.throughput.rangedGet)}, ${d.remote.objectMiB} MiB through a local s3rver)`,
          ],
          ['load average', `${d.load[0]} at start, ${d.load[1]} at end (2 cores)`],
          ['took', `${(d.durationMs / 1000).toFixed(1)} s`],
        ]),
    );
    return 0;
  } catch (error) {
    progress.done();
    if (signals.exitCode !== undefined) {
      io.err.write(`spillway bench: interrupted by ${signals.signal.reason}; temp files removed\n`);
      return signals.exitCode;
    }
    throw error;
  } finally {
    signals.dispose();
  }
}
