/**
 * `spillway/testing`: checkpoints for tests, demos and benchmarks — the generators that make
 * SPWC files of a given size and shape, and the SPWC format's own writer and streaming reader.
 * A program that only recovers needs none of it (`spillway` alone).
 *
 * @example
 * ```ts
 * import { makeCheckpoint, readCheckpoint } from 'spillway/testing';
 *
 * const made = await makeCheckpoint({ out: 'test.spwc', mb: 4, channels: 8 });
 * const summary = await readCheckpoint('test.spwc', { onEntry() {}, onPayload() {} });
 * console.log(made.payloadBytes === summary.payloadBytes);
 * ```
 *
 * @packageDocumentation
 */
export {
  makeCheckpoint,
  type MadeCheckpoint,
  type MakeCheckpointOptions,
} from './services/formats/spwc/generator.ts';
export {
  makeRecordCheckpoint,
  type MadeRecordCheckpoint,
  type MakeRecordCheckpointOptions,
} from './services/formats/spwc/record-generator.ts';
export {
  readCheckpoint,
  type CheckpointSummary,
  type CheckpointVisitor,
  type ReadCheckpointOptions,
} from './services/formats/spwc/reader.ts';
export { CheckpointWriter } from './services/formats/spwc/writer.ts';
export {
  readCheckpointEntries,
  detectCheckpointFormat,
  FLINK_METADATA_MAGIC,
  type CheckpointFormat,
  type EntriesSummary,
  type EntryVisitor,
  type ReadEntriesOptions,
} from './services/formats/entries.ts';
