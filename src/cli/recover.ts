/**
 * `spillway recover CHECKPOINT --out DIR [--spill-root DIR] [--max-spill-file-bytes N] [--overwrite] [--rescale I/P[/M]] [--key-bytes K] [--json]`,
 * and for a Flink checkpoint `--operator OP --subtask N [--output-state] [--key …] [--allow-path DIR]… [--relocate FROM=TO]…`.
 */
import { OPTION_RANGES } from '../services/option-ranges.ts';
import type { DirectoryReport, RecoverToDirectoryOptions } from '../recover-to-directory.ts';
import { runRecoveryToDirectory } from '../recover-to-directory-run.ts';
import { join } from 'node:path';
import type { SideRequest } from '../services/outputs/recover-to-directory.ts';
import { redactLocation } from '../services/locations/redact.ts';
import { remoteOptionsFromEnv } from './remote-env.ts';
import { intOption, parse, stringOption, UsageError } from './args.ts';
import { mib, printJson, table, type Io } from './io.ts';
import { trapSignals, type SignalScope } from './signals.ts';
import { reportError } from './errors.ts';
import { oneLine } from './terminal-text.ts';
import { RecoverProgress, type RunProgress } from './progress-text.ts';
import { SidesProgress } from './sides-progress.ts';
import type { FlinkKey } from '../services/formats/flink/entry-source.ts';
import { unitFields, whoText } from './recover-report.ts';
import {
  recordRows,
  refuseV1ForRescale,
  rescaleFromArgs,
  rescaleOptionSpec,
  rescaleUsage,
} from './rescale-arg.ts';
import { flinkFromArgs, flinkHint, flinkOptionSpec, flinkUsage } from './flink-arg.ts';
import {
  inspectUsage,
  withRecoveryInspector,
  type RecoveryInspector,
  type WatchAbout,
} from './recover-inspect.ts';

const MIB = 1024 * 1024;

export const usage = `usage: spillway recover CHECKPOINT --out DIR [--spill-root DIR] [--max-spill-file-bytes N]
                        [--overwrite] [--rescale I/P[/M] | --rescale P] [--key-bytes K]
                        [--s3-endpoint URL] [--inspect[=PORT] [--inspect-hold SECONDS]
                        [--wait-for-page]] [--json]
       spillway recover FLINK-CHECKPOINT --operator OP --subtask N --out DIR [--output-state]
                        [--allow-path DIR]... [--relocate FROM=TO]... [other options as above]
       spillway recover FLINK-CHECKPOINT --operator OP --rescale I/P[/M] | P --key long|int|bytes:K
                        [--upstream GATE=OP]... --out DIR [...]
       spillway recover FLINK-CHECKPOINT --all --out DIR [...]

Recovers the channel state in CHECKPOINT (SPWC: a path, an http(s):// URL, a presigned URL,
or s3://bucket/key) through fetch → gap → drain and writes
DIR/gate-<g>-channel-<c>.bin per channel. Spill files go to --spill-root (default
$SPILLWAY_SPILL_ROOT, then the OS temp dir) and are gone when the command ends.

The channel files are written into a private staging dir inside DIR and moved into place only
when the whole recovery succeeded: a failed or cancelled run leaves DIR as it found it, and no
link found in DIR is ever written through.

  --out DIR      where the channel files go (created if missing; required)
  --spill-root DIR
                 where spill files go while the recovery runs (default $SPILLWAY_SPILL_ROOT,
                 then the OS temp dir); nothing of this run is left there afterwards
  --max-spill-file-bytes N
                 rotate spill files at N bytes (default 64M); a number with an optional
                 K, M or G suffix (1024-based): 4M, 512K, 1G
  --overwrite    replace channel files DIR already holds (by rename: a link there is replaced,
                 never followed); without it such a DIR is refused
${rescaleUsage}${flinkUsage}  --s3-endpoint URL  an S3-compatible store for s3:// (path-style); credentials come from the
                 standard AWS chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, profiles, roles)
${inspectUsage}  --json         one JSON object on stdout

Progress goes to stderr: on a terminal one bar over the whole recovery (percent, stage bytes,
rate, elapsed, ETA, channels delivered) fitted to its width; elsewhere, or narrower than 40
columns, plain lines (one per stage change, at most one every 5 s otherwise); none with --json
off a terminal.

A remote read survives a flaky network: a reset, a 5xx, a stalled or truncated body is resumed
with a ranged request from the next unread byte (SPILLWAY_REMOTE_RETRIES in a row, default 6;
SPILLWAY_REMOTE_STALL_MS, default 30000, also for headers; SPILLWAY_REMOTE_DEADLINE_MS, default
1800000, a hard bound on the whole read). An object that changed meanwhile fails the recovery,
never spliced (without a strong ETag a resume re-reads and proves the bytes already read); an
encoded answer (Content-Encoding) is refused. Query strings and credentials are never printed.

Exit codes: 0 ok · 1 recovery failed (also: access denied, retries exhausted, deadline passed,
the object changed while it was read) · 2 bad input or usage (also: no such object or bucket, a
server that answers encoded bytes or no size) · 128+n after signal n
(129 HUP, 130 INT, 131 QUIT, 140 USR2, 142 ALRM, 143 TERM: cancelled, cleaned up)
`;

