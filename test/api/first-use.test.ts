/**
 * An app developer's first mistakes (issue 32): what a wrong `channels` returns is named as the
 * caller's mistake (a MisuseError with a code), not reported as Spillway's internal error; an
 * error thrown from the built package prints short, readable lines, not the bundle's code.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { MisuseError, recoverChannelState } from '../../src/index.ts';
import { makeSmallCheckpoint } from '../helpers/checkpoints.ts';
import { repoRoot } from '../helpers/processes.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const run = promisify(execFile);

describe('channels that return the wrong thing', () => {
  const wrong: [string, (dir: string) => unknown][] = [
    ['undefined', () => undefined],
    ['an object without onFinished', () => ({ onBuffer() {} })],
  ];
  for (const [what, make] of wrong) {
    it(`channels returning ${what} is a MisuseError naming what came back, nothing left behind`, async () => {
      const dir = await makeTempRoot();
      const { path } = await makeSmallCheckpoint(dir);
      const recovery = recoverChannelState({
        checkpoint: path,
        spillRoot: dir,
        channels: () => make(dir) as never,
      });
      const error = await recovery.done.then(
        () => undefined,
        (e: unknown) => e as MisuseError,
      );
      expect(error).toBeInstanceOf(MisuseError);
      expect(error!.code).toBe('ERR_SPILLWAY_MISUSE');
      expect(error!.message).toMatch(/^channels\(info\) returned /);
      expect(await listSpill(dir)).toEqual({ taskDirs: [], spillFiles: [] });
    });
  }
});

describe('a consumer told when to stop', () => {
  it('info.signal aborts when the recovery is cancelled, while a consumer call is in flight', async () => {
    const dir = await makeTempRoot();
    const { path } = await makeSmallCheckpoint(dir);
    const signals: AbortSignal[] = [];
    let cancel = (): void => undefined;
    const recovery = recoverChannelState({
      checkpoint: path,
      spillRoot: dir,
      abandonAfterMs: 5_000,
      channels: ({ signal }) => {
        signals.push(signal);
        return {
          // The first buffer cancels the recovery, then waits on its signal as an upload would.
          onBuffer: () =>
            new Promise<void>((resolve) => {
              signal.addEventListener('abort', () => resolve(), { once: true });
              cancel();
            }),
          onFinished: () => undefined,
        };
      },
    });
    cancel = () => recovery.cancel('enough');
    await expect(recovery.done).rejects.toMatchObject({ code: 'ABORT_ERR' });
    expect(signals.length).toBeGreaterThan(0);
    expect(signals.every((s) => s.aborted)).toBe(true);
    expect(signals[0]!.reason).toMatchObject({ code: 'ERR_SPILLWAY_ABORTED' });
    expect(await listSpill(dir)).toEqual({ taskDirs: [], spillFiles: [] });
  });

  it('info.signal never aborts on a recovery that finishes', async () => {
    const dir = await makeTempRoot();
    const { path } = await makeSmallCheckpoint(dir);
    const signals: AbortSignal[] = [];
    const recovery = recoverChannelState({
      checkpoint: path,
      spillRoot: dir,
      channels: ({ signal }) => {
        signals.push(signal);
        return { onBuffer: () => undefined, onFinished: () => undefined };
      },
    });
    await recovery.done;
    expect(signals.length).toBeGreaterThan(0);
    expect(signals.some((s) => s.aborted)).toBe(false);
  });
});

describe('a typo at any level of the options', () => {
  it("options.flink.operater is not an option (did you mean 'operator'?)", () => {
    expect(() =>
      recoverChannelState({
        checkpoint: 'chk-3',
        channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
        flink: { operater: 'slow-join', subtask: 0 } as never,
      }),
    ).toThrow(/options\.flink\.operater is not an option \(did you mean 'operator'\?\)/);
  });
});

describe('errors from the built package read well', () => {
  it('no line of the bundled JavaScript is longer than 1,000 characters', async () => {
    const long: string[] = [];
    const visit = async (dir: string): Promise<void> => {
      for (const d of await readdir(dir, { withFileTypes: true })) {
        const path = join(dir, d.name);
        if (d.isDirectory()) await visit(path);
        else if (d.name.endsWith('.js')) {
          const lines = (await readFile(path, 'utf8')).split('\n');
          const worst = Math.max(...lines.map((l) => l.length));
          if (worst > 1000) long.push(`${path}: ${worst}`);
        }
      }
    };
    await visit(join(repoRoot, 'dist'));
    expect(long).toEqual([]);
  });

  it('an uncaught TypeError from the package prints its first lines short, the message among them', async () => {
    const dir = await makeTempRoot();
    const script = join(dir, 'wrong.mjs');
    await writeFile(
      script,
      `import { recoverChannelState } from ${JSON.stringify(join(repoRoot, 'dist', 'src', 'index.js'))};\n` +
        `recoverChannelState({ checkpoint: 'job.spwc', channels: () => undefined, subtsk: 1 });\n`,
    );
    const failed = await run(process.execPath, [script], { cwd: dir }).then(
      () => undefined,
      (e: { stderr: string; code: number }) => e,
    );
    expect(failed?.code).toBe(1);
    const head = failed!.stderr.split('\n').slice(0, 8);
    expect(head.filter((l) => l.length > 1000)).toEqual([]);
    expect(head.join('\n')).toMatch(/TypeError: options\.subtsk is not an option/);
  });
});
