/**
 * A checkpoint taken during recovery: cuts the drainer (barriers + snapshot reader, atomically)
 * and writes the snapshot's remainder as an SPWC file. It owns the snapshot reader from the
 * instant it exists until it closes it (rows S1–S4).
 */
import { fromPromise } from 'xstate';
import type { Drainer } from '../services/spill/drainer.ts';
import {
  checkRemainderOut,
  defaultRemainderPath,
  discardRemainder,
  writeRemainder,
} from '../services/spill/remainder-writer.ts';
import type { TaskEnding } from '../services/task-ending.ts';
import { AbortedError, addSuppressed, CancelledError, toError } from '../services/errors.ts';
import type { CheckpointReply, CheckpointResult } from './events.ts';
import type { TaskRef } from './task-ref.ts';
import { snapshotResource } from './ownership.ts';
import type { S3Options } from '../services/locations/remote-options.ts';

export interface CheckpointWriterInput {
  parent: TaskRef;
  drainer: Drainer;
  checkpointId: number;
  /** Where the remainder goes; by default `<task dir>-checkpoint-<id>.spwc`. */
  out?: string | undefined;
  /** The caller's own signal: aborting it cancels this checkpoint only, never the task. */
  signal?: AbortSignal | undefined;
  reply: CheckpointReply;
  /** Rescaling: the remainder is a v2 file written as this new subtask. */
  remainder?: { subtask: number } | undefined;
  /** For an `s3://` out: endpoint and region. */
  s3?: S3Options | undefined;
  /** The task's ending: a remainder written without `out` is the task's to delete as it ends. */
  ending: Pick<TaskEnding, 'ownForCaller'>;
}

/**
 * Never rejects: a failed checkpoint fails the checkpoint (its caller's promise), never the
 * task (row S4).
 */
export const checkpointWriter = fromPromise<void, CheckpointWriterInput>(
  async ({ input, signal }) => {
    const { parent, checkpointId, reply } = input;
    // A checkpoint may be requested from inside a consumer's onBuffer, i.e. between the
    // drainer's delivery of a buffer and its commit. Cutting there would put that buffer both
    // before the barrier and in the remainder (G6 overlap). One microtask later the delivery's
    // synchronous critical section has ended, and the cut below is itself synchronous.
    await Promise.resolve();
    const taskDir = input.drainer.state.taskDir;
    // Without `out` the remainder goes beside the task dir (which the drain's end deletes), in
    // the owner dir: the task's ending deletes it (registered below, as it is written) unless
    // its caller moved it away first, and a sweep takes it with a dead owner's dir.
    const out = input.out ?? defaultRemainderPath(taskDir, checkpointId);
    const userSignal = input.signal;
    const cancelledByCaller = () =>
      new CancelledError(`checkpoint ${checkpointId}: cancelled by its signal`, {
        cause: userSignal?.reason,
      });
    // Refused before anything is cut or written: an `out` that exists or cannot be made.
    // Checked synchronously: a round trip here would let the drain run on, and a checkpoint
    // asked for while the task was draining could find the task ended (G6's cut must follow
    // the request within the same turn).
    if (!signal.aborted) {
      try {
        checkRemainderOut(out);
      } catch (error) {
        reply.reject(toError(error));
        return;
      }
    }
    if (signal.aborted) {
      // Row S2: the task ended before the writer ran; nothing was cut, nothing is held.
      reply.reject(new AbortedError(`checkpoint ${checkpointId}: task ended before it started`));
      return;
    }
    if (userSignal?.aborted) {
      reply.reject(cancelledByCaller());
      return;
    }
    let reader;
    try {
      reader = input.drainer.snapshotAndInsertBarriers(checkpointId);
    } catch (error) {
      reply.reject(toError(error)); // row S1: nothing was created
      return;
    }
    parent.send({ type: 'SNAPSHOT.OWNED', checkpointId, reader });
    let result: CheckpointResult | undefined;
    let failure: Error | undefined;
    try {
      const summary = await writeRemainder(reader, out, taskDir, {
        s3: input.s3,
        signal: userSignal !== undefined ? AbortSignal.any([signal, userSignal]) : signal,
        v2: input.remainder,
      });
      result = { checkpointId, file: summary.file, channels: summary.channels };
    } catch (error) {
      failure = toError(error);
    }
    let closeError: Error | undefined;
    try {
      await reader.close();
    } catch (error) {
      closeError = toError(error);
      if (failure !== undefined) addSuppressed(failure, error);
      else failure = toError(error);
    }
    // A checkpoint of a task that ended meanwhile is aborted, as Flink aborts the checkpoints
    // of a cancelled task, even if its remainder happened to be complete.
    // Whatever the write hit after the task ended (its staging file deleted with the task dir,
    // a fenced read) is a consequence of that ending, not the checkpoint's own failure.
    if (signal.aborted && !(failure instanceof AbortedError)) {
      failure = new AbortedError(`checkpoint ${checkpointId}: task ended while it was written`, {
        cause: failure,
      });
    } else if (userSignal?.aborted && !(failure instanceof CancelledError)) {
      const cancelled = cancelledByCaller();
      if (failure !== undefined && failure !== userSignal.reason) addSuppressed(cancelled, failure);
      failure = cancelled;
    }
    if (failure !== undefined && result?.file !== undefined) {
      // The remainder was written but the checkpoint fails: a file its caller is told to
      // ignore must not stay behind looking like a valid checkpoint.
      await discardRemainder(result.file, input.s3).catch((e) => addSuppressed(failure!, e));
    }
    if (!signal.aborted) {
      parent.send({
        type: 'SPILL.RELEASED',
        resource: snapshotResource(checkpointId),
        ...(closeError !== undefined ? { error: closeError } : {}),
      });
    }
    if (failure !== undefined) {
      reply.reject(failure);
      return;
    }
    const written = result!.file;
    if (input.out === undefined && written !== undefined) {
      // The default remainder is the task's to delete as it ends (after its caller has had it
      // until then); a file its caller moved away first is fine.
      input.ending.ownForCaller(written, { close: () => discardRemainder(written) });
    }
    reply.resolve(result!);
  },
);
