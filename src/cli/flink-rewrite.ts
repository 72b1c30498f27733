/**
 * `spillway flink rewrite CHECKPOINT --out NEWDIR [--drop SELECTOR]… [--drop-key K --key …]
 * [--dry-run] [--allow-empty]` (DESIGN §8): a copy of the checkpoint that Flink restores,
 * minus the elements named. The work is the library's `rewriteFlinkCheckpoint`; this module
 * parses, traps the signals (a signal leaves nothing at NEWDIR) and prints.
 */
import type { FlinkKey } from '../services/formats/flink/entry-source.ts';
import { parseRelocation } from '../services/formats/flink/paths.ts';
import {
  rewriteFlinkCheckpoint,
  type FlinkDropSelector,
  type FlinkRewriteResult,
} from '../services/formats/flink/write/rewrite.ts';
import { parse, stringOption, UsageError, type Parsed } from './args.ts';
import { reportError } from './errors.ts';
import { printJson, type Io } from './io.ts';
import { upstreamFromArgs } from './flink-arg.ts';
import { remoteOptionsFromEnv } from './remote-env.ts';
import { trapSignals } from './signals.ts';

export const usage = `usage: spillway flink rewrite CHECKPOINT --out NEWDIR [--drop SELECTOR]...
                              [--drop-key K --key long|int|bytes:N]... [--dry-run] [--allow-empty]
                              [--upstream GATE=OP]... [--allow-path DIR]... [--relocate FROM=TO]...
                              [--s3-endpoint URL] [--json]

Writes NEWDIR: a copy of the Flink checkpoint CHECKPOINT (a chk-N dir or its _metadata; a path,
http(s):// URL or s3://bucket/key) that Flink restores from ('flink run -s NEWDIR ...'), with the
in-flight elements named by --drop / --drop-key removed. The _metadata keeps the source's
version and every byte that is not channel state; channel state is written anew beside it;
files the source names relatively are copied, files it names absolutely are referenced where
they are. The source is only read. NEWDIR is local, absent or empty; it appears whole or not at
all (staged beside it, then renamed; a signal or an error leaves nothing).

  --out NEWDIR        the new checkpoint directory
  --drop SELECTOR     an element by position, as 'spillway flink records' prints it:
                      OP/SUBTASK/input/GATE/CHANNEL/INDEX or
                      OP/SUBTASK/output/PARTITION/SUBPARTITION/INDEX (OP: id, uid, name or
                      id prefix); dropped as a whole frame, across entries; a partial record
                      (an input channel's cut end, an output subpartition's cut head) is
                      refused; repeatable
  --drop-key K        drop every record in input channel state whose key is K (with --key:
                      long and int are decimal, bytes:N is 2N hex digits); repeatable
  --key long|int|bytes:N  how a record's key is read: the first field of its value
  --upstream GATE=OP  the operator feeding input gate GATE: a record cut at the end of one
                      of its channels is then dropped on both sides (default: the only
                      operator with output state, if one); repeatable
  --dry-run           print what would be dropped and the new sizes; write nothing
  --allow-empty       a selector that matches nothing is not an error
  --allow-path DIR    channel-state files may also be read under DIR
  --relocate FROM=TO  read the files the checkpoint names under FROM from TO instead
  --s3-endpoint URL   an S3-compatible store for s3://
  --json              the result as one JSON object on stdout

Exit codes: 0 ok · 1 failed (a read or write error, a full disk) · 2 bad input: a selector
that is malformed, matches nothing (without --allow-empty) or names a partial record, an
unknown operator, NEWDIR not empty, remote or inside the source, a malformed checkpoint ·
128+N ended by signal N (nothing at NEWDIR)
`;

function list(values: Parsed['values'], name: string): string[] {
  const v = values[name];
  return Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
}

/** `--key`: long, int or bytes:N. */
function keyOf(raw: string | undefined): FlinkKey {
  if (raw === undefined) throw new UsageError('--drop-key needs --key long|int|bytes:N');
  if (raw === 'long' || raw === 'int') return raw;
  const m = /^bytes:(\d+)$/.exec(raw);
  const bytes = m === null ? NaN : Number(m[1]);
  if (!(bytes >= 1 && bytes <= 65536)) {
    throw new UsageError(`--key must be long, int or bytes:N (1 ≤ N ≤ 65536), got '${raw}'`);
  }
  return { bytes };
}

