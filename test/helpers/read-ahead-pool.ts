/**
 * The one check both readers' pooled buffers must pass (G4): a read ahead still in flight when
 * the visitor fails keeps its buffers out of the process's pool until it settled.
 */
import { expect } from 'vitest';
import { ioBuffers } from '../../src/services/buffer-pool.ts';
import type { CheckpointVisitor } from '../../src/services/formats/spwc/reader.ts';
import { macrotasks, pauseOn, settle } from './async.ts';

/**
 * Holds the second read of `path` (the read ahead) on the thread pool's doorstep, runs `read`
 * with a visitor that fails at its first payload, and checks that the reader's two buffers of
 * `chunkBytes` reach the pool only after the held read was let go.
 */
export async function expectPoolWaitsForReadAhead(
  path: string,
  chunkBytes: number,
  read: (visitor: CheckpointVisitor) => Promise<unknown>,
): Promise<void> {
  let reads = 0;
  const pause = pauseOn((op, p) => op === 'read' && p === path && ++reads === 2);
  const reading = settle(
    read({
      onEntry() {},
      async onPayload() {
        await pause.reached;
        throw new Error('visitor failed');
      },
    }),
  );
  await pause.reached;
  // The reader has its buffers; the visitor fails and the file is closed meanwhile.
  const kept = ioBuffers.keptBytes;
  await macrotasks();
  expect(ioBuffers.keptBytes).toBe(kept); // the held read still writes into one of them
  pause.release();
  expect(((await reading) as Error).message).toBe('visitor failed');
  expect(ioBuffers.keptBytes).toBe(kept + 2 * chunkBytes);
}
