/**
 * Spillway's public API: recover spilled channel state as an XState task actor, with no spill
 * file surviving any ending of the task.
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
 */
export {
  recoverChannelState,
  type RecoverOptions,
  type Recovery,
  type RecoveryReport,
  type TaskActor,
} from './recover.ts';
export type { ChannelConsumer } from './services/drainer.ts';
export type { ChannelInfo } from './services/fetched-state.ts';
export type { SpillLimits } from './services/fetch-stage.ts';
export type { TaskHooks, StageName } from './machines/task-services.ts';
export type { CheckpointResult, OwnerId, ResourceId, TaskEvent } from './machines/events.ts';
export { taskMachine } from './machines/task.machine.ts';
export {
  makeCheckpoint,
  readCheckpoint,
  CheckpointWriter,
  type MakeCheckpointOptions,
} from './services/checkpoint.ts';
export {
  SpillRoot,
  sweepSpillRoot,
  resolveSpillRoot,
  type SweepReport,
} from './services/spill-root.ts';
export {
  SpillwayError,
  CorruptCheckpointError,
  AbortedError,
  CancelledError,
  RejectedError,
  CleanupError,
  MisuseError,
  suppressedOf,
} from './services/errors.ts';