/** One `--drop-key` value under `key`. */
function keyValue(key: FlinkKey, raw: string): bigint | number | Uint8Array {
  if (key === 'long' || key === 'int') {
    if (!/^-?\d+$/.test(raw)) throw new UsageError(`--drop-key '${raw}' is not a ${key}`);
    const v = BigInt(raw);
    const bits = key === 'long' ? 64 : 32;
    if (BigInt.asIntN(bits, v) !== v) throw new UsageError(`--drop-key '${raw}' is not a ${key}`);
    return key === 'long' ? v : Number(v);
  }
  if (!new RegExp(`^([0-9a-fA-F]{2}){${key.bytes}}$`).test(raw)) {
    throw new UsageError(`--drop-key '${raw}' is not ${key.bytes} bytes in hex`);
  }
  return Buffer.from(raw, 'hex');
}

/** What a person reads: the elements dropped and the sizes that changed. */
function describe(result: FlinkRewriteResult): string {
  const verb = result.dryRun ? 'would drop' : 'dropped';
  const lines = result.dropped.map((d) => `${verb} ${d.position}  ${d.kind}  ${d.bytes} bytes`);
  for (const s of result.subtasks) {
    const { inputBytes: i, outputBytes: o } = s;
    if (i.before === i.after && o.before === o.after) continue;
    lines.push(
      `${s.operator}/${s.subtask}: input ${i.before} → ${i.after} bytes, ` +
        `output ${o.before} → ${o.after} bytes`,
    );
  }
  lines.push(
    result.dryRun
      ? `dry run: ${result.dropped.length} element(s) would be dropped; nothing written`
      : `wrote ${result.out}: Flink checkpoint ${result.checkpointId}, metadata ` +
          `v${result.version}, ${result.dropped.length} element(s) dropped, ` +
          `${result.copiedFiles.length} state file(s) copied`,
  );
  return `${lines.join('\n')}\n`;
}

export async function run(argv: string[], io: Io): Promise<number> {
  const json = argv.includes('--json');
  const signals = trapSignals((line) => io.err.write(line));
  try {
    const { values, positionals } = parse(
      argv,
      {
        out: { type: 'string' },
        drop: { type: 'string', multiple: true },
        'drop-key': { type: 'string', multiple: true },
        key: { type: 'string' },
        'dry-run': { type: 'boolean' },
        'allow-empty': { type: 'boolean' },
        'allow-path': { type: 'string', multiple: true },
        relocate: { type: 'string', multiple: true },
        upstream: { type: 'string', multiple: true },
        's3-endpoint': { type: 'string' },
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
    if (out === undefined) throw new UsageError('missing --out NEWDIR');
    const drop: FlinkDropSelector[] = [...list(values, 'drop')];
    const keys = list(values, 'drop-key');
    if (keys.length > 0) {
      const key = keyOf(stringOption(values, 'key'));
      drop.push({ key, values: keys.map((k) => keyValue(key, k)) });
    }
    let relocate;
    try {
      relocate = list(values, 'relocate').map(parseRelocation);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const upstream = upstreamFromArgs(list(values, 'upstream'));
    const result = await rewriteFlinkCheckpoint({
      checkpoint,
      out,
      drop,
      dryRun: values['dry-run'] === true,
      allowEmpty: values['allow-empty'] === true,
      allowPaths: list(values, 'allow-path'),
      relocate,
      upstream,
      remote: remoteOptionsFromEnv(process.env, stringOption(values, 's3-endpoint')),
      signal: signals.signal,
    });
    if (json) printJson(io, result);
    else io.out.write(describe(result));
    return 0;
  } catch (error) {
    if (signals.exitCode !== undefined) {
      io.err.write('spillway: flink rewrite cancelled; nothing was written at NEWDIR\n');
      return signals.exitCode;
    }
    return reportError(io, error, 'flink rewrite', json);
  } finally {
    signals.dispose();
  }
}
