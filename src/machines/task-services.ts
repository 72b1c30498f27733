/**
 * What one task's actors share: the services a Flink StreamTask would own (mailbox, channel-IO
 * executor) plus the task's inputs. Built by `recoverChannelState`; the task machine makes the
 * rest (its ending: the registry, the close, the first cause) itself.
 */
import type { Mailbox } from '../services/mailbox.ts';
import type { SerialExecutor } from '../services/executor.ts';
import type { ChannelInfo } from '../services/channel.ts';
import type { ChannelConsumer } from '../services/channel.ts';
import type { Drainer } from '../services/spill/drainer.ts';
import type { SpillLimits } from '../services/spill/limits.ts';
import type { RemoteOptions } from '../services/locations/remote-options.ts';
import type { ProgressCounters } from '../services/progress.ts';
import type { FetchStageInput } from '../services/spill/fetch-stage.ts';
import type { RescaleOption } from '../services/rescale/rescale-options.ts';
import type { PlannedFlinkSelection } from '../services/formats/flink/entry-source.ts';

import type { StageName } from '../services/stage.ts';

export type { StageName };

/**
 * Fault and timing hooks for tests and the demo's fault injection. The stages call none of
 * them: `withHooks` (task-hooks.ts) runs each where a stage reaches the task's mailbox or
 * executor, inside that stage's actor, so whatever a hook throws arrives as that stage's
 * failure, never inside the task machine.
 */
export interface TaskHooks {
  /** Runs as a stage starts, before its first mail or job is submitted. */
  beforeStage?(stage: StageName, services: TaskServices): void | Promise<void>;
  /** Runs in the build-drainer mail right after the drainer exists (row GAP4 throws here). */
  afterDrainerBuilt?(drainer: Drainer): void;
  /** Runs in the drain job right before draining starts. */
  beforeDrain?(drainer: Drainer): void | Promise<void>;
}

export interface TaskServices {
  readonly taskId: string;
  readonly checkpoint: string;
  /** Resolves to this task's dir path (not created) once the spill root is open. */
  readonly taskDir: () => Promise<string>;
  readonly limits: SpillLimits;
  /** Rescaling: the fetch stage spills through the filtering handler. */
  readonly rescale?: RescaleOption | undefined;
  /** Remote checkpoints: S3 endpoint, retry policy (undefined for defaults). */
  readonly remote?: RemoteOptions | undefined;
  /** A Flink checkpoint: the operator, subtask and side the fetch stage reads. */
  readonly flink?: PlannedFlinkSelection | undefined;
  /** The file seam the spill files go through (a test's or the demo's); the product's if unset. */
  readonly fs?: FetchStageInput['fs'];
  /** The counters the stages bump (progress reporting). */
  readonly progress: ProgressCounters;
  /** How long an ending waits for a consumer that has not returned (G11). */
  readonly abandonAfterMs: number | undefined;
  readonly channels: (info: ChannelInfo) => ChannelConsumer;
  /** Told of every throw or rejection of a consumer's call, as the drain sees it. */
  readonly consumerError?: ((error: unknown) => void) | undefined;
  readonly mailbox: Mailbox;
  readonly executor: SerialExecutor;
}

/** What a stage keeps of the task's ending: where an error raised after its stop goes. */
export interface LateErrors {
  lateError(error: unknown): void;
}