/** What the command line asks for, checked as far as it can be without touching anything. */
interface RecoverArgs {
  checkpoint: string;
  /** The checkpoint as printed: a URL's query string and credentials redacted. */
  shown: string;
  outDir: string;
  spillRoot: string | undefined;
  maxSpillFileBytes: number;
  overwrite: boolean;
  json: boolean;
  flink: ReturnType<typeof flinkFromArgs>;
  /** `--all`: every operator and subtask of a Flink checkpoint. */
  all: boolean;
  rescale: ReturnType<typeof rescaleFromArgs>;
  remote: ReturnType<typeof remoteOptionsFromEnv>;
}

export const run = (argv: string[], io: Io): Promise<number> =>
  withRecoveryInspector(argv, io, (rest, inspector) => recover(rest, io, inspector));

async function recover(argv: string[], io: Io, inspector: RecoveryInspector): Promise<number> {
  const args = parseArgs(argv);
  if (args === 'help') {
    io.out.write(usage);
    return 0;
  }
  const signals = trapSignals((line) => io.err.write(line));
  // A bar on a terminal (with --json too: it erases itself), plain lines on a non-terminal
  // stderr unless --json asked for machine output only. `--all` and `--output-state` run
  // several recoveries, two at a time: each side then has its own bar and label.
  const shown = io.err.isTTY === true || !args.json;
  const sides = args.all || args.flink?.outputState === true;
  const progress: RunProgress | undefined = !shown
    ? undefined
    : sides
      ? new SidesProgress(io, 'recover', !args.json)
      : new RecoverProgress(io, 'recover');
  try {
    if (args.flink === undefined && args.rescale !== undefined) {
      await refuseV1ForRescale(args.checkpoint, args.shown);
    }
    const report = await runRecoveryToDirectory(libraryOptions(args, signals.signal, io, shown), {
      startOptions: inspector.options,
      watch: (recovery, request) => inspector.watch(recovery, aboutOf(args, request)),
      progressOf: (request) => progress?.of(request),
      onOnlyOutputState: (subpartitions) => {
        throw new UsageError(
          `operator ${args.flink?.operator ?? ''} subtask ${args.flink?.subtask ?? 0} has no ` +
            `input-channel state, only output state (${subpartitions} subpartition(s)): add ` +
            `--output-state to recover it`,
        );
      },
    }).catch(async (error: unknown) => {
      // An SPWC read of a Flink checkpoint: say to pick an operator, not "bad magic".
      throw args.flink === undefined ? await flinkHint(args.checkpoint, error, args.remote) : error;
    });
    progress?.done();
    printResult(io, args, report);
    warnIfNoRecordKept(io, args, report);
    // Past the commit point the run is done: a signal that arrived since is not a cancel.
    return 0;
  } catch (error) {
    progress?.done();
    return reportFailure(io, error, args, signals);
  } finally {
    signals.dispose();
  }
}

/** The options, parsed and checked (usage errors: exit 2), or `'help'`. */
function parseArgs(argv: string[]): RecoverArgs | 'help' {
  const { values, positionals } = parse(
    argv,
    {
      out: { type: 'string' },
      'spill-root': { type: 'string' },
      'max-spill-file-bytes': { type: 'string' },
      overwrite: { type: 'boolean' },
      's3-endpoint': { type: 'string' },
      json: { type: 'boolean' },
      ...rescaleOptionSpec,
      ...flinkOptionSpec,
    },
    1,
  );
  if (values.help) return 'help';
  const checkpoint = positionals[0];
  if (checkpoint === undefined) throw new UsageError('missing CHECKPOINT');
  const outDir = stringOption(values, 'out');
  if (outDir === undefined) throw new UsageError('missing --out DIR');
  if (outDir === '') throw new UsageError('--out must not be empty');
  const maxSpillFileBytes = intOption(
    values,
    'max-spill-file-bytes',
    64 * 1024 * 1024,
    OPTION_RANGES['limits.maxSpillFileBytes'],
  );
  const flink = flinkFromArgs(values);
  const rescale = rescaleFromArgs(values, flink !== undefined);
  return {
    checkpoint,
    shown: redactLocation(checkpoint),
    outDir,
    spillRoot: stringOption(values, 'spill-root'),
    maxSpillFileBytes,
    overwrite: values.overwrite === true,
    json: values.json === true,
    flink,
    all: values.all === true,
    rescale,
    remote: remoteOptionsFromEnv(process.env, stringOption(values, 's3-endpoint')),
  };
}

