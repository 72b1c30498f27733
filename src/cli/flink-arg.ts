/**
 * The Flink options of `spillway recover`: `--operator OP --subtask N [--output-state]
 * [--key long|int|bytes:K] [--allow-path DIR]… [--relocate FROM=TO]…`, and the hint a Flink
 * checkpoint given without `--operator` gets. Bad values are a `UsageError` (exit 2).
 */
import { OPTION_RANGES } from '../services/option-ranges.ts';
import { CheckpointPathError, CorruptCheckpointError } from '../services/errors.ts';
import { detectCheckpointFormat } from '../services/formats/entries.ts';
import type { SourceOptions } from '../services/locations/source.ts';
import type { FlinkKey, FlinkSelection } from '../services/formats/flink/entry-source.ts';
import { parseRelocation } from '../services/formats/flink/paths.ts';
import { intOption, stringOption, UsageError, type OptionSpec, type Parsed } from './args.ts';

/** The options this module reads, for the command's `parse` spec. */
export const flinkOptionSpec: OptionSpec = {
  operator: { type: 'string' },
  subtask: { type: 'string' },
  all: { type: 'boolean' },
  'output-state': { type: 'boolean' },
  key: { type: 'string' },
  'allow-path': { type: 'string', multiple: true },
  relocate: { type: 'string', multiple: true },
  upstream: { type: 'string', multiple: true },
};

/** The usage lines of the Flink options. */
export const flinkUsage = `  --operator OP      a Flink checkpoint (a chk-N dir or its _metadata): the operator, by its
                     id (32 hex digits), uid or name ('spillway flink ls' lists them)
  --subtask N        the subtask whose channel state is recovered (not with --rescale: every
                     old subtask is read)
  --all              every operator and subtask with channel state, input and output, into
                     DIR/<operator>/subtask-<n>/ (<operator>: its uid, else its id), published
                     in one step
  --output-state     also write DIR/partition-<p>-subpartition-<s>.bin (result subpartitions)
  --key long|int|bytes:K  with --rescale: a record's key is the first field of its value (a
                     Java long or int), or its first K bytes (default long)
  --upstream GATE=OP with --rescale: the operator feeding input gate GATE (repeatable), whose
                     output state completes a record cut at the end of an old subtask's
                     channel (default: the one operator whose output state fits)
  --allow-path DIR   channel-state files may also be read under DIR (default: only under the
                     job's checkpoint dir, the parent of the chk-N dir)
  --relocate FROM=TO read the files the checkpoint names under FROM (a path or s3:// prefix)
                     from TO instead (a checkpoint copied elsewhere)
`;

function list(values: Parsed['values'], name: string): string[] {
  const v = values[name];
  return Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
}

/** Parses `--key`: `long`, `int` or `bytes:K`. */
export function keyFromArgs(raw: string | undefined): FlinkKey | undefined {
  if (raw === undefined || raw === 'long' || raw === 'int') return raw;
  const m = /^bytes:(\d+)$/.exec(raw);
  const bytes = m === null ? NaN : Number(m[1]);
  if (!(bytes >= 1 && bytes <= 65536)) {
    throw new UsageError(`--key must be long, int or bytes:K (1 ≤ K ≤ 65536), got '${raw}'`);
  }
  return { bytes };
}

/**
 * The Flink selection the options ask for, or undefined without `--operator`.
 *
 * @example
 * ```ts
 * flinkFromArgs({ operator: 'map', subtask: '1' }); // { operator: 'map', subtask: 1, … }
 * ```
 */
