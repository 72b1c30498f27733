/**
 * Flink's own statistics of a checkpoint's persisted in-flight data (interop/flink
 * `PersistedStats`, written by TypedWriter as `flink-stats.json`): per job vertex and subtask,
 * `alignment.persisted` of `GET /jobs/:jobid/checkpoints/details/:chk/subtasks/:vertex`, i.e.
 * `SubtaskStateStats.getPersistedData()`. Flink fills it with the task's
 * `bytesPersistedDuringAlignment`, which `AsyncCheckpointRunnable` sums over every operator of
 * the chain as `getResultSubpartitionState().getStateSize() + getInputChannelState().getStateSize()`
 * — so the comparable figure is, per vertex subtask, the sum over the chain's operators of
 * `flink ls`'s input + output bytes of that subtask.
 */
import { readFileSync } from 'node:fs';
import type { FlinkCheckpointListing } from '../../src/services/formats/flink/list.ts';

/** `flink-stats.json`, as PersistedStats writes it. */
export interface FlinkPersistedStats {
  checkpointId: number;
  field: string;
  vertices: {
    id: string;
    name: string;
    /** The chain's operator ids. */
    operators: string[];
    subtasks: { index: number; persisted: number; stateSize: number }[];
  }[];
}

export function readPersistedStats(file: string): FlinkPersistedStats {
  return JSON.parse(readFileSync(file, 'utf8')) as FlinkPersistedStats;
}

/** One vertex subtask: Flink's persisted bytes and `flink ls`'s sum over the chain. */
export interface PersistedRow {
  vertex: string;
  subtask: number;
  flink: number;
  ls: number;
}

/** Per vertex subtask, Flink's figure beside the listing's (input + output over the chain). */
export function persistedRows(
  stats: FlinkPersistedStats,
  listing: FlinkCheckpointListing,
): PersistedRow[] {
  return stats.vertices.flatMap((v) =>
    v.subtasks.map((s) => {
      let ls = 0;
      for (const id of v.operators) {
        const sub = listing.operators
          .find((o) => o.id === id)
          ?.subtasks.find((x) => x.index === s.index);
        if (sub !== undefined) ls += sub.inputBytes + sub.outputBytes;
      }
      return { vertex: v.name, subtask: s.index, flink: s.persisted, ls };
    }),
  );
}
