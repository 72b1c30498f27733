/// <reference types="node" preserve="true" />
// The declarations use Node's types (Buffer, streams, AsyncDisposable): a consumer whose
// TypeScript loads no @types by default (TS 6+, `types: []`) still compiles against them.
/**
 * Spillway's public API: recover spilled channel state as an XState task actor, with no spill
 * file surviving any ending of the task. Importing it does nothing: no file is read, no hook
 * installed, until a recovery starts or a spill root is opened.
 *
 * @example
 * ```ts
 * import { recoverChannelState } from 'spillway';
 *
 * const recovery = recoverChannelState({
 *   checkpoint: 'job.spwc',
 *   channels: ({ gate, channel }) => ({
 *     onBuffer: (buf) => console.log(gate, channel, buf.length),
 *     onFinished: () => console.log(gate, channel, 'done'),
 *   }),
 * });
 * const report = await recovery.done;
 * ```
 *
 * @packageDocumentation
 */
import { startRecovery } from './recover.ts';
import type { RecoverOptions, Recovery } from './recovery-types.ts';
import { validateRecoverOptions } from './recovery-options.ts';

/**
 * Recovers the channel state in `options.checkpoint` into `options.channels`, as an XState task
 * actor with fetch, gap and drain stages. `done` settles only after every spill file is gone.
 *
 * @example
 * ```ts
 * import { recoverChannelState } from 'spillway';
 *
 * await using recovery = recoverChannelState({
 *   checkpoint: 'job-42.spwc',
 *   channels: () => ({ onBuffer: (buf) => void buf, onFinished: () => undefined }),
 * });
 * const report = await recovery.done; // every spill file is gone by now
 * console.log(report.bytesDelivered);
 * ```
 */
export function recoverChannelState(options: RecoverOptions): Recovery {
  // The public keys only: `hooks` and `machine` are the tests' and the demo's.
  validateRecoverOptions(options);
  return startRecovery(options);
}

export {
  recoverToDirectory,
  type DirectoryReport,
  type RecoverToDirectoryOptions,
  type RescaleAll,
} from './recover-to-directory.ts';
export type { DirectoryUnit, SideReport } from './services/outputs/recover-to-directory.ts';
export type {
  CheckpointOptions,
  ConsumerInfo,
  OwnedResource,
  OwnershipReport,
  RecoverOptions,
  Recovery,
  RecoveryReport,
  StageTag,
  TaskActor,
  TaskInspectionEvent,
  TaskSnapshot,
  TaskStateValue,
  TaskView,
} from './recovery-types.ts';
export type { ChannelConsumer, ChannelInfo } from './services/channel.ts';
export type { ChannelTarget } from './services/channel-streams.ts';
export type { ProgressStage, RecoveryProgress } from './services/progress.ts';
export { channelKey } from './services/channel.ts';
export type { SpillLimits } from './services/spill/limits.ts';
export type { CheckpointResult, OwnerId, ResourceId } from './machines/events.ts';
export type { RescaleOption, RecordPredicate } from './services/rescale/rescale-options.ts';
export type { RescaleTarget } from './services/rescale/key-groups.ts';
export type { VirtualChannel } from './services/rescale/record-parser.ts';
export type { RecordReport } from './services/spill/filtering-spill.ts';
export { sweepSpillRoot, type SweepReport } from './services/spill-root/sweep.ts';
export {
  listSpillRoot,
  type OwnerListing,
  type SpillRootListing,
  type TaskDirListing,
} from './services/spill-root/listing.ts';
export { type OwnerMarker } from './services/spill-root/identity.ts';
export {
  SpillwayError,
  type SpillwayErrorCode,
  type ErrorKind,
  CorruptCheckpointError,
  CheckpointPathError,
  CheckpointDeclinedError,
  AbortedError,
  CancelledError,
  RejectedError,
  CleanupError,
  MisuseError,
  SpillEOFError,
  SpillCorruptError,
  SpillRootError,
  OutputDirError,
  OutputExistsError,
  CheckpointOutError,
  ConsumerError,
  IoError,
  InternalError,
  isSpillwayError,
  type AnySpillwayError,
  ConsumerAbandonedError,
  CheckpointChangedError,
  RemoteLocationError,
  RemoteNotFoundError,
  RemoteAccessError,
  RemoteError,
  RemoteUnsupportedError,
  RemoteTimeoutError,
  UnknownOperatorError,
  TypeSpecError,
  RewriteRefusedError,
  suppressedOf,
} from './services/errors.ts';
export type {
  RemoteOptions,
  RetryInfo,
  RetryPolicy,
  S3Options,
} from './services/locations/remote-options.ts';
export {
  listFlinkCheckpoint,
  type FlinkCheckpointListing,
  type FlinkOperatorListing,
  type FlinkSubtaskListing,
  type FlinkChannelListing,
  type ListFlinkOptions,
} from './services/formats/flink/list.ts';
export type { CheckpointFormat } from './services/formats/entries.ts';
export type { FlinkKey, FlinkSelection } from './services/formats/flink/entry-source.ts';
export type { FlinkPathOptions, FlinkRelocation } from './services/formats/flink/paths.ts';
export { keyHash } from './services/formats/flink/stream-element.ts';
export {
  readFlinkRecords,
  type ReadFlinkRecordsOptions,
} from './services/formats/flink/records/read-records.ts';
export type {
  FlinkElement,
  FlinkElementKind,
  FlinkElementPosition,
  StitchedFrom,
} from './services/formats/flink/records/elements.ts';
export type { FlinkValue } from './services/formats/flink/records/decode.ts';
export type { FlinkType, FlinkField } from './services/formats/flink/records/type-spec.ts';
export {
  rewriteFlinkCheckpoint,
  type RewriteFlinkCheckpointOptions,
  type FlinkRewriteResult,
  type FlinkRewriteProgress,
  type FlinkRewriteSubtask,
  type FlinkDropSelector,
  type FlinkKeyDrop,
  type FlinkRewriteElement,
  type FlinkDroppedElement,
} from './services/formats/flink/write/rewrite.ts';
export { VERSION } from './version.ts';
// Test-data generators and the SPWC reader and writer: `spillway/testing`; Flink's key-group
// maths: `spillway/rescale`; the machines with their XState types: `spillway/machines`.
