/**
 * What a program can watch of a running recovery without touching XState: its progress,
 * published coalesced, and who owns which spill resource with where it is and how big.
 */
import type { Actor } from 'xstate';
import type { TaskMachine, TaskContext } from './machines/task.machine.ts';
import type { ResourceId } from './machines/events.ts';
import type { OwnedResource, OwnershipReport } from './recovery-types.ts';
import type { ProgressCounters, RecoveryProgress } from './services/progress.ts';

/**
 * The ownership map with each resource's path, files and bytes where they are known: the task
 * dir while the fetch stage writes it, the fetched state and the drainer from the counters of
 * what was spilled and delivered, a snapshot reader by the dir it reads.
 *
 * @example
 * ```ts
 * describeOwnership(actor.getSnapshot().context, progress).fetchedState?.files;
 * ```
 */
export function describeOwnership(
  context: TaskContext,
  progress: ProgressCounters,
): OwnershipReport {
  const out: Partial<Record<ResourceId, OwnedResource>> = {};
  const dir = context.state?.taskDir ?? progress.taskDir;
  for (const [resource, owner] of Object.entries(context.ownership) as [
    ResourceId,
    OwnedResource['owner'],
  ][]) {
    if (resource === 'taskDir') {
      out[resource] = {
        owner,
        path: dir,
        files: progress.spillFiles,
        bytes: progress.bytesSpilled,
      };
    } else if (resource === 'fetchedState') {
      out[resource] = {
        owner,
        path: dir,
        files: context.state?.files.length,
        bytes: progress.bytesSpilled,
      };
    } else if (resource === 'drainer') {
      const left =
        progress.payloadBytes === undefined
          ? undefined
          : Math.max(0, progress.payloadBytes - progress.bytesDelivered);
      out[resource] = { owner, path: dir, files: context.state?.files.length, bytes: left };
    } else {
      out[resource] = { owner, path: dir, files: undefined, bytes: undefined };
    }
  }
  return out;
}

/**
 * Publishes progress to `onProgress`: at every stage change, at most every `intervalMs` while
 * the counters move, and the final reading once. The returned function stops watching and
 * publishes that final reading (unless the last one published already was it); the recovery
 * calls it before `done` settles, so the last reading is never seen after `done`. The timer is
 * unref'd: watching never keeps a process alive. A throwing `onProgress` is the caller's bug
 * and must not break the task: it is dropped.
 */
export function watchProgress(
  actor: Actor<TaskMachine>,
  read: () => RecoveryProgress,
  onProgress: (progress: RecoveryProgress) => void,
  { intervalMs }: { intervalMs: number },
): () => void {
  let last: RecoveryProgress | undefined;
  let stopped = false;
  const publish = (force: boolean, final = false) => {
    const now = read();
    // The ending's reading is published once, by the final call only.
    if (
      !final &&
      (now.stage === 'finished' || now.stage === 'failed' || now.stage === 'cancelled')
    ) {
      return;
    }
    if (
      !force &&
      last !== undefined &&
      now.stage === last.stage &&
      now.bytesRead === last.bytesRead &&
      now.bytesDelivered === last.bytesDelivered &&
      now.channelsDelivered === last.channelsDelivered &&
      now.channelsFinished === last.channelsFinished &&
      now.checkpoints === last.checkpoints &&
      now.retries === last.retries
    ) {
      return;
    }
    last = now;
    try {
      onProgress(now);
    } catch {
      // Progress is advice; a broken listener must not fail a recovery.
    }
  };
  const timer = setInterval(() => publish(false), Math.max(1, intervalMs));
  timer.unref();
  const subscription = actor.subscribe({
    next: () => {
      if (last === undefined || read().stage !== last.stage) publish(true);
    },
  });
  return () => {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    subscription.unsubscribe();
    publish(true, true);
  };
}
