/** `spillway flink records CHECKPOINT --operator OP --subtask N …` (DESIGN §8). */
import { readFlinkRecords } from '../services/formats/flink/records/read-records.ts';
import { ElementLines } from '../services/formats/flink/records/json.ts';
import { parseRelocation } from '../services/formats/flink/paths.ts';
import { keyFromArgs, upstreamFromArgs } from './flink-arg.ts';
import { intOption, parse, stringOption, UsageError } from './args.ts';
import { reportError } from './errors.ts';
import { IoError } from '../services/errors.ts';
import type { Io } from './io.ts';
import { LineOutput } from './line-output.ts';
import { remoteOptionsFromEnv } from './remote-env.ts';

export const usage = `usage: spillway flink records CHECKPOINT --operator OP --subtask N [--output-state]
                        [--type SPEC] [--key long|int|bytes:K] [--upstream GATE=OP]…
                        [--limit N] [--allow-path DIR]… [--relocate FROM=TO]…
                        [--s3-endpoint URL] [--json]

Prints the in-flight elements of one operator subtask as JSON Lines, one per element, in the
order Flink reads them: its position (operator, subtask, side, gate and channel — or partition
and subpartition with --output-state — and index, the element's place in that channel), kind
(record, watermark, watermarkStatus, latencyMarker, recordAttributes, partial), bytes, and
what it holds (timestamp, key and keyGroup, value). 64-bit integers are exact JSON numbers.

  --operator OP      the operator: its id (32 hex digits), uid or name ('spillway flink ls')
  --subtask N        the subtask
  --output-state     its result subpartitions (output side) instead of its input channels
  --type SPEC        decode record values as Flink's serializers wrote them: Long Integer Short
                     Byte Boolean Float Double Char String, byte[] and T[] of basic types,
                     Tuple<T1,…,Tn> (n ≤ 25), Row<name T, …>, Pojo<name T, …>, List<T>,
                     Map<K,V>, nested; without it a record's value is its bytes in base64
  --key long|int|bytes:K  add each record's key (the first field of its value: a Java long
                     or int, or its first K bytes, base64) and key group
  --upstream GATE=OP the operator feeding input gate GATE (repeatable): a record an input
                     channel ends inside is completed from its output state (all-to-all edge:
                     upstream subtask = channel, subpartition = N). Without it the one
                     operator with output state is used when there is exactly one; otherwise
                     the piece is printed as kind 'partial' with end 'tail'
  --limit N          stop after N elements
  --allow-path DIR   channel-state files may also be read under DIR
  --relocate FROM=TO read the files the checkpoint names under FROM from TO instead
  --s3-endpoint URL  an S3-compatible store for s3:// (path-style)
  --json             on failure, one JSON object on stdout: { error: { code, message, file?,
                     offset? } }

An output subpartition's state may begin inside a record whose first bytes are still in the
downstream's input state: that piece is kind 'partial' with end 'head' (index 0).

Exit codes: 0 ok (also when the reader of stdout closes it, as '| head' does) · 1 failed (a
read error, or a stdout that cannot take the records: ENOSPC on a full disk) · 2 bad input or
usage: a value that does not parse under --type or bytes that are not Flink's (one line naming
the file, byte, channel and element index), a --type syntax error (naming the character), an
unknown operator or subtask
`;

const options = {
  operator: { type: 'string' },
  subtask: { type: 'string' },
  'output-state': { type: 'boolean' },
  type: { type: 'string' },
  key: { type: 'string' },
  upstream: { type: 'string', multiple: true },
  limit: { type: 'string' },
  'allow-path': { type: 'string', multiple: true },
  relocate: { type: 'string', multiple: true },
  's3-endpoint': { type: 'string' },
  json: { type: 'boolean' },
} as const;

function list(v: unknown): string[] {
  return Array.isArray(v) ? (v as string[]) : typeof v === 'string' ? [v] : [];
}

export async function run(argv: string[], io: Io): Promise<number> {
  const json = argv.includes('--json');
  const output = new LineOutput(io);
  try {
    const { values, positionals } = parse(argv, options, 1);
    if (values.help) {
      io.out.write(usage);
      return 0;
    }
    const checkpoint = positionals[0];
    if (checkpoint === undefined) throw new UsageError('missing CHECKPOINT');
    const operator = stringOption(values, 'operator');
    if (operator === undefined || operator === '') throw new UsageError('missing --operator OP');
    if (values.subtask === undefined) throw new UsageError('missing --subtask N');
    const subtask = intOption(values, 'subtask', 0, { max: 32767 });
    const limit = values.limit === undefined ? Infinity : intOption(values, 'limit', 0, { min: 1 });
    const outputState = values['output-state'] === true;
    const upstream = upstreamFromArgs(list(values.upstream));
    if (outputState && Object.keys(upstream).length > 0) {
      throw new UsageError(
        '--upstream completes input channels; it does not go with --output-state',
      );
    }
    const relocate = list(values.relocate).map((r) => {
      try {
        return parseRelocation(r);
      } catch (e) {
        throw new UsageError(`--relocate: ${(e as Error).message}`);
      }
    });
    const type = stringOption(values, 'type');
    const elements = readFlinkRecords({
      checkpoint,
      operator,
      subtask,
      outputState,
      ...(type !== undefined ? { type } : {}),
      key: keyFromArgs(stringOption(values, 'key')),
      upstream,
      allowPaths: list(values['allow-path']),
      relocate,
      remote: remoteOptionsFromEnv(process.env, stringOption(values, 's3-endpoint')),
    });
    const lines = new ElementLines(type === undefined);
    let n = 0;
    for await (const element of elements) {
      const full = output.add(lines.line(element));
      if (full !== undefined) await full;
      if (++n >= limit || output.failure !== undefined) break;
    }
    await output.flush();
    // The records are the result: a stdout that lost them (a full disk) is a failure, not a
    // truncated file with exit 0. A reader that left (`| head`) only wanted no more.
    const failure = output.failure;
    if (failure !== undefined && failure.code !== 'EPIPE') {
      throw new IoError(
        Object.assign(new Error(`cannot write the records to stdout: ${failure.message}`), {
          code: failure.code,
          syscall: failure.syscall,
        }),
      );
    }
    return 0;
  } catch (error) {
    // The elements read before the failure are printed, then the one line about it.
    await output.flush();
    return reportError(io, error, 'flink records', json);
  }
}
