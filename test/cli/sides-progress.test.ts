/**
 * `recover --all`'s progress (src/cli/sides-progress.ts): two recoveries run at once and
 * report interleaved; on a terminal the bar follows the oldest side still running, and every
 * side that finishes leaves one line named after it — never a reading of one side drawn as
 * another's, never a line after a side's own `finished`.
 */
import { describe, expect, it } from 'vitest';
import { SidesProgress } from '../../src/cli/sides-progress.ts';
import type { Io } from '../../src/cli/io.ts';
import type { RecoveryProgress } from '../../src/services/progress.ts';

const MIB = 1024 * 1024;

/** An stderr that keeps what is written to it, as a terminal of `columns` or a pipe. */
function stderr(isTTY: boolean): { io: Io; text: () => string } {
  let text = '';
  const err = {
    isTTY,
    columns: 120,
    write(chunk: string) {
      text += chunk;
      return true;
    },
  } as unknown as Io['err'];
  return { io: { out: err, err }, text: () => text };
}

function at(stage: RecoveryProgress['stage'], read: number, delivered: number, ms: number) {
  return {
    taskId: 't',
    stage,
    checkpointBytes: 8 * MIB,
    bytesRead: read,
    bytesSpilled: read,
    spillFiles: 1,
    payloadBytes: stage === 'fetch' ? undefined : 8 * MIB,
    bytesDelivered: delivered,
    channels: 4,
    channelsDelivered: 0,
    channelsFinished: stage === 'finished' ? 4 : 0,
    checkpoints: 0,
    retries: 0,
    elapsedMs: ms,
  } satisfies RecoveryProgress;
}

/** Side A fetches while B starts; A finishes first; B drains and finishes; C starts late. */
function run(bar: SidesProgress): void {
  const a = bar.side('op/subtask-0 input');
  const b = bar.side('op/subtask-1 input');
  a(at('fetch', 4 * MIB, 0, 100));
  b(at('fetch', 1 * MIB, 0, 100));
  a(at('drain', 8 * MIB, 4 * MIB, 200));
  b(at('fetch', 6 * MIB, 0, 200));
  a(at('finished', 8 * MIB, 8 * MIB, 300));
  const c = bar.side('op/subtask-2 output');
  b(at('drain', 8 * MIB, 2 * MIB, 300));
  c(at('fetch', 2 * MIB, 0, 100));
  b(at('finished', 8 * MIB, 8 * MIB, 400));
  c(at('finished', 8 * MIB, 8 * MIB, 200));
  // A reading after a side's end (a late timer) shows nothing.
  a(at('drain', 8 * MIB, 8 * MIB, 500));
}

describe('recover --all progress', () => {
  it("on a terminal: the bar is the oldest running side's, each finished side leaves one line naming it", () => {
    const { io, text } = stderr(true);
    const bar = new SidesProgress(io, 'recover');
    run(bar);
    bar.done();
    const frames = text()
      .split('\r\x1b[2K')
      .map((f) => f.split('\n')[0]!)
      .filter((f) => /% op\//.test(f) && !f.startsWith('spillway'));
    // A's fetch and drain, then B's drain once A is done: never B while A runs, never C.
    expect(frames.map((f) => /% (op\/\S+ \w+ \w+)/.exec(f)![1])).toEqual([
      'op/subtask-0 input fetch',
      'op/subtask-0 input drain',
      'op/subtask-1 input drain',
    ]);
    const lines = text()
      .split(/\r\x1b\[2K|\n/)
      .filter((l) => l.startsWith('spillway recover: '));
    expect(lines.map((l) => /^spillway recover: (\S+ \w+) finished 100% /.exec(l)![1])).toEqual([
      'op/subtask-0 input',
      'op/subtask-1 input',
      'op/subtask-2 output',
    ]);
    expect(text().endsWith('\r\x1b[2K') || text().endsWith('\n')).toBe(true);
  });

  it('on a terminal with --json: only the bar, erased at the end; no line is left', () => {
    const { io, text } = stderr(true);
    const bar = new SidesProgress(io, 'recover', false);
    run(bar);
    bar.done();
    expect(text()).not.toMatch(/\n/);
    expect(text()).toMatch(/op\/subtask-0 input fetch/);
    expect(text().endsWith('\r\x1b[2K')).toBe(true);
  });

  it('off a terminal: only the lines of finished sides (a fast run), in the order they finish', () => {
    const { io, text } = stderr(false);
    const bar = new SidesProgress(io, 'recover');
    run(bar);
    bar.done();
    expect(text()).not.toMatch(/[\r\x1b]/);
    expect(
      text()
        .trimEnd()
        .split('\n')
        .map((l) => /^spillway recover: (\S+ \w+) (\w+) (\d+)% /.exec(l)!.slice(1).join(' ')),
    ).toEqual([
      'op/subtask-0 input finished 100',
      'op/subtask-1 input finished 100',
      'op/subtask-2 output finished 100',
    ]);
  });
});
