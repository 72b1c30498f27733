/**
 * `spillway recover`'s progress as a user meets it (docs/cli.md, Progress), through the real
 * CLI: a non-terminal stderr (a pipe, a log) gets plain lines — one per stage change, no `\r`,
 * no escape codes — whose percent runs once from 0 to 100 across the stages; `--json` keeps
 * stderr for errors only; on a narrow terminal the redrawn bar never passes the width.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeSmallCheckpoint } from '../helpers/checkpoints.ts';
import { makeTempRoot, recoverOnPty, runRecover, spawnTracked } from './harness.ts';

describe('recover progress off a terminal', () => {
  it('plain progress lines on a non-TTY stderr: one per stage change, percent monotonic to 100 %, channels counted, no redraws', async () => {
    const dir = await makeTempRoot();
    const { path } = await makeSmallCheckpoint(dir, { kib: 4096, channels: 4 });
    const started = performance.now();
    const run = {
      ...(await runRecover(path, join(dir, 'out'), dir)),
      durationMs: performance.now() - started,
    };
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/[\r\x1b]/);
    const lines = run.stderr.split('\n').filter((l) => l.startsWith('spillway recover: '));
    const stages = lines.map((l) => /^spillway recover: (\w+) /.exec(l)![1]);
    // One line per stage change from the gap on, in order; the fetch's start is not announced
    // (a bad input's one line stays the only line). Lines every 5 s besides: only on a machine
    // so slow that this run lasted that long, so repeats are folded then.
    const changes = stages.filter((s, i) => s !== stages[i - 1]);
    if (run.durationMs < 5000) expect(changes).toEqual(['gap', 'drain', 'finished']);
    else expect(changes.filter((s) => s !== 'fetch')).toEqual(['gap', 'drain', 'finished']);
    expect(lines.length).toBeLessThanOrEqual(3 + Math.floor(run.durationMs / 5000));
    const percents = lines.map((l) => Number(/ (\d+)% /.exec(l)![1]));
    for (let i = 1; i < percents.length; i++) {
      expect(percents[i]).toBeGreaterThanOrEqual(percents[i - 1]!);
    }
    // The drain does not restart at 0: it begins where the fetch ended (half the work).
    expect(percents[stages.indexOf('drain')]).toBeGreaterThanOrEqual(49);
    expect(percents.at(-1)).toBe(100);
    expect(lines.at(-1)).toMatch(
      /^spillway recover: finished 100% 4\.0\/4\.0 MiB, [\d.]+ MiB\/s, 0:\d\d elapsed, 4\/4 channels, \d+ spill files?$/,
    );
    // The summary follows the lines.
    expect(run.stderr).toMatch(/finished 100%[^\n]*\nrecovered /);
  });

  it('--json off a terminal: no progress lines, stderr stays empty', async () => {
    const dir = await makeTempRoot();
    const { path } = await makeSmallCheckpoint(dir, { kib: 1024 });
    const run = await runRecover(path, join(dir, 'out'), dir, ['--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toMatchObject({ channels: 3 });
  });
});

describe('recover progress on a terminal', () => {
  it.each([60, 30])(
    'a %i-column terminal: every redraw fits the width (no scrolling), or plain lines below 40 columns',
    async (columns) => {
      const pty = await recoverOnPty(4096);
      if (pty === undefined) return;
      const { dir, command } = pty;
      // `script` gives the child a real pty; `stty cols` sets the width it reads as `columns`.
      const child = spawnTracked('script', [
        '-qefc',
        `stty cols ${columns}; ${command}`,
        '/dev/null',
      ]);
      const { code } = await child.exited;
      expect(code, child.stdout).toBe(0);
      const frames = child.stdout
        .split('\r\x1b[2K')
        .map((f) => f.split(/\r?\n/)[0]!)
        .filter((f) => /^(\[[█░]+\] )? *\d+% /.test(f));
      if (columns >= 40) {
        expect(frames.length).toBeGreaterThan(1);
        for (const f of frames) expect(f.length, f).toBeLessThanOrEqual(columns - 1);
        expect(frames.at(-1)).toMatch(/100% finished/);
      } else {
        expect(frames).toEqual([]);
        expect(child.stdout).toMatch(/spillway recover: finished 100% /);
      }
      expect(child.stdout).toContain('recovered');
    },
  );
});
