/** `spillway checkpoint make --out FILE [--gates G] [--channels C] [--mb N | --records N [--subtasks S]] [--seed S] [--json]` */
import { oneLine } from './terminal-text.ts';
import { makeCheckpoint, type MadeCheckpoint } from '../services/formats/spwc/generator.ts';
import { makeRecordCheckpoint } from '../services/formats/spwc/record-generator.ts';
import { intOption, numberOption, parse, stringOption, UsageError } from './args.ts';
import { mib, printJson, table, type Io } from './io.ts';
import { trapSignals } from './signals.ts';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fsSeam } from '../services/fs.ts';
import { releaseAtExit, removeAtExit } from '../services/exit-cleanup.ts';

export const usage = `usage: spillway checkpoint make --out FILE [--gates G] [--channels C] [--mb N] [--seed S] [--json]
       spillway checkpoint make --out FILE --records N [--subtasks S] [--gates G] [--channels C] [--seed S] [--json]

Writes a deterministic SPWC v1 checkpoint: G gates × C channels per gate (defaults 2 × 4),
N MiB of payload (default 8) in random entries, zero-length ones included. Same seed, same bytes.

With --records: an SPWC v2 (rescalable) checkpoint of N records [int32 length][bytes] (bodies of
8..2048 random bytes, so every record has an 8-byte key) written by S old subtasks (default 3),
each (subtask, gate, channel) stream cut into entries at random points and interleaved: the input
of \`spillway recover --rescale\`.
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === '--help' || sub === '-h') {
    io.out.write(usage);
    return 0;
  }
  if (sub !== 'make') {
    throw new UsageError(
      sub === undefined ? 'missing subcommand: make' : `unknown subcommand '${sub}'`,
    );
  }
  const { values } = parse(rest, {
    out: { type: 'string' },
    gates: { type: 'string' },
    channels: { type: 'string' },
    mb: { type: 'string' },
    seed: { type: 'string' },
    records: { type: 'string' },
    subtasks: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (values.help) {
    io.out.write(usage);
    return 0;
  }
  const out = stringOption(values, 'out');
  if (out === undefined) throw new UsageError('missing --out FILE');
  const shape = {
    out,
    gates: intOption(values, 'gates', 2, { min: 1, max: 65536 }),
    channels: intOption(values, 'channels', 4, { min: 1, max: 65536 }),
    seed: intOption(values, 'seed', 1, { max: 2 ** 32 - 1 }),
  };
  if (values.records === undefined && values.subtasks !== undefined) {
    throw new UsageError('--subtasks needs --records');
  }
  if (values.records !== undefined && values.mb !== undefined) {
    throw new UsageError('--mb and --records exclude each other');
  }
  // Written under a temporary name beside FILE and linked into place only when complete: a
  // signal or a failure leaves neither FILE nor the temporary file (docs/cli.md).
  if (
    await fsSeam.lstat(out).then(
      () => true,
      () => false,
    )
  ) {
    throw new UsageError(`${out}: already exists`);
  }
  const tmp = join(dirname(out), `.spillway-make-${randomBytes(4).toString('hex')}.tmp`);
  removeAtExit(tmp);
  const signals = trapSignals((line) => io.err.write(line));
  let made: MadeCheckpoint & { records?: number };
  try {
    const making: Promise<MadeCheckpoint & { records?: number }> =
      values.records === undefined
        ? makeCheckpoint({
            ...shape,
            out: tmp,
            mb: numberOption(values, 'mb', 8),
            signal: signals.signal,
          })
        : makeRecordCheckpoint({
            ...shape,
            out: tmp,
            records: intOption(values, 'records', 1000, { max: 2 ** 32 }),
            subtasks: intOption(values, 'subtasks', 3, { min: 1, max: 32768 }),
            signal: signals.signal,
          });
    made = await making.catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') throw new UsageError(`${out}: no such directory`);
      throw e;
    });
    try {
      // A link, not a rename: it never replaces a FILE that appeared meanwhile.
      await fsSeam.link(tmp, out).catch((e: NodeJS.ErrnoException) => {
        throw e.code === 'EEXIST' ? new UsageError(`${out}: already exists`) : e;
      });
    } finally {
      await fsSeam.unlink(tmp).catch(() => undefined);
      releaseAtExit(tmp);
    }
    made = { ...made, path: out };
  } catch (error) {
    await fsSeam.unlink(tmp).catch(() => undefined);
    releaseAtExit(tmp);
    if (signals.exitCode !== undefined) {
      io.err.write(
        `spillway checkpoint: cancelled by ${String(signals.signal.reason)}; nothing written\n`,
      );
      return signals.exitCode;
    }
    throw error;
  } finally {
    signals.dispose();
  }
  const summary = {
    path: made.path,
    entries: made.entries,
    payloadBytes: made.payloadBytes,
    fileBytes: made.fileBytes,
    channels: made.channels.length,
    ...(made.records !== undefined ? { records: made.records, version: 2 } : {}),
  };
  if (values.json) printJson(io, summary);
  else {
    io.err.write(
      `wrote ${oneLine(made.path)}\n` +
        table([
          ['entries', made.entries],
          ['channels', made.channels.length],
          ...(made.records !== undefined ? [['records', made.records] as [string, number]] : []),
          ['payload', mib(made.payloadBytes)],
          ['file', `${made.fileBytes} bytes`],
        ]),
    );
  }
  return 0;
}
