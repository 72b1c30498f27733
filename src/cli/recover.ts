/**
 * `spillway recover CHECKPOINT --out DIR [--spill-root DIR] [--max-spill-file-bytes N] [--overwrite] [--rescale I/P[/M]] [--key-bytes K] [--json]`,
 * and for a Flink checkpoint `--operator OP --subtask N [--output-state] [--key …] [--allow-path DIR]… [--relocate FROM=TO]…`.
 */
import { startRecovery } from '../recover.ts';
import { channelKey } from '../services/channel.ts';
import { checkCheckpointSource } from '../services/checkpoint/source.ts';
import { redactLocation } from '../services/checkpoint/redact.ts';
import { remoteOptionsFromEnv } from './remote-env.ts';
import { ChannelFileSink } from '../services/outputs/channel-files.ts';
import { OutputDir } from '../services/outputs/output-dir.ts';
import { addSuppressed } from '../services/errors.ts';
import { intOption, parse, stringOption, UsageError } from './args.ts';
import { mib, printJson, ProgressLine, table, type Io } from './io.ts';
import { trapSignals } from './signals.ts';
import { oneLine, reportError } from './errors.ts';
import { progressText } from './progress-text.ts';
import type { RecoveryProgress } from '../services/progress.ts';
import {
  recordRows,
  refuseV1ForRescale,
  rescaleFromArgs,
  rescaleOptionSpec,
  rescaleUsage,
} from './rescale-arg.ts';
import { flinkFromArgs, flinkHint, flinkOptionSpec, flinkUsage } from './flink-arg.ts';
import { planFlinkRead } from '../services/flink/entry-source.ts';
import { inspectUsage, withRecoveryInspector, type RecoveryInspector } from './recover-inspect.ts';

const MIB = 1024 * 1024;

