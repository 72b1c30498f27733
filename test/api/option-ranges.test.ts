/**
 * B9 (issue 34): every numeric option has a documented range, checked when
 * `recoverChannelState` is called (`RangeError`, `ERR_OUT_OF_RANGE`), and no value inside the
 * range reaches a native limit. `limits.readChunkBytes: 2**31` used to abort Node itself (a
 * native assertion in `fs.read`, SIGABRT): it is run in a child process of the built library, so
 * that failure shows as the child's exit, not as the test runner's death.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { recoverChannelState, type RecoverOptions } from '../../src/index.ts';
import { OPTION_RANGES, type RangedOption } from '../../src/services/option-ranges.ts';
import { makeSmallCheckpoint } from '../helpers/checkpoints.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { repoRoot } from '../e2e/harness.ts';

const sink = () => ({ onBuffer: () => undefined, onFinished: () => undefined });

/** `options` with `value` put at the dotted `path` (`limits.readChunkBytes`). */
function withOption(base: Record<string, unknown>, path: string, value: number): RecoverOptions {
  const [head, tail] = path.split('.') as [string, string | undefined];
  if (tail === undefined) return { ...base, [head]: value } as unknown as RecoverOptions;
  const inner = head === 'flink' ? { operator: 'x', subtask: 0 } : {};
  return { ...base, [head]: { ...inner, [tail]: value } } as unknown as RecoverOptions;
}

function thrownBy(options: RecoverOptions): unknown {
  try {
    const recovery = recoverChannelState(options);
    recovery.cancel();
    return undefined;
  } catch (error) {
    return error;
  }
}

describe('B9 every numeric option has a documented range checked up front', () => {
  for (const [name, { min, max }] of Object.entries(OPTION_RANGES)) {
    it(`${name}: below ${min}, above ${max}, 2**31, 2**53-1 and 2**53 are ERR_OUT_OF_RANGE naming it`, async () => {
      const dir = await makeTempRoot();
      const base = { checkpoint: join(dir, 'none.spwc'), spillRoot: dir, channels: sink };
      const outside = [min - 1, max + 1, 2 ** 31, 2 ** 53 - 1, 2 ** 53].filter(
        (v) => v < min || v > max,
      );
      for (const value of outside) {
        const error = thrownBy(withOption(base, name, value));
        expect(error, `${name} = ${value}`).toBeInstanceOf(RangeError);
        expect(error).toMatchObject({
          code: 'ERR_OUT_OF_RANGE',
          message: expect.stringContaining(
            `options.${name} must be an integer from ${min} to ${max}`,
          ),
        });
      }
      // Nothing was started for a refused option.
      expect(await readdir(dir)).toEqual([]);
    });
  }

  it('the README documents each range', async () => {
    const { readFile } = await import('node:fs/promises');
    const readme = await readFile(join(repoRoot, 'README.md'), 'utf8');
    for (const name of Object.keys(OPTION_RANGES) as RangedOption[]) {
      expect(readme, name).toContain(`\`${name}\``);
    }
  });

  it('every limit at its largest value recovers a real checkpoint (no native limit inside the range)', async () => {
    const dir = await makeTempRoot();
    const made = await makeSmallCheckpoint(dir);
    const got: Buffer[] = [];
    const report = await recoverChannelState({
      checkpoint: made.path,
      spillRoot: dir,
      limits: {
        maxSpillFileBytes: OPTION_RANGES['limits.maxSpillFileBytes'].max,
        maxSegmentBytes: OPTION_RANGES['limits.maxSegmentBytes'].max,
        bufferBytes: OPTION_RANGES['limits.bufferBytes'].max,
        readChunkBytes: OPTION_RANGES['limits.readChunkBytes'].max,
      },
      remote: { deadlineMs: OPTION_RANGES['remote.deadlineMs'].max },
      abandonAfterMs: OPTION_RANGES.abandonAfterMs.max,
      progressIntervalMs: OPTION_RANGES.progressIntervalMs.max,
      channels: () => ({
        onBuffer: (b) => void got.push(Buffer.from(b)),
        onFinished: () => undefined,
      }),
    }).done;
    expect(report.bytesDelivered).toBe(Buffer.concat(got).length);
    expect(report.bytesDelivered).toBeGreaterThan(0);
  }, 60_000);

  const built = join(repoRoot, 'dist', 'src', 'index.js');
  it.skipIf(!existsSync(built))(
    'readChunkBytes: 2**31 does not abort Node: the built library refuses it with ERR_OUT_OF_RANGE',
    async () => {
      const dir = await makeTempRoot();
      const made = await makeSmallCheckpoint(dir);
      const script = `
        const { recoverChannelState } = await import(${JSON.stringify(built)});
        const sink = () => ({ onBuffer() {}, onFinished() {} });
        for (const readChunkBytes of [2 ** 31, 2 ** 53 - 1]) {
          try {
            await recoverChannelState({ checkpoint: ${JSON.stringify(made.path)}, spillRoot: ${JSON.stringify(dir)},
              channels: sink, limits: { readChunkBytes } }).done;
            console.log('recovered');
          } catch (e) { console.log(e.code); }
        }`;
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(child.signal, child.stderr).toBeNull();
      expect(child.status, child.stderr).toBe(0);
      expect(child.stdout.trim().split('\n')).toEqual(['ERR_OUT_OF_RANGE', 'ERR_OUT_OF_RANGE']);
    },
    60_000,
  );
});
