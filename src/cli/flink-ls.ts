/** `spillway flink ls CHECKPOINT` (DESIGN §7, §8): what a checkpoint holds in flight, largest first. */
import { redactLocation } from '../services/locations/redact.ts';
import { formatBytes } from '../services/human-bytes.ts';
import { countFlinkElements } from '../services/formats/flink/records/count.ts';
import type { FlinkElementCounts } from '../services/formats/flink/records/element-counts.ts';
import {
  listFlinkMetadata,
  type FlinkCheckpointListing,
  type FlinkOperatorListing,
} from '../services/formats/flink/list.ts';
import { readFlinkMetadata, resolveOperator } from '../services/formats/flink/metadata.ts';
import { parse, stringOption, UsageError } from './args.ts';
import { countFromArgs, countUsage } from './flink-count-args.ts';
import { reportError } from './errors.ts';
import { printJson, type Io } from './io.ts';
import { remoteOptionsFromEnv } from './remote-env.ts';
import { oneLine } from './terminal-text.ts';

export const usage = `usage: spillway flink ls CHECKPOINT [--operator OP] [--channels] [--all] [--json]
                       [--type SPEC] [--key long|int|bytes:K] [--allow-path DIR]…
                       [--relocate FROM=TO]… [--s3-endpoint URL]

Says what a Flink checkpoint holds in flight and what is large: the total, then every operator
with channel state, largest first (input + output bytes), with its id as Flink prints it, name and
uid (metadata v5 on), parallelism, and per subtask the input channels and result subpartitions
that have state and their bytes as Flink counts them (each entry's 4-byte length included).
CHECKPOINT is a checkpoint directory holding _metadata or the _metadata file itself: a path, an
http(s):// URL or s3://bucket/key. Metadata versions 3 to 6 (Flink 1.11 to 2.x) are read.

  --operator OP      only this operator: its id, a unique prefix of it (4+ hex digits), its uid
                     or name; on Flink 1.x metadata (no names) a uid is hashed to its id as
                     Flink does. What 'spillway recover --operator' takes too.
  --channels         one row per input channel (gate, channel) and result subpartition
                     (partition, subpartition) with its bytes and entries (network buffers)
  --all              list the operators without channel state too (hidden by default; the
                     table says how many were hidden)
${countUsage}  --s3-endpoint URL  an S3-compatible store for s3:// (path-style)
  --json             one JSON object on stdout with exact byte counts: { version, checkpointId,
                     inputBytes, outputBytes, inputChannels, outputSubpartitions, operators: [{
                     id, name?, uid?, parallelism, maxParallelism, inputBytes, outputBytes,
                     subtasks: [{ index, finished, inputChannels, inputBytes,
                     outputSubpartitions, outputBytes, channels? }] }] }, every operator in
                     metadata order (--operator: that one; totals are over what is listed);
                     channels (--channels): [{ side: "input", gate, channel, bytes, entries } |
                     { side: "output", partition, subpartition, bytes, entries }]; with
                     --type or --key every channel, subtask, operator and the checkpoint also
                     carry records, watermarks, otherElements and partial (exact counts)
                     on failure { error: { code, message, file?, offset? } }

Sizes in the table are binary (B, KiB, MiB, GiB); --json keeps every count exact. Finished
subtasks are marked 'finished' (they hold no state), fully finished operators 'all finished'.

Exit codes: 0 ok · 1 failed (a read error, access denied, retries exhausted) · 2 bad input or
usage: a malformed _metadata (one line naming the file and the byte offset), no such file or
object, a metadata version other than 3-6, an unknown or ambiguous --operator
`;

const inFlight = (op: FlinkOperatorListing): number => op.inputBytes + op.outputBytes;

/**
 * Aligned columns: `align` says per column 'l' or 'r' (numbers right, so digits line up);
 * trailing blanks trimmed.
 */