export const usage = `usage: spillway recover CHECKPOINT --out DIR [--spill-root DIR] [--max-spill-file-bytes N]
                        [--overwrite] [--rescale I/P[/M]] [--key-bytes K] [--s3-endpoint URL]
                        [--inspect[=PORT]] [--json]
       spillway recover FLINK-CHECKPOINT --operator OP --subtask N --out DIR [--output-state]
                        [--rescale I/P[/M] --key long|int|bytes:K] [--allow-path DIR]...
                        [--relocate FROM=TO]... [other options as above]

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

export const run = (argv: string[], io: Io): Promise<number> =>
  withRecoveryInspector(argv, io, (rest, inspector) => recover(rest, io, inspector));

async function recover(argv: string[], io: Io, inspector: RecoveryInspector): Promise<number> {
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
  if (values.help) {
    io.out.write(usage);
    return 0;
  }
  const checkpoint = positionals[0];
  if (checkpoint === undefined) throw new UsageError('missing CHECKPOINT');
  const outDir = stringOption(values, 'out');
  if (outDir === undefined) throw new UsageError('missing --out DIR');
  if (outDir === '') throw new UsageError('--out must not be empty');
  const maxSpillFileBytes = intOption(values, 'max-spill-file-bytes', 64 * 1024 * 1024, { min: 1 });
  const flink = flinkFromArgs(values);
  const rescale = rescaleFromArgs(values, flink !== undefined);

  const remote = remoteOptionsFromEnv(process.env, stringOption(values, 's3-endpoint'));
  const shown = redactLocation(checkpoint);
  // Bad input is refused before anything is created (exit 2). A Flink checkpoint: its
  // operator, subtask and every file its handles name are checked here too.
  if (flink === undefined) {
    await checkCheckpointSource(checkpoint, remote).catch(async (error: unknown) => {
      throw await flinkHint(checkpoint, error, remote);
    });
    if (rescale !== undefined) await refuseV1ForRescale(checkpoint, shown);
  } else {
    await planFlinkRead(checkpoint, flink, { remote, allSubtasks: rescale !== undefined });
  }
  const out = await OutputDir.open(outDir, {
    overwrite: values.overwrite === true,
    log: (line) => void (process.env.SPILLWAY_DEBUG ? io.err.write(`${line}\n`) : undefined),
    notice: (line) => void io.err.write(`${oneLine(line)}\n`),
  });
  const sink = new ChannelFileSink(out.stagingDir);
  // A Flink recovery's output side: its own sink (files named by partition and subpartition)
  // in the same staging dir, recovered after the input side through the same lifecycle.
  const outputSink =
    flink?.outputState === true
      ? new ChannelFileSink(
          out.stagingDir,
          {},
          (info) => `partition-${info.gate}-subpartition-${info.channel}`,
        )
      : undefined;
  const signals = trapSignals((line) => io.err.write(line));
  const progress = new ProgressLine(io);
  const start = (target: ChannelFileSink, outputState: boolean) =>
    startRecovery({
      ...inspector.options,
      checkpoint,
      spillRoot: stringOption(values, 'spill-root'),
      channels: (info) => target.consumer(info),
      signal: signals.signal,
      // Large buffers for a sink that copies into files: one per 1 MiB instead of per 32 KiB,
      // 1/32 of the per-buffer work, which was most of recover's cost over dd's on a tmpfs.
      // Reads stay at 1 MiB: 4 MiB reads raised the peak RSS of 256 MiB entries from 120 to
      // 165 MiB (over G8's 160 MiB goal) and were no faster here.
      limits: { maxSpillFileBytes, bufferBytes: MIB },
      ...(progress.enabled
        ? {
            onProgress: (p: RecoveryProgress) => {
              const { fraction, text } = progressText(p);
              progress.update(fraction, text, true);
            },
            progressIntervalMs: 200,
          }
        : {}),
      ...(rescale !== undefined ? { rescale } : {}),
      ...(flink !== undefined ? { flink: { ...flink, outputState } } : {}),
      remote,
    });
  let recovery = inspector.watch(start(sink, false));
  try {
    let report;
    try {
      report = await recovery.done;
      await sink.finish();
      if (outputSink !== undefined) {
        recovery = inspector.watch(start(outputSink, true));
        const outputReport = await recovery.done;
        await outputSink.finish();
        report = sumReports(report, outputReport);
      }
      // One step (G10): a signal before its commit point undoes every move and cancels the
      // run; after it, the run is complete and a late signal changes nothing.
      await out.publish(
        [
          ...sink.channels,
          ...(outputSink?.channels ?? []).map(
            (c) => `partition-${c.gate}-subpartition-${c.channel}.bin`,
          ),
        ],
        { signal: signals.signal },
      );
    } catch (error) {
      await sink.discard().catch((e) => addSuppressed(error as Error, e));
      await outputSink?.discard().catch((e) => addSuppressed(error as Error, e));
      await out.discard().catch((e) => addSuppressed(error as Error, e));
      throw flink === undefined ? await flinkHint(checkpoint, error, remote) : error;
    }
    progress.done();
    // Sets, not nested scans: at 20,000 replaced files a scan per file took minutes. Only when
    // DIR held channel files: a set of 262,144 names is ~20 MiB that a fresh DIR never needs.
    const published = new Set(
      out.existing.length === 0
        ? []
        : [
            ...sink.channels.map((c) => `${channelKey(c)}.bin`),
            ...(outputSink?.channels ?? []).map(
              (c) => `partition-${c.gate}-subpartition-${c.channel}.bin`,
            ),
          ],
    );
    const replaced = out.existing.filter((name) => published.has(name));
    const stale = out.existing.filter((name) => !published.has(name));
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
      retries: recovery.progress().retries,
    };
    if (values.json) printJson(io, result);
    else {
      io.err.write(
        `recovered ${shown}\n` +
          table([
            ['channels', result.channels],
            ['bytes', `${result.bytes} (${mib(result.bytes)})`],
            ['spill files', result.spillFiles],
            ['spilled', mib(result.spilledBytes)],
            ...recordRows(report.records),
            ['time', `${result.durationMs} ms`],
            ...(result.retries > 0 ? [['retries', result.retries] as [string, number]] : []),
            ['out', outDir],
            ...(replaced.length > 0 ? [['replaced', replaced.length] as [string, number]] : []),
          ]),
      );
    }
    if (stale.length > 0) {
      // Never deleted (they are not this run's), but never silently mixed in either.
      io.err.write(
        `spillway recover: ${outDir} also holds ${stale.length} channel file(s) this checkpoint ` +
          `does not name, left as they were: ${stale.slice(0, 3).join(', ')}${stale.length > 3 ? ', …' : ''}\n`,
      );
    }
    // Past the commit point the run is done: a signal that arrived since is not a cancel.
    return 0;
  } catch (error) {
    progress.done();
    if (signals.exitCode !== undefined) {
      // Cancelled by a signal: cleanup is done; its consequences are not news to the user.
      io.err.write(
        `spillway recover: cancelled by ${String(signals.signal.reason)}; spill files removed, ${oneLine(outDir)} as it was\n`,
      );
      return signals.exitCode;
    }
    return reportError(io, error, 'recover', values.json === true);
  } finally {
    signals.dispose();
  }
}

/** The input side's report with the output side's counts added (`--output-state`). */
function sumReports<
  R extends {
    channels: number;
    bytesDelivered: number;
    spillFiles: number;
    spilledBytes: number;
    entries: number;
    durationMs: number;
  },
>(a: R, b: R): R {
  return {
    ...a,
    channels: a.channels + b.channels,
    bytesDelivered: a.bytesDelivered + b.bytesDelivered,
    spillFiles: a.spillFiles + b.spillFiles,
    spilledBytes: a.spilledBytes + b.spilledBytes,
    entries: a.entries + b.entries,
    durationMs: a.durationMs + b.durationMs,
  };
}
