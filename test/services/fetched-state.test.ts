import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AbortedError,
  CleanupError,
  MisuseError,
  isAbortConsequence,
} from '../../src/services/errors.ts';
import { FetchedChannelState } from '../../src/services/spill/fetched-state.ts';
import { channelKey } from '../../src/services/channel.ts';
import { seam, makeFsError } from '../helpers/fault-seam.ts';
import { SpillWriter } from '../../src/services/spill/spill-writer.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { deferred, exists, macrotasks, settle } from '../helpers/async.ts';

afterEach(() => seam.resetFsSeam());

const CHANNELS = [
  { gate: 0, channel: 0 },
  { gate: 0, channel: 1 },
];

/**
 * A task dir holding `n` files, wrapped in a state with no grant (FetchedChannelStateTest builds
 * the container directly).
 */
async function bareState(n = 2): Promise<{ state: FetchedChannelState; taskDir: string }> {
  const root = await makeTempRoot();
  const taskDir = join(root, 'task-7-cafe');
  await mkdir(taskDir, { mode: 0o700 });
  const files: string[] = [];
  for (let i = 0; i < n; i++) {
    const f = join(taskDir, `spill-segment-${i}.bin`);
    await writeFile(f, `file ${i}`);
    files.push(f);
  }
  return { state: new FetchedChannelState(files, taskDir, CHANNELS), taskDir };
}

/** A state produced by the real writer: it already holds the hand-off grant (RefCountTest). */
async function writtenState(): Promise<{ state: FetchedChannelState; taskDir: string }> {
  const root = await makeTempRoot();
  const taskDir = join(root, 'task-8-f00d');
  const writer = new SpillWriter({ taskDir, maxSpillFileBytes: 1 });
  await writer.append(CHANNELS[0]!, Buffer.from('alpha'));
  await writer.append(CHANNELS[1]!, Buffer.from('beta'));
  const state = await writer.close();
  expect(state.files).toHaveLength(2);
  expect(state.refCount).toBe(1);
  return { state, taskDir };
}

async function allExist(files: readonly string[]): Promise<boolean> {
  return (await Promise.all(files.map(exists))).every(Boolean);
}

describe('FetchedChannelState (Flink FetchedChannelStateTest)', () => {
  it('testInitialStateIsEmpty', () => {
    const state = new FetchedChannelState([], undefined, []);
    expect(state.files).toEqual([]);
    expect(state.channels).toEqual([]);
    expect(state.refCount).toBe(0);
    expect(state.isClosed).toBe(false);
  });

  it('testFileListPreservesOrder', async () => {
    const { state, taskDir } = await bareState(3);
    expect(state.files).toEqual([0, 1, 2].map((i) => join(taskDir, `spill-segment-${i}.bin`)));
    expect(state.channels.map(channelKey)).toEqual(['gate-0-channel-0', 'gate-0-channel-1']);
    await state.close();
    expect(await exists(taskDir)).toBe(false);
  });

  it('testFilesListIsUnmodifiable (files and channels are sealed)', async () => {
    const { state, taskDir } = await bareState(1);
    const files = state.files as string[];
    expect(() => files.push('/etc/passwd')).toThrow(TypeError);
    expect(() => {
      files[0] = '/etc/passwd';
    }).toThrow(TypeError);
    expect(() => (state.channels as unknown as { gate: number }[]).pop()).toThrow(TypeError);
    expect(() => {
      (state.channels[0] as { gate: number }).gate = 9;
    }).toThrow(TypeError);
    expect(state.files).toEqual([join(taskDir, 'spill-segment-0.bin')]);
    await state.close();
    expect(await exists(taskDir)).toBe(false);
  });

  it('testAcquireReleaseDoesNotDeleteFilesBeforeLastRelease', async () => {
    const { state, taskDir } = await bareState();
    state.acquire();
    state.acquire();
    await state.release();
    expect(await allExist(state.files)).toBe(true);
    expect(state.isClosed).toBe(false);
    await state.release();
    expect(state.isClosed).toBe(true);
    expect(await exists(taskDir)).toBe(false);
  });

  it('testCloseDeletesAllFiles', async () => {
    const { state, taskDir } = await bareState(3);
    await state.close();
    expect(state.isClosed).toBe(true);
    for (const f of state.files) expect(await exists(f)).toBe(false);
    expect(await exists(taskDir)).toBe(false);
  });

  it('testCloseIsIdempotent', async () => {
    const { state, taskDir } = await bareState();
    const first = state.close();
    expect(state.close()).toBe(first);
    await first;
    await state.close();
    expect(seam.fsOpCounts().rm).toBe(1);
    expect(await exists(taskDir)).toBe(false);
  });

  it('testCloseAfterReleaseIsIdempotent', async () => {
    const { state, taskDir } = await bareState();
    state.acquire();
    await state.release();
    expect(await exists(taskDir)).toBe(false);
    await state.close();
    expect(seam.fsOpCounts().rm).toBe(1);
    expect(state.isClosed).toBe(true);
  });
});

