/**
 * What one bench run is given (sizes, runs, where, how to stop) and the shape of a phase that
 * may not run here: the leaf every bench module reads, so that none imports the runner back.
 */
import type { GrowthOptions } from './growth.ts';

/** What one bench run measures, and how big. */
export interface BenchOptions {
  /** Alternating runs per ratio (≥ 5 for a real figure). */
  runs: number;
  /** Payload of the checkpoint the ratios are measured on, MiB. */
  mb: number;
  /** Payload of the checkpoint the RSS child recovers, MiB (2048 for `peakRssMiBAt2GiB`). */
  rssMb: number;
  /** Cancellations timed for `cancelCleanupP99Ms`. */
  cancels: number;
  /** Payload of each cancelled recovery's checkpoint, MiB. */
  cancelMb: number;
  /** Spill file bound of the cancelled recoveries (small, so each spills ~64 files). */
  cancelSpillFileBytes: number;
  /** Payload of the end-to-end checkpoint (32 channels) recovered through the CLI, MiB. */
  e2eMb: number;
  /** Alternating pairs of the end-to-end and start-up figures. */
  e2eRuns: number;
  startupRuns: number;
  /** One-byte channels recovered on a tmpfs against the file-creation floor: [gates, per gate]. */
  channels: [number, number];
  /** Alternating pairs of that figure (each takes seconds at 262,144 channels). */
  channelPairs: number;
  /** Also measure how cost grows (state size, concurrent tasks, channel counts). */
  growth?: GrowthOptions;
  seed: number;
  /** Parent of the bench's own temp dir (the OS temp dir by default). */
  tmpRoot: string;
  /** Interrupts the bench between steps; the temp dir is still removed. */
  signal: AbortSignal;
  /** Progress for humans: fraction done and what runs now. */
  progress?: (fraction: number, text: string) => void;
}

/** A phase's figures, or why it could not run here. */
export type OrSkipped<T> = T | { skipped: string };
