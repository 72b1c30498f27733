/**
 * What a pool measures, as plain objects (safe to JSON.stringify), and the capped list of
 * problem lines every part of the pool reports into.
 */
import type { Outcome } from '../machines/task.machine.ts';
import type { AbortPath, FaultKind } from './faults.ts';

/** Per fault kind: how its loops ended. */
export interface KindStats {
  loops: number;
  /** Ended as planned, with the injected cause. */
  asExpected: number;
  masked: number;
  /** The fault never fired: the task ended before it or past it (not a failure of Spillway). */
  missed: number;
  interrupted: number;
  /** The abort paths its aborted loops took. */
  paths: Partial<Record<AbortPath, number>>;
}

/** Live and cumulative figures of a pool. A plain object: safe to JSON.stringify. */
export interface PoolMetrics {
  loopsStarted: number;
  /** Loops that ended (any outcome). */
  loops: number;
  liveTasks: number;
  outcomes: Record<Outcome, number>;
  /** Loops per injected fault kind (clean loops are not faults). */
  faults: Partial<Record<FaultKind, number>>;
  byKind: Partial<Record<FaultKind, KindStats>>;
  /** Which abort path each aborted loop took. */
  abortPaths: Partial<Record<AbortPath, number>>;
  /** Spill files and bytes under live tasks' dirs at the last sample. */
  liveFiles: number;
  liveBytes: number;
  peakLiveFiles: number;
  peakLiveBytes: number;
  /** Grants outstanding on live tasks' fetched states at the last sample. */
  outstandingGrants: number;
  /** Distinct files (or empty dirs) in the spill root that no live task owns. */
  leakedFiles: number;
  /** Failures reported with a cause other than the injected first cause. */
  maskedCauses: number;
  faultsMissed: number;
  /** Recovered bytes that arrived wrong, twice, out of order, or not at all (G6). */
  deliveryErrors: number;
  /** Loops cut short by the run's own signal (SIGINT). */
  interrupted: number;
  checkpointsVerified: number;
  bytesDelivered: number;
  spillFilesWritten: number;
  samples: number;
  /** The first few leaks, masked causes, misses and delivery errors, one line each. */
  problems: string[];
}

/** A fresh pool's figures: all zero. */
export function emptyMetrics(): PoolMetrics {
  return {
    loopsStarted: 0,
    loops: 0,
    liveTasks: 0,
    outcomes: { finished: 0, failed: 0, cancelled: 0 },
    faults: {},
    byKind: {},
    abortPaths: {},
    liveFiles: 0,
    liveBytes: 0,
    peakLiveFiles: 0,
    peakLiveBytes: 0,
    outstandingGrants: 0,
    leakedFiles: 0,
    maskedCauses: 0,
    faultsMissed: 0,
    deliveryErrors: 0,
    interrupted: 0,
    checkpointsVerified: 0,
    bytesDelivered: 0,
    spillFilesWritten: 0,
    samples: 0,
    problems: [],
  };
}

/** A fault kind's figures before its first loop. */
export function emptyKindStats(): KindStats {
  return { loops: 0, asExpected: 0, masked: 0, missed: 0, interrupted: 0, paths: {} };
}

/** Records one problem line (a leak, a masked cause, a miss, a delivery error). */
export type Note = (line: string) => void;

/** How many problem lines a pool keeps: the first few say what went wrong; the rest are counted. */
export const MAX_PROBLEMS = 20;

/**
 * A {@link Note} that appends to `problems` until it holds {@link MAX_PROBLEMS} lines.
 *
 * @example
 * ```ts
 * const note = noteInto(metrics.problems);
 * note('leaked: /tmp/spill/…/spill-segment-0.bin');
 * ```
 */
export function noteInto(problems: string[]): Note {
  return (line) => {
    if (problems.length < MAX_PROBLEMS) problems.push(line);
  };
}

/** An error's message, or the thrown value as text. */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** An error as a problem line names it: `name code: message` (`no error` for undefined). */
export function describeError(e: unknown): string {
  if (e === undefined) return 'no error';
  const name = (e as Error)?.name ?? typeof e;
  const code = (e as NodeJS.ErrnoException)?.code;
  return `${name}${code ? ` ${code}` : ''}: ${errorText(e)}`;
}