describe('FetchedChannelState grants (Flink FetchedChannelStateRefCountTest, strict)', () => {
  it('testAcquireReleaseCountsMatch', async () => {
    const { state, taskDir } = await writtenState();
    state.acquire();
    expect(state.refCount).toBe(2);
    await state.release();
    expect(await allExist(state.files)).toBe(true);
    await state.release();
    expect(state.refCount).toBe(0);
    expect(await exists(taskDir)).toBe(false);
  });

  it('testReachingZeroDeletesFiles', async () => {
    const { state, taskDir } = await writtenState();
    await state.release();
    expect(state.isClosed).toBe(true);
    for (const f of state.files) expect(await exists(f)).toBe(false);
    expect(await exists(taskDir)).toBe(false);
  });

  it('testReleaseAfterZeroIsNoOp, made strict: a release past zero rejects with MisuseError', async () => {
    const { state, taskDir } = await writtenState();
    await state.release();
    await expect(state.release()).rejects.toBeInstanceOf(MisuseError);
    await expect(state.release()).rejects.toBeInstanceOf(MisuseError);
    expect(state.refCount).toBe(0);
    expect(seam.fsOpCounts().rm).toBe(1); // never deletes twice
    expect(await exists(taskDir)).toBe(false);
  });

  it('testAbortPathReleasesViaSameRoute', async () => {
    const { state, taskDir } = await writtenState();
    state.acquire();
    state.acquire();
    await state.release();
    await state.release();
    expect(await allExist(state.files)).toBe(true);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });

  it('testForceCloseStillCleansFiles: close with grants out; double close and a late release are harmless', async () => {
    const { state, taskDir } = await writtenState();
    state.acquire();
    await state.close();
    expect(state.isClosed).toBe(true);
    expect(await exists(taskDir)).toBe(false);
    await state.close();
    await state.release();
    await state.release();
    expect(seam.fsOpCounts().rm).toBe(1);
  });
});

