/**
 * Shared setup of the race suites: how many schedules to run, with which seed (printed, so a
 * failure can be replayed), and the glue that lets fast-check's scheduler decide the order of the
 * real file-system operations.
 *
 * Run more schedules: `SPILLWAY_RACE_RUNS=20000 npx vitest run test/races` (the total over all
 * races; the default is 2,000). Replay: `SPILLWAY_RACE_SEED=<seed printed> npx vitest run …`.
 */
import type { Scheduler } from 'fast-check';
import { afterAll, beforeAll } from 'vitest';
import type { MadeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import type { SpillLimits } from '../../src/services/spill/limits.ts';
import { type FsOp } from '../../src/services/fs.ts';
import { seam } from '../helpers/fault-seam.ts';
import { suppressedOf } from '../../src/services/errors.ts';
import { channelBytes, makeSmallCheckpoint } from '../helpers/checkpoints.ts';
import { removeSpillRoot } from '../helpers/spill-root.ts';
import { removeDir, tempDir } from '../helpers/temp.ts';

/** The race suites (one file each); the total run count is split evenly between them. */
export const RACE_SUITES = 5;

const totalRuns = Number(process.env.SPILLWAY_RACE_RUNS ?? 2_000);
if (!Number.isSafeInteger(totalRuns) || totalRuns < RACE_SUITES) {
  throw new Error(`SPILLWAY_RACE_RUNS must be an integer ≥ ${RACE_SUITES}`);
}

/** Schedules per race suite. */
export const RUNS_PER_RACE = Math.ceil(totalRuns / RACE_SUITES);

/** One seed for every race in this process; printed by {@link announce}. */
export const RACE_SEED = Number(
  process.env.SPILLWAY_RACE_SEED ?? (Date.now() ^ (process.pid << 8)) >>> 0,
);

/** Prints the seed and the count in a form that can be pasted back to replay. */
export function announce(race: string): void {
  console.log(
    `race "${race}": ${RUNS_PER_RACE} schedules, seed ${RACE_SEED} ` +
      `(replay: SPILLWAY_RACE_SEED=${RACE_SEED} SPILLWAY_RACE_RUNS=${RUNS_PER_RACE * RACE_SUITES})`,
  );
}

/** Per-race test timeout: generous per schedule, so raising the count never trips it. */
export const RACE_TIMEOUT_MS = Math.max(120_000, RUNS_PER_RACE * 100);

/** fast-check parameters shared by every race property. */
export const raceParams = { numRuns: RUNS_PER_RACE, seed: RACE_SEED, endOnFailure: true } as const;

/**
 * Routes every seam operation that `gated` selects through the scheduler: the operation starts
 * only when fast-check picks it. `onEnter` sees each selected operation as it is requested.
 * Returns a function that stops gating (later operations run at once).
 */
export function gateFs(
  s: Scheduler,
  gated: (op: FsOp, path: string) => boolean,
  onEnter?: (op: FsOp, path: string) => void,
): () => void {
  let open = true;
  seam.setFsHook((op, path) => {
    if (!open || !gated(op, path)) return undefined;
    onEnter?.(op, path);
    return s.schedule(Promise.resolve(), `${op} ${path.split('/').slice(-2).join('/')}`);
  });
  return () => {
    open = false;
  };
}

/**
 * Lets the scheduler run everything still scheduled (work that continues in the background after
 * the property's main promise settled), until nothing new appears for a few macrotask turns.
 */
export async function drainScheduler(s: Scheduler): Promise<void> {
  for (let quiet = 0; quiet < 3;) {
    if (s.count() > 0) {
      quiet = 0;
      await s.waitIdle();
    } else {
      quiet++;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
}

/** Every suppressed error, recursively, for checks on what an ending attached. */
export function allSuppressed(error: unknown): Error[] {
  const out: Error[] = [];
  const walk = (e: unknown) => {
    for (const s of suppressedOf(e)) {
      out.push(s);
      walk(s);
    }
  };
  walk(error);
  return out;
}

/** `ENOENT`-like codes that mean a file vanished under someone (G4). */
export function vanished(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'EBADF';
}

/** Limits for the race fixture: ~6 spill files of ~2 segments each, several buffers per file. */
export const RACE_LIMITS: SpillLimits = {
  maxSpillFileBytes: 4 * 1024,
  maxSegmentBytes: 2 * 1024,
  bufferBytes: 1024,
  readChunkBytes: 4 * 1024,
};

export interface RaceFixture {
  dir: string;
  checkpoint: MadeCheckpoint;
  /** Each channel's recovered bytes, keyed by `channelKey`. */
  expected: Map<string, Buffer>;
}

/** A 24 KiB checkpoint over 2 channels and what each channel must receive. */
export async function makeRaceFixture(): Promise<RaceFixture> {
  const dir = await tempDir();
  const checkpoint = await makeSmallCheckpoint(dir, {
    name: 'race.spwc',
    kib: 24,
    channels: 2,
    seed: 11,
    maxEntryBytes: 3 * 1024,
  });
  return { dir, checkpoint, expected: await channelBytes(checkpoint.path) };
}

/** What every test of a race file works on. */
export interface RaceSuite {
  readonly fixture: RaceFixture;
  /** One spill root for all the file's schedules (each must leave it empty). */
  readonly spillRoot: string;
}

/**
 * The per-file setup of a race: announces it (seed and count) and makes the fixture and a spill
 * root before the first schedule; after the last, prints `summary()` (where the schedules
 * landed) and removes both. Read the fields inside tests, not at collection time.
 */
export function raceSuite(race: string, summary: () => string): RaceSuite {
  let fixture: RaceFixture | undefined;
  let spillRoot = '';
  beforeAll(async () => {
    announce(race);
    fixture = await makeRaceFixture();
    spillRoot = await tempDir();
  });
  afterAll(async () => {
    console.log(summary());
    seam.resetFsSeam();
    if (spillRoot !== '') await removeSpillRoot(spillRoot);
    if (fixture !== undefined) await removeDir(fixture.dir);
  });
  return {
    get fixture() {
      return fixture!;
    },
    get spillRoot() {
      return spillRoot;
    },
  };
}
