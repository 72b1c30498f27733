/**
 * A checkpoint taken during recovery: cuts the drainer (barriers + snapshot reader, atomically)
 * and writes the snapshot's remainder as an SPWC file. It owns the snapshot reader from the
 * instant it exists until it closes it (rows S1–S4).
 */
import { fromPromise } from 'xstate';
import type { Drainer } from '../services/drainer.ts';
import { writeRemainder } from '../services/remainder-writer.ts';
import { addSuppressed, toError } from '../services/errors.ts';
import type { CheckpointReply, CheckpointResult, TaskRef } from './events.ts';

export interface CheckpointWriterInput {
  parent: TaskRef;
  drainer: Drainer;
  checkpointId: number;
  out: string;
  reply: CheckpointReply;
}

/**
 * Never rejects: a failed checkpoint fails the checkpoint (its caller's promise), never the
 * task (row S4).
 */
export const checkpointWriter = fromPromise<void, CheckpointWriterInput>(
  async ({ input, signal }) => {
    const { parent, checkpointId, reply } = input;
    let reader;
    try {
      // Synchronous with the CHECKPOINT event: no delivery can interleave (G6).
      reader = input.drainer.snapshotAndInsertBarriers(checkpointId);
    } catch (error) {
      reply.reject(toError(error)); // row S1: nothing was created
      return;
    }
    if (signal.aborted) {
      await reader.close().catch(() => undefined); // row S2
      reply.reject(new Error(`checkpoint ${checkpointId}: task ended before it started`));
      return;
    }
    parent.send({ type: 'SNAPSHOT.OWNED', checkpointId, reader });
    let result: CheckpointResult | undefined;
    let failure: Error | undefined;
    try {
      const summary = await writeRemainder(reader, input.out);
      result = { checkpointId, file: summary.file, channels: summary.channels };
    } catch (error) {
      failure = toError(error);
    }
    try {
      await reader.close();
    } catch (error) {
      if (failure !== undefined) addSuppressed(failure, error);
      else failure = toError(error);
    }
    if (!signal.aborted)
      parent.send({ type: 'SPILL.RELEASED', resource: `snapshot-${checkpointId}` });
    if (failure !== undefined) reply.reject(failure);
    else reply.resolve(result!);
  },
);