describe('FetchedChannelState strict semantics (ours)', () => {
  it('G1 deletes files and the task dir when the last grant is released', async () => {
    const { state, taskDir } = await writtenState();
    state.acquire(); // main reader
    await state.release(); // hand-off
    expect(await exists(taskDir)).toBe(true);
    const last = state.release();
    expect(state.isClosed).toBe(true); // cleanup began synchronously
    await last; // resolves only once the deletion finished
    expect(await exists(taskDir)).toBe(false);
  });

  it('G1 a state with nothing spilled cleans up without touching the disk', async () => {
    const state = new FetchedChannelState([], undefined, CHANNELS);
    state.acquire();
    await state.release();
    expect(state.isClosed).toBe(true);
    await state.close();
    expect(seam.fsOpCounts().rm).toBe(0);
  });

  it('acquire after cleanup throws MisuseError (after the last release and after a forced close)', async () => {
    const released = await writtenState();
    await released.state.release();
    expect(() => released.state.acquire()).toThrow(MisuseError);
    expect(released.state.refCount).toBe(0);

    const closed = await writtenState();
    const closing = closed.state.close();
    expect(() => closed.state.acquire()).toThrow(MisuseError); // even while deleting
    await closing;
    expect(() => closed.state.acquire()).toThrow(MisuseError);
    expect(await exists(released.taskDir)).toBe(false);
    expect(await exists(closed.taskDir)).toBe(false);
  });

  it('a release past zero on a fresh state rejects and changes nothing', async () => {
    const { state, taskDir } = await bareState();
    await expect(state.release()).rejects.toBeInstanceOf(MisuseError);
    expect(state.refCount).toBe(0);
    expect(state.isClosed).toBe(false);
    expect(await allExist(state.files)).toBe(true);
    await state.close();
    expect(await exists(taskDir)).toBe(false);
  });

  it('release after forced close is a harmless no-op that never re-deletes', async () => {
    const { state, taskDir } = await writtenState();
    state.acquire();
    state.acquire();
    await state.close();
    expect(state.refCount).toBe(0);
    for (let i = 0; i < 5; i++) await state.release(); // more than were ever held
    expect(seam.fsOpCounts().rm).toBe(1);
    expect(await exists(taskDir)).toBe(false);
  });

  it('C1 a failed delete on the last release is a CleanupError and a later close() retries it', async () => {
    const { state, taskDir } = await writtenState();
    seam.injectFault({ op: 'rm', code: 'EIO' });
    const error = await settle(state.release());
    expect(error).toBeInstanceOf(CleanupError);
    expect(((error as Error).cause as NodeJS.ErrnoException).code).toBe('EIO');
    expect(state.isClosed).toBe(true);
    expect(await exists(taskDir)).toBe(true);
    expect(() => state.acquire()).toThrow(MisuseError);
    await state.close();
    expect(await exists(taskDir)).toBe(false);
    await state.close(); // and now it is settled for good
    expect(seam.fsOpCounts().rm).toBe(2);
  });

  it('C1 a failed forced close is a CleanupError and the next close() retries it', async () => {
    const { state, taskDir } = await writtenState();
    seam.injectFault({ op: 'rm', code: 'EACCES', times: 2 });
    await expect(state.close()).rejects.toBeInstanceOf(CleanupError);
    await expect(state.close()).rejects.toBeInstanceOf(CleanupError);
    expect(await exists(taskDir)).toBe(true);
    await state.close();
    expect(await exists(taskDir)).toBe(false);
    expect(seam.fsOpCounts().rm).toBe(3);
  });

  it('G4 forced close waits for an in-flight tracked read before deleting', async () => {
    const { state, taskDir } = await writtenState();
    state.acquire();
    const io = deferred<string>();
    const reading = state.track('read spill-segment-0.bin', () => io.promise);
    const closing = state.close();
    await macrotasks();
    expect(await exists(taskDir)).toBe(true); // not under the live read
    expect(seam.fsOpCounts().rm).toBe(0);
    io.resolve('bytes');
    expect(await reading).toBe('bytes'); // the read that started before the close completes
    await closing;
    expect(await exists(taskDir)).toBe(false);
  });

  it('G4 a tracked read started after cleanup began is fenced with AbortedError', async () => {
    const { state, taskDir } = await writtenState();
    const closing = state.close();
    let ran = false;
    const error = await settle(
      state.track('open spill-segment-1.bin', async () => {
        ran = true;
      }),
    );
    expect(error).toBeInstanceOf(AbortedError);
    expect(ran).toBe(false);
    await closing;
    expect(await exists(taskDir)).toBe(false);
  });

  it('G4 an error a fenced read raises after cleanup began becomes an AbortedError carrying it', async () => {
    const { state, taskDir } = await writtenState();
    const io = deferred<number>();
    const reading = settle(state.track('read spill-segment-0.bin', () => io.promise));
    const closing = state.close();
    const enoent = makeFsError('ENOENT', 'read', join(taskDir, 'spill-segment-0.bin'));
    io.reject(enoent);
    const error = await reading;
    expect(error).toBeInstanceOf(AbortedError);
    expect((error as Error).cause).toBe(enoent);
    expect(isAbortConsequence(error)).toBe(true);
    await closing;
    expect(await exists(taskDir)).toBe(false);
  });

  it('a tracked read failing while the state is open keeps its own error', async () => {
    const { state, taskDir } = await writtenState();
    const eio = makeFsError('EIO', 'read', 'x');
    await expect(state.track('read x', () => Promise.reject(eio))).rejects.toBe(eio);
    await state.release();
    expect(await exists(taskDir)).toBe(false);
  });
});
