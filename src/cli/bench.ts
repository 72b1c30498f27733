/** `spillway bench [--json] [--quick] [--runs N] [--growth] [--svg FILE]` */
import { tmpdir } from 'node:os';
import {
  FULL_GROWTH,
  QUICK_GROWTH,
  type GrowthFigures,
  type GrowthOptions,
} from '../../bench/growth.ts';
import type { RatioFigures } from '../../bench/ratios.ts';
import {
  FULL,
  QUICK,
  TARGETS,
  runBench,
  type BenchDetails,
  type BenchResult,
} from '../../bench/run.ts';
import type { FigureName } from '../../bench/result.ts';
import type { Spread } from '../../bench/stats.ts';
import { intOption, parse, stringOption, UsageError } from './args.ts';
import { printJson, ProgressLine, table, type Io } from './io.ts';
import { trapSignals } from './signals.ts';

export const usage = `usage: spillway bench [--json] [--quick] [--runs N] [--growth] [--svg FILE]

Measures Spillway against the least work that gives the same result on this machine, side by
side in one run, as ratios (each the median of N alternating runs, with min and max):
  recoverAllVsJvm     spillway recover --all of a real Flink checkpoint ÷ a JVM program doing
                      the same with Flink's own classes (null where java/the harness is absent);
                      beside it the floor of any recovery that spills (the same reads, CRCs
                      and writes in synchronous loops) ÷ the JVM, and recover --all ÷ that floor
  lsVsJvm             spillway flink ls ÷ the JVM loading the same _metadata
  e2eRecoverVsDdTmpfs the spillway recover process (default flags) of 1 GiB ÷ dd bs=1M of the
                      same I/O, everything on a tmpfs (root only; null where refused)
  e2eRecoverVsDd      the same on disk, nothing synced (as a user runs it)
  spillVsCrcWrite     a 512 KiB copy loop that also CRC-32s every byte (the product's CRC) ÷ the
                      fetch stage (checkpoint → spill files): the floor of the same work
  drainVsCrcRead      512 KiB reads of the spill files that CRC-32 every byte ÷ the drain
  …CrcWriteTmpfs, …CrcReadTmpfs  the same on a tmpfs
  spillVsRawWrite, drainVsRawRead (and …Tmpfs)  the same against plain I/O (no checksum)
  flinkVsSpwc         fetch of an SPWC file ÷ fetch of a Flink checkpoint holding the same bytes
  flinkRecordsVsRecover flink records (no --type) ÷ recover --out, same Flink checkpoint (CLI)
  filteringVsSpilling fetch spilling verbatim ÷ fetch through the rescaling filter (same v2 bytes)
  channelsVsFloorTmpfs the recover process of 262,144 one-byte channels on a tmpfs ÷ a process
                      creating as many one-byte files with a synchronous open/write/close loop
  channelsPeakRssMiB  that recovery's peak RSS (MiB)
  cancelCleanupP99Ms  cancel → task dir gone, p99 of 50 cancels at random moments (ms)
  importVsNode        node -e "import('spillway')" ÷ node -e '' (wall time)
  startupVsNode       spillway --help ÷ node -e '' (wall time)
  recoverVsPlain      plain async fetch + drain (no XState) ÷ full recovery (and …Tmpfs)
  peakRssMiBAt2GiB    peak RSS of a child process recovering a 2 GiB checkpoint (MiB)
  tuple3DecodeMPerSec million Flink Tuple3<Long,Integer,String> records decoded per second
  skipped             why each null figure is null, by its name
The floors are the fastest known way on this machine: synchronous 512 KiB preads and writes (as
dd does), dd itself, a synchronous file-creation loop. Nothing is synced before a timed step.
Besides, in the details: an s3:// read from a local S3 server ÷ a plain ranged GET of the same
object through the same server.

It makes its own data under $TMPDIR (or the OS temp dir) and deletes all of it afterwards; a full
run needs about 4.5 GiB free there (17 GiB with --growth) and takes several minutes.

  --json      one JSON object: the figures above, in that order; ratios are {median, min, max}
  --quick     tiny sizes and one run (seconds; a smoke test, not a measurement).
              SPILLWAY_BENCH_QUICK=1 does the same.
  --runs N    alternating runs per ratio (default 7, at least 5; 1 with --quick)
  --growth    also how cost grows: 0.25–8 GiB of state, 1–64 concurrent tasks, 1–262,144
              channels against creating that many files (--json then adds a "growth" key)
  --svg FILE  with --growth, write the plot there
`;