function columns(rows: string[][], align: string, indent = '  '): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map(
    (r) =>
      indent +
      r
        .map((cell, c) => (align[c] === 'r' ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
        .join('  ')
        .trimEnd(),
  );
}

/** The count columns' heads, and their cells for a row (nothing when not counted). */
const COUNT_HEADS = ['records', 'watermarks', 'other', 'partial'];
const countCells = (c: Partial<FlinkElementCounts>): string[] =>
  c.records === undefined
    ? []
    : [c.records, c.watermarks ?? 0, c.otherElements ?? 0, c.partial ?? 0].map(String);

function subtaskRows(op: FlinkOperatorListing, counted: boolean): string[] {
  return columns(
    [
      [
        'subtask',
        'input channels',
        'input bytes',
        'output subpartitions',
        'output bytes',
        ...(counted ? COUNT_HEADS : []),
        '',
      ],
      ...op.subtasks.map((s) => [
        String(s.index),
        String(s.inputChannels),
        formatBytes(s.inputBytes),
        String(s.outputSubpartitions),
        formatBytes(s.outputBytes),
        ...countCells(s),
        s.finished ? 'finished' : '',
      ]),
    ],
    `lrrrr${counted ? 'rrrr' : ''}l`,
  );
}

function channelRows(op: FlinkOperatorListing, counted: boolean): string[] {
  const rows = op.subtasks.flatMap((s) =>
    (s.channels ?? []).map((c) => [
      String(s.index),
      c.side === 'input'
        ? `input gate ${c.gate} channel ${c.channel}`
        : `output partition ${c.partition} subpartition ${c.subpartition}`,
      formatBytes(c.bytes),
      String(c.entries),
      ...countCells(c),
    ]),
  );
  if (rows.length === 0) return ['  (no channel state)'];
  return columns(
    [['subtask', 'channel', 'bytes', 'entries', ...(counted ? COUNT_HEADS : [])], ...rows],
    `rlrr${counted ? 'rrrr' : ''}`,
  );
}

/** `N records, M watermarks, …` of a total (empty when not counted). */
export function describeCounts(c: Partial<FlinkElementCounts>): string {
  if (c.records === undefined) return '';
  return (
    `${c.records} record(s), ${c.watermarks ?? 0} watermark(s), ` +
    `${c.otherElements ?? 0} other element(s), ${c.partial ?? 0} partial record piece(s)`
  );
}

/**
 * The human table: a total line, then one block per operator (largest in-flight first), one row
 * per subtask or, with `channels`, per channel.
 */
export function describeListing(
  shown: string,
  listing: FlinkCheckpointListing,
  options: { fullyFinished?: ReadonlySet<string>; all?: boolean; channels?: boolean } = {},
): string {
  const { inputBytes, outputBytes } = listing;
  const lines = [
    `${shown}: Flink checkpoint ${listing.checkpointId}, metadata v${listing.version}, ` +
      `${listing.operators.length} operator(s)`,
    `in flight: ${formatBytes(inputBytes + outputBytes)} — input ${formatBytes(inputBytes)} in ` +
      `${listing.inputChannels} channel(s), output ${formatBytes(outputBytes)} in ` +
      `${listing.outputSubpartitions} subpartition(s)`,
  ];
  const counted = listing.records !== undefined;
  if (counted) lines.push(`elements: ${describeCounts(listing)}`);
  // Largest first; ties (and empty operators) keep metadata order: sort is stable.
  const sorted = [...listing.operators].sort((a, b) => inFlight(b) - inFlight(a));
  const shownOps = options.all === true ? sorted : sorted.filter((op) => inFlight(op) > 0);
  for (const op of shownOps) {
    const names = [
      ...(op.name !== undefined ? [`name ${JSON.stringify(op.name)}`] : []),
      ...(op.uid !== undefined ? [`uid ${JSON.stringify(op.uid)}`] : []),
    ];
    const allFinished = options.fullyFinished?.has(op.id) === true ? '  all finished' : '';
    lines.push(
      '',
      `operator ${op.id}${names.length > 0 ? `  ${names.join('  ')}` : ''}` +
        `  parallelism ${op.parallelism}  max parallelism ${op.maxParallelism}${allFinished}`,
      `  in flight ${formatBytes(inFlight(op))}: input ${formatBytes(op.inputBytes)}, ` +
        `output ${formatBytes(op.outputBytes)}${counted ? `; ${describeCounts(op)}` : ''}`,
    );
    if (op.subtasks.length === 0) lines.push('  (no subtask state)');
    else {
      lines.push(
        ...(options.channels === true ? channelRows(op, counted) : subtaskRows(op, counted)),
      );
    }
  }
  const hidden = listing.operators.length - shownOps.length;
  if (hidden > 0) {
    lines.push('', `${hidden} operator(s) without channel state not shown ('--all' lists them)`);
  }
  // Paths, names and uids come from the checkpoint: shown inert (see terminal-text.ts).
  return `${lines.map(oneLine).join('\n')}\n`;
}

/** `spillway flink ls …`; the exit code. */
export async function ls(argv: string[], io: Io): Promise<number> {
  // `--json` answers in JSON on every failure, a usage error too (DESIGN §4), so it is known
  // before the arguments are parsed.
  const json = argv.includes('--json');
  try {
    const { values, positionals } = parse(
      argv,
      {
        json: { type: 'boolean' },
        's3-endpoint': { type: 'string' },
        operator: { type: 'string' },
        channels: { type: 'boolean' },
        all: { type: 'boolean' },
        type: { type: 'string' },
        key: { type: 'string' },
        'allow-path': { type: 'string', multiple: true },
        relocate: { type: 'string', multiple: true },
      },
      1,
    );
    if (values.help) {
      io.out.write(usage);
      return 0;
    }
    const checkpoint = positionals[0];
    if (checkpoint === undefined) throw new UsageError('missing CHECKPOINT');
    // Checked before anything is read: a bad SPEC or --key is refused at once.
    const count = countFromArgs(values);
    const remote = remoteOptionsFromEnv(process.env, stringOption(values, 's3-endpoint'));
    let meta = await readFlinkMetadata(checkpoint, { remote });
    const operator = stringOption(values, 'operator');
    if (operator !== undefined) meta = { ...meta, operators: [resolveOperator(meta, operator)] };
    const channels = values.channels === true;
    const counts =
      count === undefined ? undefined : await countFlinkElements(meta, { ...count, remote });
    const listing = listFlinkMetadata(meta, { channels, counts });
    if (json) printJson(io, listing);
    else {
      const fullyFinished = new Set(meta.operators.filter((o) => o.finished).map((o) => o.id));
      io.out.write(
        describeListing(redactLocation(meta.location), listing, {
          fullyFinished,
          // One operator asked for by name is shown even when it holds nothing.
          all: values.all === true || operator !== undefined,
          channels,
        }),
      );
    }
    return 0;
  } catch (error) {
    return reportError(io, error, 'flink ls', json);
  }
}