/** The library's options for the recovery into `--out`. */
function libraryOptions(
  args: RecoverArgs,
  signal: AbortSignal,
  io: Io,
  progress: boolean,
): RecoverToDirectoryOptions {
  return {
    checkpoint: args.checkpoint,
    out: args.outDir,
    overwrite: args.overwrite,
    log: (line) =>
      void (process.env.SPILLWAY_DEBUG ? io.err.write(`${oneLine(line)}\n`) : undefined),
    notice: (line) => void io.err.write(`${oneLine(line)}\n`),
    spillRoot: args.spillRoot,
    signal,
    // Large buffers for a sink that copies into files: one per 1 MiB instead of per 32 KiB,
    // 1/32 of the per-buffer work, which was most of recover's cost over dd's on a tmpfs.
    // Reads stay at 1 MiB: 4 MiB reads raised the peak RSS of 256 MiB entries from 120 to
    // 165 MiB (over G8's 160 MiB goal) and were no faster here.
    limits: { maxSpillFileBytes: args.maxSpillFileBytes, bufferBytes: MIB },
    // Each recovery's onProgress comes from the progress display (the runner's progressOf).
    ...(progress ? { progressIntervalMs: 200 } : {}),
    ...(args.rescale !== undefined ? { rescale: args.rescale } : {}),
    ...(args.flink !== undefined ? { flink: args.flink } : {}),
    ...(args.all ? { all: true } : {}),
    remote: args.remote,
  };
}

/** The JSON object, or the table on stderr, and a notice of stale files DIR also holds. */
function printResult(io: Io, args: RecoverArgs, directory: DirectoryReport): void {
  const { total: report, retries, replaced, stale } = directory;
  const { outDir, shown } = args;
  const result = {
    checkpoint: shown,
    out: outDir,
    channels: report.channels,
    bytes: report.bytesDelivered,
    spillFiles: report.spillFiles,
    spilledBytes: report.spilledBytes,
    entries: report.entries,
    replaced: replaced.length,
    staleFiles: stale,
    durationMs: report.durationMs,
    ...(report.records !== undefined ? { records: report.records } : {}),
    retries,
    ...unitFields(directory),
  };
  if (args.json) printJson(io, result);
  else {
    io.err.write(
      `recovered ${oneLine(shown)}${oneLine(whoText(directory))}\n` +
        table([
          ['channels', result.channels],
          ['bytes', `${result.bytes} (${mib(result.bytes)})`],
          ['spill files', result.spillFiles],
          ['spilled', mib(result.spilledBytes)],
          ...recordRows(report.records),
          ['time', `${result.durationMs} ms`],
          ...(result.retries > 0 ? [['retries', result.retries] as [string, number]] : []),
          ['out', oneLine(outDir)],
          ...(replaced.length > 0 ? [['replaced', replaced.length] as [string, number]] : []),
        ]),
    );
  }
  if (stale.length > 0) {
    // Never deleted (they are not this run's), but never silently mixed in either.
    io.err.write(
      `spillway recover: ${oneLine(outDir)} also holds ${stale.length} channel file(s) this ` +
        `checkpoint does not name, left as they were: ${oneLine(stale.slice(0, 3).join(', '))}` +
        `${stale.length > 3 ? ', …' : ''}\n`,
    );
  }
}

/** The exit code of a failed or cancelled run, and its one line (or `--json` object). */
function reportFailure(io: Io, error: unknown, args: RecoverArgs, signals: SignalScope): number {
  if (signals.exitCode !== undefined) {
    // Cancelled by a signal: cleanup is done; its consequences are not news to the user.
    io.err.write(
      `spillway recover: cancelled by ${String(signals.signal.reason)}; spill files removed, ${oneLine(args.outDir)} as it was\n`,
    );
    return signals.exitCode;
  }
  return reportError(io, error, 'recover', args.json);
}

/**
 * A rescale that read records and kept none: most likely the key is not what `--key` (or
 * `--key-bytes`) says, so every record hashed elsewhere. Said on stderr, naming the key.
 */
function warnIfNoRecordKept(io: Io, args: RecoverArgs, { total }: DirectoryReport): void {
  const records = total.records;
  if (records === undefined || records.read === 0 || records.kept > 0) return;
  const key =
    args.flink !== undefined
      ? `--key ${keyText(args.flink.key)}`
      : `--key-bytes ${(args.rescale as { keyBytes?: number } | undefined)?.keyBytes ?? 8}`;
  io.err.write(
    `spillway recover: warning: no record of ${records.read} kept under ${key}; if the key is ` +
      `not that, every record hashed to another subtask (see --key long|int|bytes:K)\n`,
  );
}

function keyText(key: FlinkKey | undefined): string {
  return key === undefined ? 'long' : typeof key === 'string' ? key : `bytes:${key.bytes}`;
}

/** What `--inspect`'s page is told of one recovery: what it reads, and where its files grow. */
function aboutOf(args: RecoverArgs, request: SideRequest): WatchAbout {
  const flink = request.flink;
  const rescale = args.rescale as { subtask?: number; parallelism: number } | undefined;
  const subtask = request.rescaleSubtask ?? rescale?.subtask;
  return {
    checkpoint: args.shown,
    format: args.flink !== undefined ? 'flink' : 'spwc',
    ...(flink !== undefined
      ? { operator: flink.operator, subtask: flink.subtask, side: request.side }
      : {}),
    ...(rescale !== undefined ? { rescale: `${subtask ?? '*'}/${rescale.parallelism}` } : {}),
    out: request.dir === '' ? args.outDir : join(args.outDir, request.dir),
    channelFilesDir: request.stagingDir,
  };
}
