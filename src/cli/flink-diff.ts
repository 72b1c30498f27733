/** `spillway flink diff CHECKPOINT_A CHECKPOINT_B` (DESIGN §8): which channel's backlog grew. */
import { formatByteChange, formatBytes } from '../services/human-bytes.ts';
import { listFlinkMetadata } from '../services/formats/flink/list.ts';
import { readFlinkMetadata } from '../services/formats/flink/metadata.ts';
import { countFlinkElements } from '../services/formats/flink/records/count.ts';
import {
  diffListings,
  type ByteChange,
  type CountChanges,
  type FlinkCheckpointDiff,
} from '../services/formats/flink/diff.ts';
import { parse, stringOption, UsageError } from './args.ts';
import { countFromArgs, countUsage } from './flink-count-args.ts';
import { reportError } from './errors.ts';
import { printJson, type Io } from './io.ts';
import { remoteOptionsFromEnv } from './remote-env.ts';
import { oneLine } from './terminal-text.ts';

export const usage = `usage: spillway flink diff CHECKPOINT_A CHECKPOINT_B [--all] [--json] [--type SPEC]
                         [--key long|int|bytes:K] [--allow-path DIR]… [--relocate FROM=TO]…
                         [--s3-endpoint URL]

Lines up two checkpoints of the same job (A older, B newer) per operator, subtask and channel:
the in-flight bytes of each, side by side, with the change, largest growth first. Operators are
matched by id, channels by position (subtask, input gate/channel, output partition/subpartition);
a channel that has state in only one checkpoint counts 0 bytes in the other. Each CHECKPOINT is as
for 'spillway flink ls'.

  --all              list unchanged operators and channels too (hidden by default; the count is said)
${countUsage}  --s3-endpoint URL  an S3-compatible store for s3:// (path-style)
  --json             one JSON object with exact byte counts: { checkpointA, checkpointB,
                     inputBytes: { a, b, change }, outputBytes: { a, b, change }, operators: [{
                     id, label, a, b, change, subtasks: [{ index, a, b, change }] }], channels:
                     [{ operator, operatorLabel, subtask, channel, side, a, b, change }] }, every
                     operator and channel, sorted by growth; with --type or --key each of them
                     also has records: { a, b, change } and watermarks: { a, b, change };
                     on failure { error: { code, message } }

Exit codes: 0 ok · 1 failed (a read error) · 2 bad input or usage
`;

function table(rows: string[][], align: string): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map(
    (r) =>
      '  ' +
      r
        .map((cell, c) => (align[c] === 'r' ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
        .join('  ')
        .trimEnd(),
  );
}

const signed = (n: number): string => (n > 0 ? `+${n}` : String(n));

/** `records 10 → 12 (+2)` cells of a row, when counted. */
function countCells(row: CountChanges, counted: boolean): string[] {
  if (!counted) return [];
  const cell = (c: ByteChange | undefined): string =>
    c === undefined ? '' : `${c.a} → ${c.b} (${signed(c.change)})`;
  return [cell(row.records), cell(row.watermarks)];
}

/** A row changed: its bytes, or (counted) its records or watermarks. */
const changed = (row: ByteChange & CountChanges): boolean =>
  row.change !== 0 || (row.records?.change ?? 0) !== 0 || (row.watermarks?.change ?? 0) !== 0;

/** The human text: totals, operators and channels by growth. */
export function describeDiff(diff: FlinkCheckpointDiff, all: boolean): string {
  const total = (d: { a: number; b: number }) =>
    `${formatBytes(d.a)} → ${formatBytes(d.b)} (${formatByteChange(d.b - d.a)})`;
  const counted = diff.records !== undefined;
  const lines = [
    `checkpoint ${diff.checkpointA} → ${diff.checkpointB}: input ${total(diff.inputBytes)}, ` +
      `output ${total(diff.outputBytes)}`,
  ];
  if (counted) {
    const [records, watermarks] = countCells(diff, true);
    lines.push(`records ${records}, watermarks ${watermarks}`);
  }
  const countHeads = counted ? ['records', 'watermarks'] : [];
  const countAlign = counted ? 'rr' : '';
  const ops = diff.operators.filter((o) => all || changed(o));
  lines.push('', 'operators (in-flight bytes):');
  if (ops.length === 0) lines.push('  (none changed)');
  else {
    lines.push(
      ...table(
        [
          [
            'operator',
            `chk ${diff.checkpointA}`,
            `chk ${diff.checkpointB}`,
            'change',
            ...countHeads,
          ],
          ...ops.map((o) => [
            o.label,
            formatBytes(o.a),
            formatBytes(o.b),
            formatByteChange(o.change),
            ...countCells(o, counted),
          ]),
        ],
        `lrrr${countAlign}`,
      ),
    );
  }
  const channels = diff.channels.filter((c) => all || changed(c));
  lines.push('', 'channels:');
  if (channels.length === 0) lines.push('  (none changed)');
  else {
    lines.push(
      ...table(
        [
          [
            'operator',
            'subtask',
            'channel',
            `chk ${diff.checkpointA}`,
            `chk ${diff.checkpointB}`,
            'change',
            ...countHeads,
          ],
          ...channels.map((c) => [
            c.operatorLabel,
            String(c.subtask),
            c.channel,
            formatBytes(c.a),
            formatBytes(c.b),
            formatByteChange(c.change),
            ...countCells(c, counted),
          ]),
        ],
        `lrlrrr${countAlign}`,
      ),
    );
  }
  const hidden = diff.operators.length - ops.length + diff.channels.length - channels.length;
  if (hidden > 0)
    lines.push('', `${hidden} unchanged operator(s)/channel(s) not shown ('--all' lists them)`);
  return `${lines.map(oneLine).join('\n')}\n`;
}

/** `spillway flink diff …`; the exit code. */
export async function run(argv: string[], io: Io): Promise<number> {
  const json = argv.includes('--json');
  try {
    const { values, positionals } = parse(
      argv,
      {
        json: { type: 'boolean' },
        all: { type: 'boolean' },
        's3-endpoint': { type: 'string' },
        type: { type: 'string' },
        key: { type: 'string' },
        'allow-path': { type: 'string', multiple: true },
        relocate: { type: 'string', multiple: true },
      },
      2,
    );
    if (values.help) {
      io.out.write(usage);
      return 0;
    }
    const [a, b] = positionals;
    if (a === undefined || b === undefined)
      throw new UsageError('need CHECKPOINT_A and CHECKPOINT_B');
    const count = countFromArgs(values);
    const remote = remoteOptionsFromEnv(process.env, stringOption(values, 's3-endpoint'));
    const [metaA, metaB] = await Promise.all([
      readFlinkMetadata(a, { remote }),
      readFlinkMetadata(b, { remote }),
    ]);
    // One checkpoint after the other: a bad value is reported for the first that holds one.
    const countsOf = async (meta: typeof metaA) =>
      count === undefined ? undefined : await countFlinkElements(meta, { ...count, remote });
    const countsA = await countsOf(metaA);
    const countsB = await countsOf(metaB);
    const diff = diffListings(
      listFlinkMetadata(metaA, { channels: true, counts: countsA }),
      listFlinkMetadata(metaB, { channels: true, counts: countsB }),
    );
    if (json) printJson(io, diff);
    else io.out.write(describeDiff(diff, values.all === true));
    return 0;
  } catch (error) {
    return reportError(io, error, 'flink diff', json);
  }
}
