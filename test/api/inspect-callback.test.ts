/**
 * A user's `inspect` callback that throws is the observer's bug, not the recovery's failure: it
 * is caught (XState would otherwise rethrow it out of its event loop and crash the process),
 * reported once as a process warning with a stable code, and the recovery ends as it would have.
 */
import { describe, expect, it } from 'vitest';
import { recoverChannelState } from '../../src/index.ts';
import { makeSmallCheckpoint } from '../helpers/checkpoints.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

describe('a throwing inspect callback', () => {
  it('is caught and reported once; the recovery succeeds and leaves nothing', async () => {
    const dir = await makeTempRoot();
    const { path } = await makeSmallCheckpoint(dir, { kib: 64 });
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    let calls = 0;
    try {
      const recovery = recoverChannelState({
        checkpoint: path,
        spillRoot: dir,
        channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
        inspect: () => {
          calls++;
          throw new Error('observer bug');
        },
      });
      const report = await recovery.done;
      expect(report.bytesDelivered).toBe(64 * 1024);
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    expect(calls).toBeGreaterThan(1);
    const ours = warnings.filter(
      (w) => (w as { code?: string }).code === 'ERR_SPILLWAY_INSPECT_CALLBACK',
    );
    expect(ours).toHaveLength(1);
    expect(ours[0]!.message).toContain('observer bug');
    expect(listSpill(dir).spillFiles).toEqual([]);
  });
});
