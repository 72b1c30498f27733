/** `spillway checkpoint make --out FILE [--gates G] [--channels C] [--mb N] [--seed S] [--json]` */
import { makeCheckpoint } from '../services/checkpoint/generator.ts';
import { intOption, numberOption, parse, stringOption, UsageError } from './args.ts';
import { mib, printJson, table, type Io } from './io.ts';

export const usage = `usage: spillway checkpoint make --out FILE [--gates G] [--channels C] [--mb N] [--seed S] [--json]

Writes a deterministic SPWC v1 checkpoint: G gates × C channels per gate (defaults 2 × 4),
N MiB of payload (default 8) in random entries, zero-length ones included. Same seed, same bytes.
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
    json: { type: 'boolean' },
  });
  if (values.help) {
    io.out.write(usage);
    return 0;
  }
  const out = stringOption(values, 'out');
  if (out === undefined) throw new UsageError('missing --out FILE');
  const made = await makeCheckpoint({
    out,
    gates: intOption(values, 'gates', 2, { min: 1, max: 65536 }),
    channels: intOption(values, 'channels', 4, { min: 1, max: 65536 }),
    mb: numberOption(values, 'mb', 8),
    seed: intOption(values, 'seed', 1, { max: 2 ** 32 - 1 }),
  }).catch((e: NodeJS.ErrnoException) => {
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
  };
  if (values.json) printJson(io, summary);
  else {
    io.err.write(
      `wrote ${made.path}\n` +
        table([
          ['entries', made.entries],
          ['channels', made.channels.length],
          ['payload', mib(made.payloadBytes)],
          ['file', `${made.fileBytes} bytes`],
        ]),
    );
  }
  return 0;
}
