/**
 * B5 (issue 34): a local channel-state file is read only if it is the very file the plan
 * judged. Between the plan (`FlinkPaths.locate`, which resolves symlinks and checks the roots)
 * and the open (`readDelegateEntries`), the file is swapped on real disk — for a symlink that
 * leads out of the job dir, for another regular file, or a directory on its way for a link —
 * and the read is refused before any byte of it is handed on. The control reads the real bytes.
 */
import { mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointPathError } from '../../src/services/errors.ts';
import { readDelegateEntries } from '../../src/services/formats/flink/channel-state.ts';
import type {
  FlinkChannelHandle,
  FlinkStreamHandle,
} from '../../src/services/formats/flink/metadata-types.ts';
import { FlinkPaths } from '../../src/services/formats/flink/paths.ts';
import { makeTempRoot } from '../helpers/temp.ts';

/** A channel-state stream: header version 0, one 2-byte entry at offset 4. */
const stream = (a: number, b: number) => Buffer.from([0, 0, 0, 0, 0, 0, 0, 2, a, b]);
const MINE = stream(7, 8);
const OUTSIDE = stream(0x5e, 0xc7);

interface Layout {
  job: string;
  metadata: string;
  /** A file outside the job dir, and a dir outside it holding a same-named file. */
  secret: string;
  outsideDir: string;
}

async function layout(): Promise<Layout> {
  const root = await makeTempRoot();
  const job = join(root, 'job');
  await mkdir(join(job, 'chk-1'), { recursive: true });
  await mkdir(join(job, 'shared'), { recursive: true });
  await writeFile(join(job, 'chk-1', '_metadata'), 'planned only: never parsed here');
  await writeFile(join(job, 'chk-1', 'state'), MINE);
  await writeFile(join(job, 'shared', 'state'), MINE);
  const outsideDir = join(root, 'outside');
  await mkdir(outsideDir);
  await writeFile(join(outsideDir, 'state'), OUTSIDE);
  const secret = join(root, 'secret.bin');
  await writeFile(secret, OUTSIDE);
  return { job, metadata: join(job, 'chk-1', '_metadata'), secret, outsideDir };
}

function handleOf(delegate: FlinkStreamHandle): FlinkChannelHandle {
  return {
    side: 'input',
    subtaskIndex: 0,
    gate: 0,
    channel: 0,
    offsets: [4],
    stateSize: 6,
    delegate,
    metadataOffset: 0,
  };
}

/** Plans `delegate`, lets `swap` change the disk, then reads: the bytes or the error. */
async function planSwapRead(
  l: Layout,
  delegate: FlinkStreamHandle,
  swap: () => Promise<void>,
): Promise<{ bytes: Buffer; error?: unknown }> {
  const handle = handleOf(delegate);
  const where = await new FlinkPaths(l.metadata).locate(delegate);
  await swap();
  const chunks: Buffer[] = [];
  const error = await readDelegateEntries(where, [{ handle, subtask: 0 }], {
    onEntry: () => undefined,
    onPayload: (chunk) => void chunks.push(Buffer.from(chunk)),
  }).then(
    () => undefined,
    (e: unknown) => e,
  );
  return { bytes: Buffer.concat(chunks), error };
}

describe('B5 a file swapped between the plan and the open is never read', () => {
  const relative = (): FlinkStreamHandle => ({ kind: 'relative', relativePath: 'state', size: 10 });
  const shared = (l: Layout): FlinkStreamHandle => ({
    kind: 'file',
    path: join(l.job, 'shared', 'state'),
    size: 10,
  });

  it('the control: nothing swapped, the planned file is read', async () => {
    const l = await layout();
    for (const delegate of [relative(), shared(l)]) {
      const { bytes, error } = await planSwapRead(l, delegate, async () => undefined);
      expect(error).toBeUndefined();
      expect(bytes).toEqual(Buffer.from([7, 8]));
    }
  });

  it('the file swapped for a symlink out of the job dir is refused', async () => {
    const l = await layout();
    const { bytes, error } = await planSwapRead(l, relative(), async () => {
      const file = join(l.job, 'chk-1', 'state');
      await rename(file, `${file}.old`);
      await symlink(l.secret, file);
    });
    expect(error).toBeInstanceOf(CheckpointPathError);
    expect((error as Error).message).toMatch(/symlink after it was planned/);
    expect(bytes.length).toBe(0);
  });

  it('the file replaced by another regular file is refused (its identity changed)', async () => {
    const l = await layout();
    const { bytes, error } = await planSwapRead(l, shared(l), async () => {
      const other = join(l.job, 'shared', 'other');
      await writeFile(other, OUTSIDE);
      await rename(other, join(l.job, 'shared', 'state'));
    });
    expect(error).toBeInstanceOf(CheckpointPathError);
    expect((error as Error).message).toMatch(/not the file that was planned/);
    expect(bytes.length).toBe(0);
  });

  it('a directory on its way swapped for a symlink out of the job dir is refused', async () => {
    const l = await layout();
    const { bytes, error } = await planSwapRead(l, shared(l), async () => {
      const dir = join(l.job, 'shared');
      await rename(dir, `${dir}.old`);
      await symlink(l.outsideDir, dir);
    });
    expect(error).toBeInstanceOf(CheckpointPathError);
    expect(bytes.length).toBe(0);
  });

  it('a file missing at the plan that appears before the open is refused', async () => {
    const l = await layout();
    const late: FlinkStreamHandle = { kind: 'relative', relativePath: 'late', size: 10 };
    const { bytes, error } = await planSwapRead(l, late, async () => {
      await symlink(l.secret, join(l.job, 'chk-1', 'late'));
    });
    expect(error).toBeInstanceOf(CheckpointPathError);
    expect(bytes.length).toBe(0);
  });
});