function fmt(s: Spread | null, unit = ''): string {
  if (s === null) return 'skipped';
  return `${s.median.toFixed(2)}${unit} (${s.min.toFixed(2)}–${s.max.toFixed(2)})`;
}

function verdict(key: FigureName, value: number | undefined): string {
  const t = TARGETS[key];
  if (value === undefined || t === undefined) return ''; // a figure printed beside another
  const ok = t.op === '≥' ? value >= t.value : value <= t.value;
  return `${t.op} ${t.value}  ${ok ? 'met' : 'MISSED'}`;
}

function ratioRows(name: string, r: RatioFigures | { skipped: string }): [string, string][] {
  if ('skipped' in r) return [[name, `skipped: ${r.skipped}`]];
  const t = r.throughput;
  const m = (s: Spread) => `${s.median.toFixed(0)}`;
  return [
    [
      `${name} MiB/s`,
      `raw copy ${m(t.rawCopy)} · fetch ${m(t.fetch)} · raw read ${m(t.rawRead)} · drain ${m(t.drain)} · ` +
        `crc32 ${m(t.crc32)} · crc copy ${m(t.crcCopy)} · crc read ${m(t.crcRead)} · ` +
        `plain ${m(t.plain)} · full ${m(t.full)}`,
    ],
    [
      `${name} runs`,
      `spill/crc ${r.runs.spillVsCrcWrite.join(' ')} · drain/crc ${r.runs.drainVsCrcRead.join(' ')} · ` +
        `recover ${r.runs.recoverVsPlain.join(' ')}`,
    ],
  ];
}

/** What the command line asks for; `undefined` for `--help`. */
interface BenchArgs {
  json: boolean;
  quick: boolean;
  preset: typeof FULL;
  runs: number;
  growth: GrowthOptions | undefined;
}

function parseArgs(argv: string[]): BenchArgs | undefined {
  const { values } = parse(argv, {
    json: { type: 'boolean' },
    quick: { type: 'boolean' },
    runs: { type: 'string' },
    growth: { type: 'boolean' },
    svg: { type: 'string' },
  });
  if (values.help) return undefined;
  const quick = values.quick === true || process.env.SPILLWAY_BENCH_QUICK === '1';
  const preset = quick ? QUICK : FULL;
  const runs = intOption(values, 'runs', preset.runs, { min: 1, max: 100 });
  if (!quick && runs < 5 && values.runs !== undefined) {
    throw new UsageError('--runs must be at least 5 for a real measurement (or use --quick)');
  }
  const svg = stringOption(values, 'svg');
  if (svg !== undefined && values.growth !== true) throw new UsageError('--svg needs --growth');
  const growth =
    values.growth === true ? { ...(quick ? QUICK_GROWTH : FULL_GROWTH), svg } : undefined;
  return { json: values.json === true, quick, preset, runs, growth };
}

