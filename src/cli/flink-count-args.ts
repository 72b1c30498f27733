/**
 * The counting options of `flink ls`, `flink report` and `flink diff` (DESIGN §8): `--type SPEC`
 * or `--key K` asks for each channel's elements to be read and counted (`records/count.ts`);
 * `--allow-path`/`--relocate` say where the channel-state files may be read, as for
 * `flink records`. Without `--type` or `--key` nothing past `_metadata` is read.
 */
import type { CountFlinkElementsOptions } from '../services/formats/flink/records/count.ts';
import { parseRelocation } from '../services/formats/flink/paths.ts';
import { parseTypeSpec } from '../services/formats/flink/records/type-spec.ts';
import { stringOption, UsageError, type Parsed } from './args.ts';
import { keyFromArgs } from './flink-arg.ts';

/** The usage lines of the counting options. */
export const countUsage = `  --type SPEC        count each channel's elements (records, watermarks, other elements,
                     partial pieces), reading every value as 'spillway flink records --type'
                     does; one SPEC serves every operator read (several record types: count
                     with --key alone, or one operator with 'flink ls --operator'); a value
                     that does not parse is exit 2 naming the operator, channel and element
  --key long|int|bytes:K  count too (without --type), reading each record's key
  --allow-path DIR   counting: channel-state files may also be read under DIR
  --relocate FROM=TO counting: read the files the checkpoint names under FROM from TO
`;

function list(values: Parsed['values'], name: string): string[] {
  const v = values[name];
  return Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
}

/**
 * What to count with, or undefined when neither `--type` nor `--key` is given.
 *
 * @example
 * ```ts
 * countFromArgs({ type: 'Tuple<Long, String>' }); // { type: { kind: 'tuple', … }, … }
 * ```
 */
export function countFromArgs(values: Parsed['values']): CountFlinkElementsOptions | undefined {
  const type = stringOption(values, 'type');
  const key = keyFromArgs(stringOption(values, 'key'));
  if (type === undefined && key === undefined) {
    for (const name of ['allow-path', 'relocate']) {
      if (values[name] !== undefined)
        throw new UsageError(`--${name} is for reading channel state: it needs --type or --key`);
    }
    return undefined;
  }
  const relocate = list(values, 'relocate').map((r) => {
    try {
      return parseRelocation(r);
    } catch (e) {
      throw new UsageError(`--relocate: ${(e as Error).message}`);
    }
  });
  return {
    // Parsed here, so a syntax error is refused before anything is read.
    ...(type !== undefined ? { type: parseTypeSpec(type) } : {}),
    ...(key !== undefined ? { key } : {}),
    allowPaths: list(values, 'allow-path'),
    relocate,
  };
}
