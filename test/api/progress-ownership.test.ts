/**
 * What a program can watch (DESIGN §5, API issue): `onProgress` is coalesced — at stage changes
 * and at most every `progressIntervalMs`, never once per buffer — and ends with the final
 * reading; `recovery.ownership()` names each resource's owner with its task dir, files and
 * bytes, matching the disk at that instant; and the CLI draws its own progress bar from the
 * same feed (a real pseudo-terminal through `script`).
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  recoverChannelState,
  type OwnershipReport,
  type RecoveryProgress,
} from '../../src/index.ts';
import { makeSmallCheckpoint, SMALL_LIMITS } from '../helpers/checkpoints.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { spawnTracked } from '../helpers/processes.ts';
import { recoverOnPty } from '../e2e/harness.ts';

describe('progress is coalesced and complete', () => {
  it('progress coalesced: stage changes and the end, never once per buffer; the last reading is the report', async () => {
    const dir = await makeTempRoot();
    const { path } = await makeSmallCheckpoint(dir, { kib: 512 });
    const seen: RecoveryProgress[] = [];
    const recovery = recoverChannelState({
      checkpoint: path,
      spillRoot: dir,
      limits: { ...SMALL_LIMITS, bufferBytes: 1024 },
      channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
      // Longer than the whole recovery: only stage changes and the end may publish.
      progressIntervalMs: 60_000,
      onProgress: (p) => void seen.push(p),
    });
    const report = await recovery.done;
    expect(report.buffers).toBeGreaterThan(400);
    expect(seen.length).toBeLessThanOrEqual(8);
    const stages = seen.map((p) => p.stage).filter((s, i, all) => s !== all[i - 1]);
    expect(stages).toEqual(['fetch', 'gap', 'drain', 'finished']);
    const last = seen.at(-1)!;
    expect(last).toMatchObject({
      stage: 'finished',
      bytesDelivered: report.bytesDelivered,
      payloadBytes: report.payloadBytes,
      bytesRead: report.payloadBytes,
      spillFiles: report.spillFiles,
      channels: report.channels,
      channelsFinished: report.channels,
    });
    expect(recovery.progress()).toMatchObject({ stage: 'finished' });
  });

  it('a throwing onProgress does not fail the recovery', async () => {
    const dir = await makeTempRoot();
    const { path } = await makeSmallCheckpoint(dir);
    const recovery = recoverChannelState({
      checkpoint: path,
      spillRoot: dir,
      channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
      onProgress: () => {
        throw new Error('listener bug');
      },
    });
    await expect(recovery.done).resolves.toMatchObject({ channels: 3 });
  });
});

describe('ownership you can read', () => {
  it('ownership accessor mid-drain: owner, task dir, files and bytes as on disk; empty once done', async () => {
    const dir = await makeTempRoot();
    const { path } = await makeSmallCheckpoint(dir, { kib: 256 });
    let midDrain: OwnershipReport | undefined;
    let onDisk: { files: number; bytes: number } | undefined;
    const recovery = recoverChannelState({
      checkpoint: path,
      spillRoot: dir,
      limits: SMALL_LIMITS,
      channels: () => ({
        onBuffer: () => {
          if (midDrain !== undefined) return;
          midDrain = recovery.ownership();
          const taskDir = midDrain.fetchedState?.path ?? midDrain.drainer?.path;
          const names = readdirSync(taskDir!).filter((n) => n.startsWith('spill-segment-'));
          onDisk = {
            files: names.length,
            bytes: names.reduce((n, f) => n + statSync(join(taskDir!, f)).size, 0),
          };
        },
        onFinished: () => undefined,
      }),
    });
    const report = await recovery.done;
    expect(midDrain?.drainer?.owner).toBe('drain');
    expect(midDrain?.fetchedState).toMatchObject({
      owner: 'drain',
      files: report.spillFiles,
      bytes: report.spilledBytes,
    });
    expect(midDrain!.fetchedState!.path).toContain(`task-${recovery.taskId}`);
    // Nothing was deleted yet at the first buffer: the accessor and the disk agree.
    expect(onDisk).toEqual({ files: report.spillFiles, bytes: report.spilledBytes });
    expect(midDrain!.drainer!.bytes).toBeLessThanOrEqual(report.payloadBytes);
    expect(recovery.ownership()).toEqual({});
  });
});

describe('the CLI progress bar is the library feed', () => {
  it('progress used by the CLI: on a terminal, recover draws fetch and drain readings', async () => {
    const pty = await recoverOnPty(2048);
    if (pty === undefined) return;
    const { dir, command } = pty;
    // `script` gives the child a real pty for stdin/stdout/stderr: isTTY is true, as for a user.
    // 120 columns: wide enough for every field of the bar (docs/cli.md, Progress).
    const child = spawnTracked('script', ['-qefc', `stty cols 120; ${command}`, '/dev/null']);
    const { code } = await child.exited;
    expect(code, child.stdout).toBe(0);
    const frames = child.stdout.split('\r\x1b[2K').filter((f) => f.startsWith('['));
    expect(frames.some((f) => /\] +\d+% fetch [\d.]+(\/[\d.]+)? MiB/.test(f))).toBe(true);
    expect(
      frames.some((f) => /\] +\d+% (drain|finished) [\d.]+\/2\.0 MiB .*\d\/4 ch/.test(f)),
    ).toBe(true);
    expect(child.stdout).toContain('recovered');
  });
});
