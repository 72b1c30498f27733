/**
 * Fault injection through the real seams, never mocks: the fs seam's hook and armed faults,
 * the task's {@link TaskHooks}, and the channel consumers a loop's recovery delivers into.
 * Each fault is scoped to one loop (by path, or by being that loop's hook or consumer) and
 * records in the loop's {@link LoopState} whether it fired, for the judge.
 */
import { basename, join } from 'node:path';
import type { TaskHooks } from '../recover.ts';
import type { TaskServices } from '../machines/task-services.ts';
import { channelKey, type ChannelConsumer, type ChannelInfo } from '../services/channel.ts';
import { crc32 } from '../services/crc32.ts';
import type { FsOp } from '../services/fs.ts';
import { faultSeam, type FaultCode, type FsHook } from './fault-seam.ts';
import { SPILL_FILE_NAME_RE } from '../services/spill/segment-format.ts';
import { InjectedFaultError } from './faults.ts';
import { taskDirMarker, taskIdInPath, type ChannelTrack, type LoopState } from './loop.ts';
import type { Note, PoolMetrics } from './metrics.ts';

/** What the injector reaches beyond the loop it injects into. */
export interface InjectorOptions {
  /** The loops running now, by task id: the fs hook finds a path's loop here. */
  live: ReadonlyMap<string, LoopState>;
  /** Where `checkpoint` loops write their remainder files (the judge removes them). */
  workDir: string;
  /** The figure the channel consumers keep. */
  figures: Pick<PoolMetrics, 'bytesDelivered'>;
  note: Note;
  /** The caller's own hook, run after the injector's on every fs operation. */
  next?: FsHook | undefined;
}

/** Applies each loop's planned fault at its planned point. */
export class FaultInjector {
  constructor(private readonly options: InjectorOptions) {}

  /**
   * The fs seam's hook while the pool runs: notes the spill files each loop opens and sends
   * the cancels that are timed by file operations.
   */
  readonly fsHook: FsHook = (op: FsOp, path: string) => {
    const id = taskIdInPath(path);
    const state = id === undefined ? undefined : this.options.live.get(id);
    if (state !== undefined) {
      if (op === 'open' && SPILL_FILE_NAME_RE.test(basename(path))) state.spillFiles.add(path);
      const { kind, variant, nth } = state.plan;
      if (state.failing && !state.fired) {
        this.cancelTask(state, 'injected: cancel after the failure');
      } else if (op === 'write' && kind === 'cancel-fetch') {
        // Cancel while the writer is mid-write: the write lands after the abort (G3, F4).
        if (++state.writes === nth) this.cancelTask(state, 'injected: cancel in fetch');
      } else if (op === 'write' && kind === 'cancel-after-failure' && variant === 'fetch') {
        // This write is the one the armed ENOSPC fails.
        if (++state.writes === nth) state.failing = true;
      }
    }
    return this.options.next?.(op, path);
  };

  /** Arms the loop's fs fault, scoped by path to this task (or this slot's checkpoint copy). */
  armFsFault(state: LoopState): () => void {
    const { plan } = state;
    const taskDir = taskDirMarker(state.id);
    const arm = (op: FsOp, code: FaultCode, pathIncludes: string) =>
      faultSeam().injectFault({ op, code, nth: plan.nth, pathIncludes });
    switch (plan.kind) {
      case 'fetch-error':
        return arm('read', 'EIO', state.input);
      case 'close-error':
        return arm('close', 'EIO', taskDir);
      case 'enospc':
        return arm('write', 'ENOSPC', taskDir);
      case 'cancel-after-failure':
        if (plan.variant === 'fetch') return arm('write', 'ENOSPC', taskDir);
        return () => undefined;
      case 'drain-error':
        if (plan.variant === 'spill-read') return arm('read', 'EIO', taskDir);
        return () => undefined;
      default:
        return () => undefined;
    }
  }

