/**
 * A recovery's progress: plain counters the stages bump as they go (a few additions per
 * buffer, no event), read and published coalesced by whoever watches — cheap enough to leave
 * on. The CLI's own progress bar is drawn from it.
 */
import type { StageTag } from './stage.ts';

/**
 * Where a recovery is: a stage while restoring, then how it ended.
 *
 * @example
 * ```ts
 * const ended = (stage: ProgressStage) => ['finished', 'failed', 'cancelled'].includes(stage);
 * ```
 */
export type ProgressStage = 'starting' | StageTag | 'finished' | 'failed' | 'cancelled';

/**
 * One reading of a recovery's progress.
 *
 * @example
 * ```ts
 * const onProgress = (p: RecoveryProgress) => {
 *   const total = p.stage === 'fetch' ? p.checkpointBytes : p.payloadBytes;
 *   const done = p.stage === 'fetch' ? p.bytesRead : p.bytesDelivered;
 *   console.log(p.stage, total ? `${Math.round((100 * done) / total)}%` : '…');
 * };
 * ```
 */
export interface RecoveryProgress {
  readonly taskId: string;
  readonly stage: ProgressStage;
  /** Size of the checkpoint, once it is open. */
  readonly checkpointBytes: number | undefined;
  /** Checkpoint payload bytes read so far. */
  readonly bytesRead: number;
  /** Bytes written to spill files so far (segment headers included). */
  readonly bytesSpilled: number;
  readonly spillFiles: number;
  /** The payload to deliver, once the fetch stage has read all of it. */
  readonly payloadBytes: number | undefined;
  readonly bytesDelivered: number;
  /** Channels the checkpoint names, once fetched. */
  readonly channels: number | undefined;
  /**
   * Channels whose every byte was delivered, counted as the drain goes; a channel is finished
   * (`onFinished`, counted in `channelsFinished`) only once the whole drain is done.
   */
  readonly channelsDelivered: number;
  readonly channelsFinished: number;
  /** Checkpoints taken during the recovery. */
  readonly checkpoints: number;
  /** Reads of the checkpoint retried after a transient failure (remote sources). */
  readonly retries: number;
  readonly elapsedMs: number;
}

/**
 * The live counters behind {@link RecoveryProgress}, shared by the stages of one task.
 *
 * @example
 * ```ts
 * const progress = new ProgressCounters('t1');
 * progress.bytesRead += chunk.length;
 * console.log(progress.read('fetch').bytesRead);
 * ```
 */
export class ProgressCounters {
  checkpointBytes: number | undefined;
  bytesRead = 0;
  bytesSpilled = 0;
  spillFiles = 0;
  /** The task dir, once the spill writer took it. */
  taskDir: string | undefined;
  payloadBytes: number | undefined;
  bytesDelivered = 0;
  channels: number | undefined;
  channelsDelivered = 0;
  channelsFinished = 0;
  checkpoints = 0;
  retries = 0;
  private readonly started = performance.now();

  constructor(readonly taskId: string) {}

  /** A frozen reading at `stage`. */
  read(stage: ProgressStage): RecoveryProgress {
    return Object.freeze({
      taskId: this.taskId,
      stage,
      checkpointBytes: this.checkpointBytes,
      bytesRead: this.bytesRead,
      bytesSpilled: this.bytesSpilled,
      spillFiles: this.spillFiles,
      payloadBytes: this.payloadBytes,
      bytesDelivered: this.bytesDelivered,
      channels: this.channels,
      channelsDelivered: this.channelsDelivered,
      channelsFinished: this.channelsFinished,
      checkpoints: this.checkpoints,
      retries: this.retries,
      elapsedMs: Math.round(performance.now() - this.started),
    });
  }
}
