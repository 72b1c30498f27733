/**
 * The rescaling figure of `spillway bench`: the fetch stage with the filtering handler
 * (`rescale: 0/2`, every record parsed, about half kept) against the same stage spilling
 * without filtering, on the same SPWC v2 file, as a throughput ratio over checkpoint payload.
 * Goal ≥ 0.9 (issue 33; 0.7 before): filtering may cost at most ~10 % on top of plain spilling.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { makeRecordCheckpoint } from '../src/services/formats/spwc/record-generator.ts';
import { fetchToSpill } from '../src/services/spill/fetch-stage.ts';
import type { RescaleOption } from '../src/services/rescale/rescale-options.ts';
import { round, spread, type Spread } from './stats.ts';

const MIB = 1024 * 1024;

/** What {@link measureFiltering} found, for the human report. */
export interface FilteringFigures {
  ratio: Spread;
  /** MiB/s of checkpoint payload, medians and spread. */
  filtering: Spread;
  spilling: Spread;
  records: number;
  kept: number;
}

/** One fetch of `checkpoint` into a fresh task dir (deleted after), timed. */
async function timedFetch(checkpoint: string, taskDir: string, rescale?: RescaleOption) {
  const t0 = performance.now();
  const result = await fetchToSpill({
    checkpoint,
    taskDir,
    signal: new AbortController().signal,
    onTaskDirAcquired: () => undefined,
    ...(rescale !== undefined ? { rescale } : {}),
  });
  const ms = performance.now() - t0;
  await result.state.release(); // the hand-off grant: deletes the spill files
  return { ms, kept: result.records?.kept ?? 0 };
}

/**
 * Makes a ~`mb` MiB v2 checkpoint in `dir` (records of 8–2048 bytes from 3 old subtasks over
 * 2 × 4 channels) and times both handlers `runs` times, alternating which goes first.
 *
 * @example
 * ```ts
 * const f = await measureFiltering({ dir, mb: 64, runs: 7, seed: 1, signal });
 * console.log(f.ratio.median); // ≥ 0.9 is the goal
 * ```
 */
export async function measureFiltering(o: {
  dir: string;
  mb: number;
  runs: number;
  seed: number;
  signal: AbortSignal;
}): Promise<FilteringFigures> {
  const path = join(o.dir, 'rescale.spwc');
  // Bodies average ~1 KiB: about a thousand records per MiB.
  const made = await makeRecordCheckpoint({
    out: path,
    records: Math.max(16, Math.round(o.mb * 1000)),
    subtasks: 3,
    gates: 2,
    channels: 4,
    seed: o.seed,
    maxEntryBytes: 64 * 1024,
  });
  try {
    const rescale = { subtask: 0, parallelism: 2 };
    const mibs = made.payloadBytes / MIB;
    const ratios: number[] = [];
    const filtering: number[] = [];
    const spilling: number[] = [];
    let kept = 0;
    // Warm-up: both hot paths compiled before anything is timed (V8 needs a few passes over
    // the parser's loop before it runs at its steady speed).
    for (let w = 0; w < 3; w++) {
      await timedFetch(path, join(o.dir, `rescale-warm-a${w}`));
      await timedFetch(path, join(o.dir, `rescale-warm-b${w}`), rescale);
    }
    for (let run = 0; run < o.runs; run++) {
      if (o.signal.aborted) throw o.signal.reason;
      const plain = () => timedFetch(path, join(o.dir, `rescale-plain-${run}`));
      const filtered = () => timedFetch(path, join(o.dir, `rescale-filter-${run}`), rescale);
      let a;
      let b;
      if (run % 2 === 0) {
        a = await plain();
        b = await filtered();
      } else {
        b = await filtered();
        a = await plain();
      }
      kept = b.kept;
      ratios.push(a.ms / b.ms);
      spilling.push(round((mibs / a.ms) * 1000, 0));
      filtering.push(round((mibs / b.ms) * 1000, 0));
    }
    const s = spread(ratios);
    return {
      ratio: { median: round(s.median, 3), min: round(s.min, 3), max: round(s.max, 3) },
      filtering: spread(filtering),
      spilling: spread(spilling),
      records: made.records,
      kept,
    };
  } finally {
    await rm(path, { force: true });
  }
}
