/**
 * A spill root and a recovery are handed their own file seam: a faulty one reaches exactly the
 * spill root and the spill files of the recovery it is handed to, never the process's other
 * file operations, and nothing is installed process-wide.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpillRoot } from '../../src/services/spill-root/spill-root.ts';
import { SpillRootError } from '../../src/services/errors.ts';
import { startRecovery } from '../../src/recover.ts';
import { FaultSeam } from '../helpers/fault-seam.ts';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { IoError } from '../../src/services/errors.ts';
import { makeTempRoot } from '../helpers/temp.ts';

/** This file's own fault seam, handed to what it faults (never installed). */
const seam = new FaultSeam();
afterEach(() => seam.resetFsSeam());

describe('a spill root handed its own file seam', () => {
  it("G1 a fault on its owner dir's mkdir fails that open only, leaving no owner dir; another root opened meanwhile is untouched", async () => {
    const faulty = await makeTempRoot();
    const plain = await makeTempRoot();
    seam.injectFault({ op: 'mkdir', code: 'EIO', pathIncludes: 'owner-' });
    const error = await SpillRoot.open(faulty, { fs: seam.fs, sweep: false }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SpillRootError);
    expect(String((error as Error).cause)).toContain('(injected)');
    expect(readdirSync(join(faulty, 'spillway'))).toEqual([]);
    // The fault is still armed, but only what the seam was handed goes through it.
    const other = await SpillRoot.open(plain, { sweep: false });
    expect(existsSync(other.ownerDir)).toBe(true);
    await other.close();
    expect(seam.fsOpCounts().mkdir).toBeGreaterThanOrEqual(1);
  });

  it('G1 a recovery handed a faulty seam fails with its spill root, and leaves nothing behind', async () => {
    const root = await makeTempRoot();
    seam.injectFault({ op: 'mkdir', code: 'ENOSPC', pathIncludes: 'owner-' });
    const recovery = startRecovery({
      checkpoint: join(root, 'never-read.spwc'),
      spillRoot: root,
      channels: () => ({ onBuffer() {}, onFinished() {} }),
      fs: seam.fs,
    });
    const error = await recovery.done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpillRootError);
    expect(String((error as Error).cause)).toContain('ENOSPC');
    expect(readdirSync(join(root, 'spillway'))).toEqual([]);
  });

  for (const [nth, stage] of [
    [1, 'as its spill file is made (fetch)'],
    [2, 'as its spill file is opened to drain'],
  ] as const) {
    it(`G1 a recovery whose own seam fails ${stage} fails with it, and its task dir is gone when done settles`, async () => {
      const root = await makeTempRoot();
      const checkpoint = join(root, 'cp.spwc');
      await makeCheckpoint({ out: checkpoint, mb: 1, channels: 2, gates: 1 });
      seam.injectFault({ op: 'open', code: 'EIO', nth, pathIncludes: '/task-' });
      const recovery = startRecovery({
        checkpoint,
        spillRoot: root,
        channels: () => ({ onBuffer() {}, onFinished() {} }),
        fs: seam.fs,
      });
      const error = await recovery.done.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(IoError);
      expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).toContain('(injected)');
      const owners = readdirSync(join(root, 'spillway'));
      for (const owner of owners) {
        expect(
          readdirSync(join(root, 'spillway', owner)).filter((n) => n.startsWith('task-')),
        ).toEqual([]);
      }
      expect(seam.fsOpCounts().open).toBeGreaterThanOrEqual(nth);
    });
  }
});