  /** The loop's task hooks: the gap's and drain's faults, applied at stage boundaries. */
  hooks(state: LoopState): TaskHooks {
    const { plan } = state;
    return {
      beforeStage: (stage, services) => {
        state.services = services;
        if (stage === 'gap' && plan.variant === 'requestPartitions') {
          if (plan.kind === 'mail-rejected') this.quiesce(state, services);
          if (plan.kind === 'mail-dropped') this.dropNextMail(state, services, 'requestPartitions');
        }
        if (stage === 'gap' && plan.kind === 'cancel-gap' && plan.variant === 'beforeStage') {
          this.cancelTask(state, 'injected: cancel in gap');
        }
        if (stage === 'drain' && plan.kind === 'executor-rejected') {
          state.fired = true;
          void services.executor.shutdown();
        }
      },
      afterDrainerBuilt: () => {
        const services = state.services!;
        if (plan.variant === 'installTrigger') {
          if (plan.kind === 'mail-rejected') this.quiesce(state, services);
          if (plan.kind === 'mail-dropped') this.dropNextMail(state, services, 'installTrigger');
        }
        if (plan.kind === 'cancel-gap' && plan.variant === 'afterDrainerBuilt') {
          this.cancelTask(state, 'injected: cancel in gap');
        }
      },
      beforeDrain: () => {
        if (plan.variant !== 'beforeDrain') return;
        if (plan.kind === 'cancel-drain') this.cancelTask(state, 'injected: cancel in drain');
        if (plan.kind === 'checkpoint') this.takeCheckpoint(state);
      },
    };
  }

  /**
   * The consumer of one channel of the loop: tracks what the channel receives (for G6) and
   * throws, cancels or checkpoints at the planned buffer.
   */
  consumer(state: LoopState, info: ChannelInfo): ChannelConsumer {
    const key = channelKey(info);
    const track: ChannelTrack = { crc: 0, bytes: 0, finished: 0, barriers: new Map() };
    state.tracks.set(key, track);
    const { plan } = state;
    return {
      // Only hashes and counts each buffer, synchronously: it keeps no reference.
      borrows: true,
      onBuffer: (buffer: Buffer): void | Promise<void> => {
        const n = ++state.buffers;
        const hit = plan.variant === 'onBuffer' && n === plan.nth;
        if (plan.kind === 'cancel-after-failure' && plan.variant === 'drain' && n === plan.nth) {
          state.failing = true;
          state.injected = new InjectedFaultError(
            `injected: channel ${key} rejects buffer ${n} of task ${state.id}`,
          );
          throw state.injected;
        }
        if (hit && plan.kind === 'drain-error') {
          state.fired = true;
          state.injected = new InjectedFaultError(
            `injected: channel ${key} rejects buffer ${n} of task ${state.id}`,
          );
          throw state.injected;
        }
        track.crc = crc32(buffer, track.crc);
        track.bytes += buffer.length;
        this.options.figures.bytesDelivered += buffer.length;
        if (hit && plan.kind === 'cancel-drain')
          this.cancelTask(state, 'injected: cancel in drain');
        if (hit && plan.kind === 'checkpoint') {
          // Taken between two deliveries (this buffer is committed by then), never re-entrantly.
          return nextTurn().then(() => this.takeCheckpoint(state));
        }
      },
      onFinished: () => {
        track.finished++;
      },
      onBarrier: (checkpointId: number) => {
        track.barriers.set(checkpointId, { crc: track.crc, bytes: track.bytes });
      },
    };
  }

  private cancelTask(state: LoopState, reason: string): void {
    state.fired = true;
    // beforeStage('fetch') runs inside startRecovery(), before it returns the recovery.
    if (state.recovery !== undefined) state.recovery.cancel(reason);
    else queueMicrotask(() => state.recovery?.cancel(reason));
  }

  private quiesce(state: LoopState, services: TaskServices): void {
    state.fired = true;
    services.mailbox.quiesce();
  }

  /**
   * Row GAP3: a mail queued behind a blocker is dropped when the blocker closes the mailbox, so
   * its promise never settles and the gap stage hangs; only a cancel ends the task, and only
   * the registry backstop can free what the stage held.
   */
  private dropNextMail(state: LoopState, services: TaskServices, expected: string): void {
    const { mailbox } = services;
    void mailbox
      .execute('demo-blocker', async () => {
        for (let i = 0; i < 1000 && mailbox.pending === 0; i++) await nextTurn();
        const { names } = mailbox.close();
        if (names.includes(expected)) state.fired = true;
        else this.options.note(`${state.id}: wanted to drop '${expected}', dropped [${names}]`);
        state.recovery?.cancel(`injected: mail '${expected}' dropped`);
      })
      .catch(() => undefined);
  }

  private takeCheckpoint(state: LoopState): void {
    state.fired = true;
    state.checkpointOut = join(this.options.workDir, `remainder-${state.id}.spwc`);
    state.checkpoint = state.recovery!.checkpoint(1, { out: state.checkpointOut });
    // Judged after the loop; never an unhandled rejection meanwhile.
    state.checkpoint.catch(() => undefined);
  }
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
