/**
 * Issue 34 (minor): `rescale.keep` must answer with a boolean. An async keep (a Promise) used to
 * count as true for every record, and a rejected one crashed the process; now either fails the
 * recovery with a `MisuseError` saying so, its rejection observed, and the spill root is clean.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MisuseError, recoverChannelState } from '../../src/index.ts';
import { makeRecordCheckpoint } from '../../src/testing.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const sink = () => ({ onBuffer: () => undefined, onFinished: () => undefined });

describe('rescale.keep returning anything but a boolean is a clear error', () => {
  const cases: [string, () => unknown][] = [
    ['an async keep (a Promise of true)', () => Promise.resolve(true)],
    ['a keep whose Promise rejects', () => Promise.reject(new Error('keep failed'))],
    ['a keep returning a number', () => 1],
  ];
  for (const [name, keep] of cases) {
    it(`${name}: done rejects with a MisuseError naming rescale.keep; nothing left`, async () => {
      const dir = await makeTempRoot();
      const out = join(dir, 'v2.spwc');
      await makeRecordCheckpoint({
        out,
        records: 200,
        subtasks: 2,
        gates: 1,
        channels: 2,
        seed: 3,
      });
      const error = await recoverChannelState({
        checkpoint: out,
        spillRoot: dir,
        rescale: { keep: keep as () => boolean },
        channels: sink,
      }).done.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(MisuseError);
      expect((error as Error).message).toMatch(/options\.rescale\.keep must return a boolean/);
      expect(listSpill(dir)).toEqual({ taskDirs: [], spillFiles: [] });
    });
  }
});
