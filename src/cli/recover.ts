/** `spillway recover CHECKPOINT --out DIR [--spill-root DIR] [--max-spill-file-bytes N] [--json]` */
import { recoverChannelState } from '../recover.ts';
import { ChannelFileSink } from '../services/channel-files.ts';
import { addSuppressed } from '../services/errors.ts';
import { fsSeam } from '../services/fs.ts';
import { intOption, parse, stringOption, UsageError } from './args.ts';
import { mib, printJson, ProgressLine, table, type Io } from './io.ts';
import { trapSignals } from './signals.ts';
import { reportError } from './errors.ts';

export const usage = `usage: spillway recover CHECKPOINT --out DIR [--spill-root DIR] [--max-spill-file-bytes N] [--json]

Recovers the channel state in CHECKPOINT (SPWC v1) through fetch → gap → drain and writes
DIR/gate-<g>-channel-<c>.bin per channel. Spill files go to --spill-root (default
$SPILLWAY_SPILL_ROOT, then the OS temp dir) and are gone when the command ends.

Exit codes: 0 ok · 1 recovery failed · 2 bad input or usage · 130 SIGINT · 143 SIGTERM
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(
    argv,
    {
      out: { type: 'string' },
      'spill-root': { type: 'string' },
      'max-spill-file-bytes': { type: 'string' },
      json: { type: 'boolean' },
    },
    1,
  );
  if (values.help) {
    io.out.write(usage);
    return 0;
  }
  const checkpoint = positionals[0];
  if (checkpoint === undefined) throw new UsageError('missing CHECKPOINT');
  const out = stringOption(values, 'out');
  if (out === undefined) throw new UsageError('missing --out DIR');
  const maxSpillFileBytes = intOption(values, 'max-spill-file-bytes', 64 * 1024 * 1024, { min: 1 });

  // Checked up front so that a wrong path is bad input (exit 2), not a failed recovery (exit 1).
  const input = await fsSeam.stat(checkpoint).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') {
      throw new UsageError(`${checkpoint}: no such checkpoint file`);
    }
    throw e;
  });
  if (!input.isFile()) throw new UsageError(`${checkpoint}: not a regular file`);

  // A failed run must not leave an output dir it created for nothing (G9: nothing left on disk).
  const outExisted = await fsSeam.lstat(out).then(
    () => true,
    () => false,
  );
  // 0o777 & umask, like mkdir(1): the output is the user's, not a private spill dir.
  await fsSeam.mkdir(out, { recursive: true, mode: 0o777 }).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'EEXIST' || e.code === 'ENOTDIR')
      throw new UsageError(`${out}: not a directory`);
    throw e;
  });
  const sink = new ChannelFileSink(out);
  const signals = trapSignals();
  const progress = new ProgressLine(io);
  const recovery = recoverChannelState({
    checkpoint,
    spillRoot: stringOption(values, 'spill-root'),
    channels: (info) => sink.consumer(info),
    signal: signals.signal,
    limits: { maxSpillFileBytes },
  });
  const timer = progress.enabled
    ? setInterval(() => {
        const s = recovery.actor.getSnapshot();
        progress.update(0.5, `${JSON.stringify(s.value)} ${mib(sink.bytes)} delivered`);
      }, 200)
    : undefined;
  try {
    const report = await recovery.done;
    progress.done();
    const result = {
      checkpoint,
      out,
      channels: report.channels,
      bytes: report.bytesDelivered,
      spillFiles: report.spillFiles,
      spilledBytes: report.spilledBytes,
      entries: report.entries,
      durationMs: report.durationMs,
    };
    if (values.json) printJson(io, result);
    else {
      io.err.write(
        `recovered ${checkpoint}\n` +
          table([
            ['channels', result.channels],
            ['bytes', `${result.bytes} (${mib(result.bytes)})`],
            ['spill files', result.spillFiles],
            ['spilled', mib(result.spilledBytes)],
            ['time', `${result.durationMs} ms`],
            ['out', out],
          ]),
      );
    }
    return 0;
  } catch (error) {
    progress.done();
    await sink.discard().catch((e) => addSuppressed(error as Error, e));
    if (!outExisted) {
      await removeIfEmpty(out).catch((e) => addSuppressed(error as Error, e));
    }
    if (signals.exitCode !== undefined) {
      // Cancelled by a signal: cleanup is done; its consequences are not news to the user.
      io.err.write(
        `spillway recover: cancelled by ${signals.signal.reason}; spill files removed\n`,
      );
      return signals.exitCode;
    }
    if (
      (error as NodeJS.ErrnoException).code === 'ENOENT' &&
      (error as NodeJS.ErrnoException).path === checkpoint
    ) {
      return reportError(io, new UsageError(`${checkpoint}: no such checkpoint file`), 'recover');
    }
    return reportError(io, error, 'recover');
  } finally {
    if (timer) clearInterval(timer);
    signals.dispose();
  }
}

/** Removes `dir` only if nothing is in it: never a tree someone else wrote into meanwhile. */
async function removeIfEmpty(dir: string): Promise<void> {
  if ((await fsSeam.readdir(dir)).length === 0) await fsSeam.rm(dir);
}