export function flinkFromArgs(values: Parsed['values']): FlinkSelection | undefined {
  const operator = stringOption(values, 'operator');
  if (values.all === true) {
    for (const name of [
      'operator',
      'subtask',
      'output-state',
      'key',
      'upstream',
      'rescale',
      'overwrite',
    ]) {
      if (values[name] !== undefined) {
        throw new UsageError(
          `--all cannot take --${name} (it recovers every operator and subtask, both sides, into new files)`,
        );
      }
    }
    // Every operator and subtask: the selection carries only the path rules.
    return { operator: '', subtask: 0, ...pathRules(values) };
  }
  if (operator === undefined) {
    for (const name of ['subtask', 'output-state', 'key', 'upstream', 'allow-path', 'relocate']) {
      if (values[name] !== undefined)
        throw new UsageError(`--${name} needs --operator (a Flink checkpoint)`);
    }
    return undefined;
  }
  if (operator === '') throw new UsageError('--operator must not be empty');
  // Rescaling reads every old subtask: --subtask is not needed there (and changes nothing).
  if (values.subtask === undefined && values.rescale === undefined) {
    throw new UsageError('--operator needs --subtask N');
  }
  const subtask = intOption(values, 'subtask', 0, OPTION_RANGES['flink.subtask']);
  const key = keyFromArgs(stringOption(values, 'key'));
  if (key !== undefined && values.rescale === undefined)
    throw new UsageError('--key needs --rescale');
  const upstream = upstreamFromArgs(list(values, 'upstream'));
  if (Object.keys(upstream).length > 0 && values.rescale === undefined) {
    throw new UsageError('--upstream needs --rescale');
  }
  if (values['output-state'] === true && values.rescale !== undefined) {
    throw new UsageError('--output-state cannot be rescaled (--rescale reads input channels only)');
  }
  return {
    operator,
    subtask,
    ...(values['output-state'] === true ? { outputState: true } : {}),
    ...(key !== undefined ? { key } : {}),
    ...(Object.keys(upstream).length > 0 ? { upstream } : {}),
    ...pathRules(values),
  };
}

/**
 * `--upstream GATE=OP`, repeatable, one operator per gate.
 *
 * @example
 * ```ts
 * upstreamFromArgs(['0=to-record-a', '1=to-record-b']); // { 0: 'to-record-a', 1: 'to-record-b' }
 * ```
 */
export function upstreamFromArgs(raw: string[]): Record<number, string> {
  const out: Record<number, string> = {};
  for (const r of raw) {
    const m = /^(\d+)=(.+)$/.exec(r);
    if (m === null)
      throw new UsageError(
        `--upstream must be GATE=OP (a gate number and an operator), got '${r}'`,
      );
    const gate = Number(m[1]);
    if (out[gate] !== undefined) throw new UsageError(`--upstream names gate ${gate} twice`);
    out[gate] = m[2]!;
  }
  return out;
}

/** `--allow-path DIR`… and `--relocate FROM=TO`…: where the checkpoint's files may be read. */
function pathRules(values: Parsed['values']): Pick<FlinkSelection, 'allowPaths' | 'relocate'> {
  const relocate = list(values, 'relocate').map((r) => {
    try {
      return parseRelocation(r);
    } catch (e) {
      throw new UsageError(`--relocate: ${(e as Error).message}`);
    }
  });
  return { allowPaths: list(values, 'allow-path'), relocate };
}

/**
 * The error to report for `error`, raised reading `checkpoint` as SPWC: when the checkpoint
 * is a Flink one (a directory holding `_metadata`, or Flink's magic), a usage line saying to
 * pick an operator and subtask instead of a bad-magic message.
 */
export async function flinkHint(
  checkpoint: string,
  error: unknown,
  remote: SourceOptions,
): Promise<unknown> {
  const maybe =
    (error instanceof CheckpointPathError && /directory/.test(error.reason)) ||
    (error instanceof CorruptCheckpointError && error.offset <= 4);
  if (!maybe) return error;
  const format = await detectCheckpointFormat(checkpoint, remote).catch(() => undefined);
  if (format !== 'flink') return error;
  return new UsageError(
    `${checkpoint} is a Flink checkpoint: choose what to recover with --operator OP --subtask N ` +
      `('spillway flink ls ${checkpoint}' lists the operators)`,
  );
}
