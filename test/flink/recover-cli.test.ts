/**
 * The command line and option contract of a Flink recovery (DESIGN §7, §4, §5): bad usage and
 * bad selections are exit 2 with one line and nothing created; a Flink checkpoint given without
 * `--operator` says what to add; library options are checked when `recoverChannelState` is called.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { recoverChannelState } from '../../src/index.ts';
import { lines, runRecover, type Finished } from '../e2e/harness.ts';
import { listFlinkFixtures } from '../helpers/flink-expected.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const fixture = listFlinkFixtures().find((f) => f.variant === 'file');

function expectRefused(run: Finished, pattern: RegExp): void {
  expect(run.code, run.stderr).toBe(2);
  expect(lines(run.stderr), run.stderr).toHaveLength(1);
  expect(run.stderr).toMatch(pattern);
  expect(run.stderr).not.toContain('    at ');
}

describe.skipIf(fixture === undefined)(
  'spillway recover with a Flink checkpoint: bad input is exit 2, nothing created',
  () => {
    const f = fixture!;

    const cases: [string, string[], RegExp][] = [
      [
        'a Flink checkpoint without --operator names the flags and flink ls',
        [],
        /--operator OP --subtask N.*flink ls/,
      ],
      [
        'an unknown operator lists the candidates',
        ['--operator', 'no-such-op', '--subtask', '0'],
        new RegExp(`unknown operator 'no-such-op'.*${f.keyedOperator}`),
      ],
      [
        'a subtask outside the parallelism',
        ['--operator', f.keyedOperator, '--subtask', '9'],
        /subtask 9 does not exist/,
      ],
      [
        '--operator without --subtask',
        ['--operator', f.keyedOperator],
        /--operator needs --subtask/,
      ],
      [
        '--key without --rescale',
        ['--operator', f.keyedOperator, '--subtask', '0', '--key', 'int'],
        /--key needs --rescale/,
      ],
      [
        'a bad --key',
        ['--operator', f.keyedOperator, '--subtask', '0', '--rescale', '0/2', '--key', 'float'],
        /--key must be long, int or bytes:K/,
      ],
      [
        '--output-state with --rescale',
        ['--operator', f.keyedOperator, '--subtask', '0', '--rescale', '0/2', '--output-state'],
        /--output-state cannot be rescaled/,
      ],
      [
        'a malformed --relocate',
        ['--operator', f.keyedOperator, '--subtask', '0', '--relocate', 'nothing'],
        /--relocate: a relocation must be FROM=TO/,
      ],
      ['--subtask without --operator', ['--subtask', '0'], /--subtask needs --operator/],
    ];
    for (const [name, args, pattern] of cases) {
      it(
        name,
        async () => {
          const root = await makeTempRoot();
          const out = join(root, 'out');
          const run = await runRecover(f.checkpoint, out, root, args);
          expectRefused(run, pattern);
          expect(existsSync(out)).toBe(false);
          expect(listSpill(root)).toEqual({ taskDirs: [], spillFiles: [] });
        },
        60_000,
      );
    }
  },
);

describe('recoverChannelState checks options.flink when called', () => {
  const base = {
    checkpoint: 'chk-1',
    channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
  };
  const bad: [string, unknown, RegExp][] = [
    ['not an object', 7, /options\.flink must be an object/],
    ['no operator', { subtask: 0 }, /options\.flink\.operator/],
    ['a negative subtask', { operator: 'x', subtask: -1 }, /options\.flink\.subtask/],
    ['an unknown key', { operator: 'x', subtask: 0, bogus: 1 }, /options\.flink\.bogus/],
    ['a bad key', { operator: 'x', subtask: 0, key: 'float' }, /options\.flink\.key/],
    [
      'allowPaths not an array of paths',
      { operator: 'x', subtask: 0, allowPaths: [''] },
      /options\.flink\.allowPaths/,
    ],
    [
      'relocate without to',
      { operator: 'x', subtask: 0, relocate: [{ from: '/a' }] },
      /options\.flink\.relocate/,
    ],
  ];
  for (const [name, flink, pattern] of bad) {
    // A number outside its documented range is a RangeError (ERR_OUT_OF_RANGE), as in Node.
    const kind = name === 'a negative subtask' ? RangeError : TypeError;
    it(`${name}: a ${kind.name} naming it, at once`, () => {
      expect(() => recoverChannelState({ ...base, flink } as never)).toThrow(pattern);
      expect(() => recoverChannelState({ ...base, flink } as never)).toThrow(kind);
    });
  }
});
