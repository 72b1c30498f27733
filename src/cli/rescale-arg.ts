/**
 * `--rescale I/P[/M]` and `--key-bytes K` of `spillway recover`, and how a rescaled run's
 * record counts are shown. Bad values are a `UsageError` (exit 2).
 */
import { open } from 'node:fs/promises';
import {
  CHECKPOINT_HEADER_BYTES,
  CHECKPOINT_MAGIC,
  CHECKPOINT_VERSION,
} from '../services/formats/spwc/format.ts';
import type { RecordReport } from '../services/spill/filtering-spill.ts';
import type { RescaleTarget } from '../services/rescale/key-groups.ts';
import type { RescaleAll } from '../recover-to-directory.ts';
import { resolveRescaleTarget } from '../services/rescale/rescale-options.ts';
import { isUri } from '../services/locations/schemes.ts';
import { intOption, stringOption, UsageError, type OptionSpec, type Parsed } from './args.ts';

/** The options this module reads, for the command's `parse` spec. */
export const rescaleOptionSpec: OptionSpec = {
  rescale: { type: 'string' },
  'key-bytes': { type: 'string' },
};

/** The usage lines of the two options. */
export const rescaleUsage = `  --rescale I/P[/M]  restore as new subtask I of parallelism P (max parallelism M, default
                     Flink's rule): keep only the records whose key group maps to I
  --rescale P        every new subtask I of 0..P-1 at once, each into DIR/subtask-<I>/
  --key-bytes K      with --rescale: the key is each record's first K bytes (default 8)
`;

/**
 * The rescale target the options ask for, or undefined without `--rescale`.
 *
 * @example
 * ```ts
 * rescaleFromArgs({ rescale: '1/4/128' }); // { subtask: 1, parallelism: 4, maxParallelism: 128, … }
 * ```
 */
export function rescaleFromArgs(
  values: Parsed['values'],
  flink = false,
): RescaleTarget | RescaleAll | undefined {
  const raw = stringOption(values, 'rescale');
  if (raw === undefined) {
    if (values['key-bytes'] !== undefined) throw new UsageError('--key-bytes needs --rescale');
    return undefined;
  }
  if (/^\d+$/.test(raw)) return rescaleAllFromArgs(values, Number(raw), flink);
  const m = /^(\d+)\/(\d+)(?:\/(\d+))?$/.exec(raw);
  if (m === null) throw new UsageError(`--rescale must be I/P, I/P/M or P, got '${raw}'`);
  if (flink) {
    // A Flink operator's max parallelism comes from its metadata unless M is given.
    if (values['key-bytes'] !== undefined) {
      throw new UsageError(
        '--key-bytes is for SPWC checkpoints; a Flink record is keyed with --key',
      );
    }
    const [subtask, parallelism] = [Number(m[1]), Number(m[2])];
    if (parallelism < 1 || parallelism > 32768 || subtask >= parallelism) {
      throw new UsageError(`--rescale ${raw}: need 0 ≤ I < P ≤ 32768`);
    }
    return {
      subtask,
      parallelism,
      ...(m[3] !== undefined ? { maxParallelism: Number(m[3]) } : {}),
    };
  }
  // 0 would put every record in one key group: never what a user means.
  const keyBytes = intOption(values, 'key-bytes', 8, { min: 1, max: 65536 });
  try {
    return resolveRescaleTarget({
      subtask: Number(m[1]),
      parallelism: Number(m[2]),
      ...(m[3] !== undefined ? { maxParallelism: Number(m[3]) } : {}),
      keyBytes,
    });
  } catch (e) {
    // The library names the field; the command line names the flag.
    throw new UsageError(
      `--rescale ${raw}: ${(e as Error).message.replace(/^options\.rescale\./, '')}`,
    );
  }
}

/** `--rescale P`: every new subtask of parallelism P (max parallelism as for I/P). */
function rescaleAllFromArgs(
  values: Parsed['values'],
  parallelism: number,
  flink: boolean,
): RescaleAll {
  if (parallelism < 1 || parallelism > 32768) {
    throw new UsageError(`--rescale ${parallelism}: need 1 ≤ P ≤ 32768`);
  }
  if (values.overwrite !== undefined) {
    throw new UsageError('--rescale P writes new subtask dirs: --overwrite is for one subtask');
  }
  if (flink) {
    if (values['key-bytes'] !== undefined) {
      throw new UsageError(
        '--key-bytes is for SPWC checkpoints; a Flink record is keyed with --key',
      );
    }
    return { parallelism };
  }
  const keyBytes = intOption(values, 'key-bytes', 8, { min: 1, max: 65536 });
  const { maxParallelism } = resolveRescaleTarget({ subtask: 0, parallelism, keyBytes });
  return { parallelism, maxParallelism, keyBytes };
}

/**
 * The table rows of a rescaled run's record counts (none without rescaling).
 *
 * @example
 * ```ts
 * recordRows({ read: 200, kept: 105, dropped: 95 }); // [['records read', 200], …]
 * ```
 */
export function recordRows(records: RecordReport | undefined): [string, number][] {
  if (records === undefined) return [];
  return [
    ['records read', records.read],
    ['records kept', records.kept],
    ['records dropped', records.dropped],
    // A Flink recovery's other elements, never counted as records.
    ...(records.watermarks !== undefined
      ? [['watermarks kept', records.watermarks] as [string, number]]
      : []),
    // Said, never silent: Flink's restore completes these from the upstream's output state,
    // which this checkpoint lacks for them, or where different records fit (--upstream).
    ...(records.cut !== undefined && records.cut > 0
      ? [['records cut, not completed', records.cut] as [string, number]]
      : []),
    ...(records.elementsDropped !== undefined && records.elementsDropped > 0
      ? [['other elements dropped', records.elementsDropped] as [string, number]]
      : []),
  ];
}

/**
 * Refuses `--rescale` on a local SPWC v1 file before anything is created: v1 entries carry no
 * old subtask and hold raw bytes, not records, so the record parser would call the file
 * corrupt at its first odd length when it is merely the wrong kind (exit 2, one line). Other
 * sources (remote, not SPWC) are left to the recovery, which reports them as it reads.
 *
 * @example
 * ```ts
 * await refuseV1ForRescale('state.spwc', 'state.spwc'); // throws UsageError for a v1 file
 * ```
 */
export async function refuseV1ForRescale(path: string, shown: string): Promise<void> {
  if (isUri(path)) return;
  let header: Buffer;
  try {
    const file = await open(path, 'r');
    try {
      header = Buffer.alloc(CHECKPOINT_HEADER_BYTES);
      const { bytesRead } = await file.read(header, 0, header.length, 0);
      if (bytesRead < header.length) return;
    } finally {
      await file.close();
    }
  } catch {
    return; // Unreadable: the recovery's own check names the reason.
  }
  if (
    header.subarray(0, 4).equals(CHECKPOINT_MAGIC) &&
    header.readUInt32BE(4) === CHECKPOINT_VERSION
  ) {
    throw new UsageError(
      `${shown}: not a record checkpoint (v1; rescaling needs v2, as written by 'spillway checkpoint make --records')`,
    );
  }
}
