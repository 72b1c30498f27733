/** `spillway flink ls CHECKPOINT [--json]` (DESIGN §7). */
import { redactLocation, redactText } from '../services/locations/redact.ts';
import { oneLine } from './terminal-text.ts';
import { CorruptCheckpointError, SpillwayError } from '../services/errors.ts';
import { listFlinkMetadata, type FlinkCheckpointListing } from '../services/formats/flink/list.ts';
import { readFlinkMetadata } from '../services/formats/flink/metadata.ts';
import { parse, stringOption, UsageError } from './args.ts';
import { reportError } from './errors.ts';
import { printJson, type Io } from './io.ts';
import { remoteOptionsFromEnv } from './remote-env.ts';

export const usage = `usage: spillway flink ls CHECKPOINT [--s3-endpoint URL] [--json]

Lists what a Flink checkpoint's _metadata holds for channel state: every operator (its id as
Flink prints it, name and uid from metadata v5 on, parallelism, max parallelism) and per subtask
the input channels and result subpartitions that have state, with their bytes as Flink counts
them (each entry's 4-byte length included). CHECKPOINT is a checkpoint directory holding
_metadata or the _metadata file itself: a path, an http(s):// URL or s3://bucket/key. Metadata
versions 3 to 6 (Flink 1.11 to 2.x) are read; the operator id, uid or name is what
'spillway recover --operator' takes.

  --s3-endpoint URL  an S3-compatible store for s3:// (path-style)
  --json             one JSON object on stdout: { version, checkpointId, operators: [{ id,
                     name?, uid?, parallelism, maxParallelism, subtasks: [{ index, finished,
                     inputChannels, inputBytes, outputSubpartitions, outputBytes }] }] };
                     on failure { error: { code, message, file?, offset? } }

The table goes to stdout. Finished subtasks are marked 'finished' (they hold no state), fully
finished operators 'all finished'.

Exit codes: 0 ok · 1 failed (a read error, access denied, retries exhausted) · 2 bad input or
usage: a malformed _metadata (one line naming the file and the byte offset), no such file or
object, a metadata version other than 3-6
`;

/** The human table: one block per operator, one row per subtask. */
export function describeListing(
  shown: string,
  listing: FlinkCheckpointListing,
  fullyFinished: ReadonlySet<string> = new Set(),
): string {
  const lines = [
    `${shown}: Flink checkpoint ${listing.checkpointId}, metadata v${listing.version}, ` +
      `${listing.operators.length} operator(s)`,
  ];
  for (const op of listing.operators) {
    const names = [
      ...(op.name !== undefined ? [`name ${JSON.stringify(op.name)}`] : []),
      ...(op.uid !== undefined ? [`uid ${JSON.stringify(op.uid)}`] : []),
    ];
    const allFinished = fullyFinished.has(op.id) ? '  all finished' : '';
    lines.push(
      '',
      `operator ${op.id}${names.length > 0 ? `  ${names.join('  ')}` : ''}` +
        `  parallelism ${op.parallelism}  max parallelism ${op.maxParallelism}${allFinished}`,
    );
    if (op.subtasks.length === 0) {
      lines.push('  (no subtask state)');
      continue;
    }
    const rows: string[][] = [
      ['subtask', 'input channels', 'input bytes', 'output subpartitions', 'output bytes', ''],
      ...op.subtasks.map((s) => [
        String(s.index),
        String(s.inputChannels),
        String(s.inputBytes),
        String(s.outputSubpartitions),
        String(s.outputBytes),
        s.finished ? 'finished' : '',
      ]),
    ];
    const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
    for (const r of rows) {
      lines.push(
        `  ${r
          .map((cell, c) =>
            c === 0 || c === r.length - 1 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!),
          )
          .join('  ')
          .trimEnd()}`,
      );
    }
  }
  // Paths, names and uids come from the checkpoint: shown inert (see terminal-text.ts).
  return `${lines.map(oneLine).join('\n')}\n`;
}

/** `{ error: { code, message, file?, offset? } }` for `--json` failures (DESIGN §4). */
function errorJson(error: unknown): { error: Record<string, unknown> } {
  const e = error as Error | undefined;
  return {
    error: {
      code: error instanceof SpillwayError ? error.code : 'ERR_SPILLWAY',
      message: redactText(e?.message ?? String(error)),
      ...(error instanceof CorruptCheckpointError
        ? { file: error.file, offset: error.offset }
        : {}),
    },
  };
}

async function ls(argv: string[], io: Io): Promise<number> {
  // `--json` answers in JSON on every failure, a usage error too (DESIGN §4), so it is known
  // before the arguments are parsed.
  const json = argv.includes('--json');
  try {
    const { values, positionals } = parse(
      argv,
      { json: { type: 'boolean' }, 's3-endpoint': { type: 'string' } },
      1,
    );
    if (values.help) {
      io.out.write(usage);
      return 0;
    }
    const checkpoint = positionals[0];
    if (checkpoint === undefined) throw new UsageError('missing CHECKPOINT');
    const remote = remoteOptionsFromEnv(process.env, stringOption(values, 's3-endpoint'));
    const meta = await readFlinkMetadata(checkpoint, { remote });
    const listing = listFlinkMetadata(meta);
    if (json) printJson(io, listing);
    else {
      const finished = new Set(meta.operators.filter((o) => o.finished).map((o) => o.id));
      io.out.write(describeListing(redactLocation(meta.location), listing, finished));
    }
    return 0;
  } catch (error) {
    if (json) printJson(io, errorJson(error));
    return reportError(io, error, 'flink ls');
  }
}

export async function run(argv: string[], io: Io): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h') {
    if (sub === undefined) throw new UsageError("missing subcommand (try 'spillway flink ls')");
    io.out.write(usage);
    return 0;
  }
  if (sub === 'ls') return ls(rest, io);
  if (sub === 'rewrite') return (await import('./flink-rewrite.ts')).run(rest, io);
  throw new UsageError(`unknown subcommand 'flink ${sub}' (try 'spillway flink ls')`);
}
