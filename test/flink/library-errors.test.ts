/**
 * DESIGN §5: every error that leaves the library is a `SpillwayError` with a stable code — for a
 * Flink checkpoint too. A selection the checkpoint does not hold is bad input with its own class
 * (never a plain `RangeError` wrapped as an internal error), and the listing's failures are ours.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CancelledError,
  CheckpointPathError,
  SpillwayError,
  UnknownOperatorError,
  isSpillwayError,
  listFlinkCheckpoint,
  recoverChannelState,
} from '../../src/index.ts';
import { listFlinkFixtures } from '../helpers/flink-expected.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const fixture = listFlinkFixtures()[0];

describe.skipIf(fixture === undefined)('Flink library errors are ours', () => {
  const f = fixture!;

  it('a subtask outside the operator parallelism rejects done with an UnknownOperatorError (kind subtask), nothing on disk', async () => {
    const root = await makeTempRoot();
    const { operators } = await listFlinkCheckpoint(f.checkpoint);
    const keyed = operators.find((o) => o.id === f.keyedOperator)!;
    const recovery = recoverChannelState({
      checkpoint: f.checkpoint,
      spillRoot: root,
      flink: {
        operator: f.keyedOperator,
        subtask: keyed.parallelism,
        relocate: [{ from: f.originalJobDir, to: f.jobDir }],
      },
      channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
    });
    const error: unknown = await recovery.done.then(
      () => expect.fail('a subtask past the parallelism must be refused'),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UnknownOperatorError);
    expect(isSpillwayError(error)).toBe(true);
    const e = error as UnknownOperatorError;
    expect(e.code).toBe('ERR_SPILLWAY_UNKNOWN_OPERATOR');
    expect(e.kind).toBe('subtask');
    expect(e.subtask).toBe(keyed.parallelism);
    expect(e.operator).toBe(f.keyedOperator);
    expect(e.candidates).toEqual([`0..${keyed.parallelism - 1}`]);
    expect(e.message).toContain(
      `has parallelism ${keyed.parallelism}; subtask ${keyed.parallelism} does not exist`,
    );
    expect(listSpill(root)).toEqual({ taskDirs: [], spillFiles: [] });
  });

  it('listFlinkCheckpoint on a _metadata that is a directory rejects with a CheckpointPathError', async () => {
    const root = await makeTempRoot();
    await mkdir(join(root, 'chk-1', '_metadata'), { recursive: true });
    const error = await listFlinkCheckpoint(join(root, 'chk-1', '_metadata')).catch((e) => e);
    expect(error).toBeInstanceOf(CheckpointPathError);
  });

  it('listFlinkCheckpoint with an aborted signal rejects with a CancelledError whose cause is the reason', async () => {
    const reason = new Error('shutdown');
    const error = await listFlinkCheckpoint(f.checkpoint, {
      signal: AbortSignal.abort(reason),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpillwayError);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).code).toBe('ABORT_ERR');
    expect((error as CancelledError).cause).toBe(reason);
  });
});
