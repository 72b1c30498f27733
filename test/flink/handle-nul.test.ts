/**
 * Issue 34 (minor): a NUL inside an absolute handle under the job dir is bad input — a
 * `CheckpointPathError` naming the handle (exit 2) — not Node's argument error from deep inside
 * a file call (which was exit 1).
 */
import { describe, expect, it } from 'vitest';
import { CheckpointPathError } from '../../src/services/errors.ts';
import { FlinkPaths } from '../../src/services/formats/flink/paths.ts';

describe('a NUL in a handle is bad input', () => {
  it('an absolute path (and a file: URI) under the job dir with a NUL is a CheckpointPathError', async () => {
    const paths = new FlinkPaths('/data/ckpt/job-1/chk-7/_metadata');
    for (const path of [
      '/data/ckpt/job-1/chk-7/a\u0000b',
      'file:///data/ckpt/job-1/shared/x\u0000',
    ]) {
      const error = await paths.locate({ kind: 'file', path, size: 10 }).catch((e: unknown) => e);
      expect(error, JSON.stringify(path)).toBeInstanceOf(CheckpointPathError);
      expect((error as Error).message).toMatch(/NUL/);
    }
  });
});
