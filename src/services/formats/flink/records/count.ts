/**
 * Element counts per input channel and output subpartition (`flink ls --channels`, `flink report`
 * and `flink diff` with `--type` or `--key`, DESIGN §8): every listed subtask's state is read
 * with `readFlinkRecords` — the reader `flink records` prints from, so a count is the number of
 * lines `flink records` prints for that channel, by kind — and a value that does not parse under
 * the type fails the count as it fails `flink records` (the channel and element index named).
 */
import { CorruptCheckpointError } from '../../../errors.ts';
import { describeOperator } from '../metadata-resolve.ts';
import type { FlinkCheckpointMetadata } from '../metadata-types.ts';
import type { FlinkPathOptions } from '../paths.ts';
import type { FlinkKey } from '../entry-source.ts';
import type { SourceOptions } from '../../../locations/source.ts';
import type { FlinkElement } from './elements.ts';
import { readFlinkRecords } from './read-records.ts';
import { parseTypeSpec, type FlinkType } from './type-spec.ts';
import { countKey, noElements, type FlinkElementCounts } from './element-counts.ts';

export { addCounts, countKey, noElements, type FlinkElementCounts } from './element-counts.ts';

/** How the elements are read for counting. */
export interface CountFlinkElementsOptions extends FlinkPathOptions {
  /** Each record's value is decoded by this type (a value that does not parse fails the count). */
  type?: string | FlinkType | undefined;
  /** Each record's key is read (a value shorter than its key fails the count). */
  key?: FlinkKey | undefined;
  signal?: AbortSignal | undefined;
  remote?: SourceOptions | undefined;
}

function tally(counts: FlinkElementCounts, e: FlinkElement): void {
  if (e.kind === 'record') counts.records++;
  else if (e.kind === 'watermark') counts.watermarks++;
  else if (e.kind === 'partial') counts.partial++;
  else counts.otherElements++;
}

/**
 * Counts the elements of every input channel and output subpartition of the operators `ids`
 * (every operator of `metadata` when absent), reading each subtask's side once; the map is
 * keyed by {@link countKey} (`gate`/`channel` are partition/subpartition on the output side).
 * Channels with no element are absent.
 *
 * @example
 * ```ts
 * const meta = await readFlinkMetadata('chk-7');
 * const counts = await countFlinkElements(meta, { type: 'Tuple<Long, String>' });
 * counts.get(countKey(meta.operators[0]!.id, 0, 'input', 0, 1))?.records;
 * ```
 */
export async function countFlinkElements(
  metadata: FlinkCheckpointMetadata,
  options: CountFlinkElementsOptions,
  ids?: readonly string[],
): Promise<Map<string, FlinkElementCounts>> {
  // Parsed once, so a bad spec fails before anything is read.
  const type = typeof options.type === 'string' ? parseTypeSpec(options.type) : options.type;
  const out = new Map<string, FlinkElementCounts>();
  const wanted = ids === undefined ? undefined : new Set(ids);
  for (const op of metadata.operators) {
    if (wanted !== undefined && !wanted.has(op.id)) continue;
    const subtasks = [...op.subtasks].sort((a, b) => a.index - b.index);
    for (const s of subtasks) {
      for (const outputState of [false, true]) {
        const handles = outputState ? s.outputSubpartitions : s.inputChannels;
        if (!handles.some((h) => h.offsets.length > 0)) continue;
        const elements = readFlinkRecords({
          checkpoint: metadata.location,
          metadata,
          operator: op.id,
          subtask: s.index,
          outputState,
          stitch: false,
          type,
          key: options.key,
          allowPaths: options.allowPaths,
          relocate: options.relocate,
          signal: options.signal,
          remote: options.remote,
        });
        try {
          for await (const e of elements) {
            const key =
              e.side === 'input'
                ? countKey(op.id, s.index, 'input', e.gate, e.channel)
                : countKey(op.id, s.index, 'output', e.partition, e.subpartition);
            let counts = out.get(key);
            if (counts === undefined) out.set(key, (counts = noElements()));
            tally(counts, e);
          }
        } catch (error) {
          // Many operators are read here: the one line says which one held the bad element.
          if (!(error instanceof CorruptCheckpointError)) throw error;
          throw new CorruptCheckpointError(
            error.file,
            error.offset,
            `operator ${describeOperator(op)} subtask ${s.index}: ${error.reason}`,
          );
        }
      }
    }
  }
  return out;
}
