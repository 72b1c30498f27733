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
export type { ChannelConsumer, ChannelInfo } from './services/channel.ts';
export type { SpillLimits } from './services/spill/limits.ts';
export type { TaskHooks, StageName } from './machines/task-services.ts';
export type { CheckpointResult, OwnerId, ResourceId, TaskEvent } from './machines/events.ts';
export { taskMachine } from './machines/task.machine.ts';
export { makeCheckpoint, type MakeCheckpointOptions } from './services/checkpoint/generator.ts';
export { readCheckpoint } from './services/checkpoint/reader.ts';
export { CheckpointWriter } from './services/checkpoint/writer.ts';
export { SpillRoot, resolveSpillRoot } from './services/spill-root/spill-root.ts';
export { sweepSpillRoot, type SweepReport } from './services/spill-root/sweep.ts';
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
