/** `spillway checkpoint make --out FILE [--gates G] [--channels C] [--mb N | --records N [--subtasks S]] [--seed S] [--json]` */
import { makeCheckpoint, type MadeCheckpoint } from '../services/checkpoint/generator.ts';
import { makeRecordCheckpoint } from '../services/checkpoint/record-generator.ts';
import { intOption, numberOption, parse, stringOption, UsageError } from './args.ts';
import { mib, printJson, table, type Io } from './io.ts';

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
  const making: Promise<MadeCheckpoint & { records?: number }> =
    values.records === undefined
      ? makeCheckpoint({ ...shape, mb: numberOption(values, 'mb', 8) })
      : makeRecordCheckpoint({
          ...shape,
          records: intOption(values, 'records', 1000, { max: 2 ** 32 }),
          subtasks: intOption(values, 'subtasks', 3, { min: 1, max: 32768 }),
        });
  const made = await making.catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'EEXIST') throw new UsageError(`${out}: already exists`);
    if (e.code === 'ENOENT') throw new UsageError(`${out}: no such directory`);
    throw e;
  });
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
      `wrote ${made.path}\n` +
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
