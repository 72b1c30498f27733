/**
 * `recoverToDirectory` (the CLI's `recover --out`, for apps): every channel's bytes land in
 * `gate-<g>-channel-<c>.bin` all at once, and an ending before the commit point — bad input, a
 * corrupt checkpoint, an aborted signal — leaves the directory exactly as found, with no spill
 * file anywhere (G1, G10). Real files in temp dirs, the real task machine.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile, mkdir, truncate, copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CorruptCheckpointError,
  OutputExistsError,
  recoverToDirectory,
  AbortedError,
  CancelledError,
} from '../../src/index.ts';
import { channelBytes, makeSmallCheckpoint } from '../helpers/checkpoints.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { listTree } from '../e2e/harness.ts';
import { FLINK_FIXTURES_DIR, readFlinkFixture } from '../helpers/flink-expected.ts';
import { seam } from '../helpers/fault-seam.ts';

const FIXTURE = join(FLINK_FIXTURES_DIR, '2.3.0-file');

async function setUp() {
  const dir = await makeTempRoot();
  const made = await makeSmallCheckpoint(dir, { kib: 256, gates: 2, channels: 2 });
  const spillRoot = join(dir, 'spill');
  await mkdir(spillRoot);
  return { dir, checkpoint: made.path, spillRoot, out: join(dir, 'out') };
}

/** The committed Flink 2.3.0 checkpoint, a spill root and an output path in a fresh temp dir. */
async function setUpFlink() {
  const { checkpoint, jobDir } = readFlinkFixture(FIXTURE);
  const dir = await makeTempRoot();
  const spillRoot = join(dir, 'spill');
  await mkdir(spillRoot);
  return { checkpoint, jobDir, spillRoot, out: join(dir, 'out') };
}

describe('recoverToDirectory', () => {
  afterEach(() => seam.resetFsSeam());

  it('writes every channel of the checkpoint, byte for byte, and reports the counts', async () => {
    const { checkpoint, spillRoot, out } = await setUp();
    const report = await recoverToDirectory({ checkpoint, spillRoot, out });
    const expected = await channelBytes(checkpoint);
    expect((await listTree(out)).sort()).toEqual(
      [...expected.keys()].map((k) => `${k}.bin`).sort(),
    );
    for (const [key, bytes] of expected) {
      expect((await readFile(join(out, `${key}.bin`))).equals(bytes), key).toBe(true);
    }
    expect(report.files).toBe(expected.size);
    expect(report.total.bytesDelivered).toBe(
      [...expected.values()].reduce((n, b) => n + b.length, 0),
    );
    expect(report.units).toHaveLength(1);
    expect(report.units[0]!.input?.channels).toBe(expected.size);
    expect(listSpill(spillRoot)).toEqual({ taskDirs: [], spillFiles: [] });
  });

  it('a corrupt checkpoint leaves a directory that held a user file exactly as found', async () => {
    const { dir, checkpoint, spillRoot, out } = await setUp();
    const broken = join(dir, 'broken.spwc');
    await copyFile(checkpoint, broken);
    await truncate(broken, 100_000);
    await mkdir(out);
    await writeFile(join(out, 'notes.txt'), 'mine');
    await expect(recoverToDirectory({ checkpoint: broken, spillRoot, out })).rejects.toBeInstanceOf(
      CorruptCheckpointError,
    );
    expect(await listTree(out)).toEqual(['notes.txt']);
    expect(listSpill(spillRoot)).toEqual({ taskDirs: [], spillFiles: [] });
  });

  it('an existing channel file is refused before anything is recovered (no --overwrite)', async () => {
    const { checkpoint, spillRoot, out } = await setUp();
    await mkdir(out);
    await writeFile(join(out, 'gate-0-channel-0.bin'), 'old');
    await expect(recoverToDirectory({ checkpoint, spillRoot, out })).rejects.toBeInstanceOf(
      OutputExistsError,
    );
    expect(await listTree(out)).toEqual(['gate-0-channel-0.bin']);
    expect(await readFile(join(out, 'gate-0-channel-0.bin'), 'utf8')).toBe('old');
    const replaced = await recoverToDirectory({ checkpoint, spillRoot, out, overwrite: true });
    expect(replaced.replaced).toEqual(['gate-0-channel-0.bin']);
  });

  it('an aborted signal ends the run: the directory it created is gone, no spill file left', async () => {
    const { checkpoint, spillRoot, out } = await setUp();
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    const error = await recoverToDirectory({
      checkpoint,
      spillRoot,
      out,
      signal: controller.signal,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error instanceof CancelledError || error instanceof AbortedError).toBe(true);
    expect(existsSync(out)).toBe(false);
    expect(listSpill(spillRoot)).toEqual({ taskDirs: [], spillFiles: [] });
  });

  it('a malformed option is a TypeError naming it, before anything is created', async () => {
    const { checkpoint, out } = await setUp();
    expect(() => recoverToDirectory({ checkpoint, out: '' })).toThrow(/options\.out/);
    expect(() =>
      recoverToDirectory({ checkpoint, out, overwrite: 'yes' as unknown as boolean }),
    ).toThrow(/options\.overwrite/);
    expect(await listTree(out)).toEqual([]);
  });

  it.skipIf(!existsSync(FIXTURE))(
    'all: a real Flink checkpoint into <operator>/subtask-<n>/, one report entry per subtask dir with each side apart',
    async () => {
      const { checkpoint, spillRoot, out } = await setUpFlink();
      const report = await recoverToDirectory({ checkpoint, out, spillRoot, all: true });
      const dirs = report.units.map((u) => u.dir);
      expect(dirs).toContain('slow-join/subtask-0');
      expect(dirs).toContain('to-record-a/subtask-1');
      const tree = await listTree(out);
      expect(tree.filter((p) => p.endsWith('.bin'))).toHaveLength(report.files);
      for (const u of report.units) {
        expect(u.operator).toMatch(/^[0-9a-f]{32}$/);
        const inTree = tree.filter((p) => p.startsWith(`${u.dir}/`) && p.endsWith('.bin'));
        expect(inTree.length, u.dir).toBe((u.input?.channels ?? 0) + (u.output?.channels ?? 0));
      }
      expect(listSpill(spillRoot)).toEqual({ taskDirs: [], spillFiles: [] });
    },
  );

  it.skipIf(!existsSync(FIXTURE))(
    "all: the total's durationMs is the run's wall time, not its sides' times added up (they run two at a time)",
    async () => {
      const { checkpoint, spillRoot, out, jobDir } = await setUpFlink();
      // Every read of a channel-state file waits 20 ms: each side then takes long enough that
      // two sides running at once overlap by far more than the run's own steps around them.
      seam.setFsHook(async (op, path) => {
        if (op === 'read' && path.startsWith(jobDir) && !path.endsWith('_metadata')) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      });
      const t0 = performance.now();
      const report = await recoverToDirectory({ checkpoint, out, spillRoot, all: true });
      const wall = performance.now() - t0;
      const sides = report.units.flatMap((u) => [u.input, u.output].filter((s) => s !== undefined));
      expect(sides.length).toBeGreaterThan(2);
      expect(report.total.durationMs).toBeLessThanOrEqual(Math.ceil(wall));
      for (const side of sides)
        expect(report.total.durationMs).toBeGreaterThanOrEqual(side.durationMs);
    },
  );
});
