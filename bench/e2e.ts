/**
 * End to end against the I/O floor of the same work, timed as a user's run is: the
 * `spillway recover` process (compiled CLI, default flags, the spill root from `TMPDIR`,
 * stderr a pipe: no terminal), from spawn to exit, checkpoint → spill file → channel files;
 * against `dd bs=1M` of the checkpoint to a spill file and of that file to an output. Both
 * arms end in the same state and pay for it inside their time: the spill gone (recover deletes
 * its own, G1; dd's side `rm`s it) and the outputs removed. (Removed after the clock stopped,
 * they were freed while the next arm ran, and that arm paid: the old figure's low pairs.)
 * Alternating pairs. Nothing is synced before a timed step unless `sync` is asked for (a
 * user's run never syncs first; the synced variant is named so wherever it is reported).
 */
import { spawn } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { runCliMeasured } from './channels.ts';
import { flushWriteback } from './floors.ts';
import { spread, type Spread } from './stats.ts';

function dd(from: string, to: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('dd', [`if=${from}`, `of=${to}`, 'bs=1M'], { stdio: 'ignore' });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`dd exited ${code}`))));
  });
}

/** recover ÷ dd per pair, and each side's wall time. */
export interface EndToEndFigures {
  ratio: Spread;
  recoverMs: Spread;
  ddMs: Spread;
}

/**
 * Times `runs` alternating pairs on `checkpoint`, working in `dir` (removed again after).
 *
 * @example
 * ```ts
 * const { ratio } = await measureEndToEnd(checkpoint, dir, 3); // goal: median ≤ 1.3
 * ```
 */
export async function measureEndToEnd(
  checkpoint: string,
  dir: string,
  runs: number,
  signal?: AbortSignal,
  sync = false,
): Promise<EndToEndFigures> {
  const flush = sync ? flushWriteback : () => undefined;
  const work = join(dir, 'e2e');
  const spillRoot = join(work, 'spill');
  await mkdir(spillRoot, { recursive: true, mode: 0o700 });
  try {
    const ddSide = async (k: number) => {
      const spill = join(work, `dd-spill-${k}.bin`);
      const out = join(work, `dd-out-${k}.bin`);
      flush();
      const t0 = performance.now();
      await dd(checkpoint, spill);
      await dd(spill, out);
      // The same end state as recover's: no spill file left (G1), and the outputs removed.
      await rm(spill);
      await rm(out);
      return performance.now() - t0;
    };
    const recoverSide = async (k: number) => {
      const out = join(work, `out-${k}`);
      flush();
      const t0 = performance.now();
      await runCliMeasured(['recover', checkpoint, '--out', out], signal, {
        hwm: false,
        tmpdir: spillRoot,
      });
      await rm(out, { recursive: true, force: true });
      return performance.now() - t0;
    };
    const recover: number[] = [];
    const floor: number[] = [];
    for (let k = 0; k < runs; k++) {
      signal?.throwIfAborted();
      if (k % 2 === 0) {
        floor.push(await ddSide(k));
        recover.push(await recoverSide(k));
      } else {
        recover.push(await recoverSide(k));
        floor.push(await ddSide(k));
      }
    }
    return {
      ratio: spread(recover.map((ms, k) => ms / floor[k]!)),
      recoverMs: spread(recover),
      ddMs: spread(floor),
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