export async function run(argv: string[], io: Io): Promise<number> {
  const args = parseArgs(argv);
  if (args === undefined) {
    io.out.write(usage);
    return 0;
  }
  const signals = trapSignals();
  const progress = new ProgressLine(io);
  try {
    const { result, details: d } = await runBench({
      ...args.preset,
      runs: args.runs,
      growth: args.growth,
      tmpRoot: tmpdir(),
      signal: signals.signal,
      progress: (fraction, text) => progress.update(fraction, text),
    });
    progress.done();
    if (args.json) {
      printJson(io, d.growth === undefined ? result : { ...result, growth: d.growth });
      return 0;
    }
    io.out.write(report(args, result, d));
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

/** The human report: the figures against their targets, then what is behind them. */
function report(args: BenchArgs, result: BenchResult, d: BenchDetails): string {
  return (
    `spillway bench${args.quick ? ' --quick (smoke sizes: not a measurement)' : ''}: ${args.runs} alternating run(s), ` +
    `${d.checkpoint.payloadMiB} MiB checkpoint (${d.checkpoint.entries} entries, ` +
    `${d.checkpoint.channels} channels, ${d.disk.spillFiles} spill files)\n\n` +
    table(figureRows(result)) +
    '\nbehind the figures (medians):\n' +
    table([
      ...ratioRows('disk', d.disk),
      ...ratioRows('tmpfs', d.tmpfs),
      ...detailRows(d),
      ...(d.growth === undefined ? [] : growthRows(d.growth)),
      ['load average', `${d.load[0]} at start, ${d.load[1]} at end (2 cores)`],
      ['took', `${(d.durationMs / 1000).toFixed(1)} s`],
    ])
  );
}

/** One row a figure: its median (min–max) and whether it met its target. */
function figureRows(result: BenchResult): [string, string][] {
  const rows: [string, string][] = [['figure', 'median (min–max)    target']];
  const { skipped, ...figures } = result;
  for (const key of Object.keys(figures) as FigureName[]) {
    const v = figures[key];
    const shown = typeof v === 'number' ? v.toFixed(1) : fmt(v);
    const why = skipped[key] === undefined ? '' : ` (${skipped[key]})`;
    rows.push([key, `${shown}${why}    ${verdict(key, typeof v === 'number' ? v : v?.median)}`]);
  }
  return rows;
}

/** The measurements behind the single figures: cancel, RSS, end-to-end, start-up, readers. */
function detailRows(d: BenchDetails): [string, string][] {
  return [
    [
      'cancel → dir gone',
      `median ${d.cancel.ms.median.toFixed(1)} ms, max ${d.cancel.ms.max.toFixed(1)} ms over ${d.cancel.samples} cancels; ` +
        `${d.cancel.filesPerRecovery} files per recovery; stages ${JSON.stringify(d.cancel.stages)}`,
    ],
    [
      'rss child',
      `${d.rss.peakMiB.toFixed(1)} MiB peak, ${d.rss.baselineMiB.toFixed(1)} MiB with nothing recovered; ` +
        `${(d.rss.bytes / 1024 ** 2).toFixed(0)} MiB in ${(d.rss.ms / 1000).toFixed(1)} s`,
    ],
    [
      'recover vs dd',
      `${fmt(d.e2e.recoverMs, ' ms')} vs ${fmt(d.e2e.ddMs, ' ms')} (${d.options.e2eMb} MiB, 32 channels)`,
    ],
    [
      'recover vs dd, tmpfs',
      'skipped' in d.e2eTmpfs
        ? `skipped: ${d.e2eTmpfs.skipped}`
        : `${fmt(d.e2eTmpfs.recoverMs, ' ms')} vs ${fmt(d.e2eTmpfs.ddMs, ' ms')}; entries ≤ 32 KiB: ` +
          `${fmt(d.e2eTmpfs.flinkSizedEntries.ratio)} (${fmt(d.e2eTmpfs.flinkSizedEntries.recoverMs, ' ms')})`,
    ],
    ['start-up', `${fmt(d.startup.spillwayMs, ' ms')} vs node ${fmt(d.startup.nodeMs, ' ms')}`],
    [
      'rescale 0/2 fetch',
      `${fmt(d.filtering.filtering, ' MiB/s')} vs ${fmt(d.filtering.spilling, ' MiB/s')} unfiltered; ` +
        `${d.filtering.kept} of ${d.filtering.records} records kept`,
    ],
    [
      'Flink vs SPWC fetch',
      `${fmt(d.flink.flinkMiBs, ' MiB/s')} vs ${fmt(d.flink.spwcMiBs, ' MiB/s')} (${d.flink.entries} entries)`,
    ],
    [
      'Flink records',
      `${fmt(d.records.recordsMs, ' ms')} vs recover ${fmt(d.records.recoverMs, ' ms')} ` +
        `(${d.records.checkpointMiB} MiB, ${d.records.checkpointRecords} records); ` +
        `Tuple3 decode ${fmt(d.records.decodePerSec, '/s')}`,
    ],
    ['JVM peer', peerRow(d.peer)],
    [
      's3:// vs ranged GET',
      'skipped' in d.remote
        ? `skipped: ${d.remote.skipped}`
        : `${fmt(d.remote.s3VsRangedGet)} (goal ≥ 0.85; ${fmt(d.remote.throughput.spillway, ' MiB/s')} vs ` +
          `${fmt(d.remote.throughput.rangedGet, ' MiB/s')}, ${d.remote.objectMiB} MiB through a local s3rver)`,
    ],
  ];
}

/** `recover --all` and `flink ls` against the JVM: times, the JVM's own read, peak RSS. */
function peerRow(p: BenchDetails['peer']): string {
  if ('skipped' in p) return `skipped: ${p.skipped}`;
  const mib = (v: number | null) => (v === null ? '?' : `${v.toFixed(0)} MiB`);
  const { peakRssMiB: rss, checkpoint: c } = p;
  return (
    `recover --all ${fmt(p.recoverAllMs, ' ms')} vs JVM ${fmt(p.jvmExtractMs, ' ms')} ` +
    `(its own read ${fmt(p.jvmReadMs, ' ms')}), peak RSS ${mib(rss.recoverAll)} vs ${mib(rss.jvmExtract)}; ` +
    `the floor of a recovery that spills ${fmt(p.recoverAllFloorMs, ' ms')} ` +
    `(${fmt(p.recoverAllFloorVsJvm, '')} of the JVM; recover --all ${fmt(p.recoverAllVsFloor, '')} of it); ` +
    `flink ls ${fmt(p.lsMs, ' ms')} vs JVM ${fmt(p.jvmMetadataMs, ' ms')} ` +
    `(its own load ${fmt(p.jvmMetadataLoadMs, ' ms')}), peak RSS ${mib(rss.ls)} vs ${mib(rss.jvmMetadata)}; ` +
    `real Flink checkpoint ${(c.bytes / 1024 ** 2).toFixed(0)} MiB, ${c.entries} entries, made in ${c.makeSeconds} s`
  );
}

/** With `--growth`: one row per state size, task count and channel count. */
function growthRows(growth: GrowthFigures): [string, string][] {
  const rows: [string, string][] = [];
  for (const s of growth.state) {
    rows.push([
      `${s.mb} MiB of state`,
      `${(s.ms / 1000).toFixed(1)} s (${s.msPerGiB} ms/GiB), peak RSS ${s.peakRssMiB} MiB`,
    ]);
  }
  for (const t of growth.tasks) {
    rows.push([
      `${t.tasks} task(s) at once`,
      `peak RSS ${t.peakRssMiB} MiB, ${t.rssPerTaskMiB} MiB per task, ${(t.ms / 1000).toFixed(1)} s`,
    ]);
  }
  for (const c of growth.channels) {
    rows.push([
      `${c.channels} channel(s)`,
      `${(c.recoverMs / 1000).toFixed(1)} s = ${c.vsFloor}× creating ${c.channels} files ` +
        `(${(c.floorMs / 1000).toFixed(1)} s), peak RSS ${c.peakRssMiB} MiB`,
    ]);
  }
  return rows;
}
