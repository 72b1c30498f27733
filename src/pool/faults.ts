/**
 * The pool's fault catalogue: what a loop can inject, how `--help` and the closing table name
 * it, and the rows of the Flink abort table the faults drive a task into.
 */
import { SpillwayError } from '../services/errors.ts';

/**
 * What a loop injects. `none` and `checkpoint` end `finished`; every other kind aborts the task
 * at a chosen point of one stage.
 */
export const FAULT_KINDS = [
  'none',
  'fetch-error',
  'close-error',
  'enospc',
  'cancel-fetch',
  'mail-rejected',
  'mail-dropped',
  'cancel-gap',
  'executor-rejected',
  'drain-error',
  'cancel-drain',
  'checkpoint',
  'cancel-after-failure',
] as const;
/** One entry of {@link FAULT_KINDS}. */
export type FaultKind = (typeof FAULT_KINDS)[number];

/** What `--faults all` means: every kind but `none`. */
export const ALL_FAULTS: readonly FaultKind[] = FAULT_KINDS.filter((k) => k !== 'none');

/** One line per kind, for `--help` and the closing table. */
export const FAULT_DESCRIPTIONS: Record<FaultKind, string> = {
  none: 'clean recovery',
  'fetch-error': 'EIO reading the checkpoint',
  'close-error': 'EIO closing a spill file',
  enospc: 'ENOSPC writing a spill file',
  'cancel-fetch': 'cancel while spilling',
  'mail-rejected': 'gap mail rejected (quiesced)',
  'mail-dropped': 'gap mail dropped (mailbox closed)',
  'cancel-gap': 'cancel in the gap',
  'executor-rejected': 'drain job rejected (shut down)',
  'drain-error': 'channel throws / EIO in drain',
  'cancel-drain': 'cancel while draining',
  checkpoint: 'checkpoint during drain',
  'cancel-after-failure': 'cancel while a failure cleans up',
};

/**
 * The abort paths of docs/flink.md §4 that the pool drives a task into (`GAPC`,
 * a cancel during the gap, has no row of its own there). The gap rows are `GAP1`–`GAP5`, so
 * that they never read as the guarantees G1–G12.
 */
export const ABORT_PATHS = {
  F1: 'fetch fails before any spill file',
  F2: 'fetch fails after spill files exist',
  F3: 'spill file close fails',
  F4: 'cancelled during fetch',
  GAP2: 'gap mail rejected',
  GAP3: 'gap mail dropped',
  GAP5: 'trigger-install mail rejected/dropped',
  GAPC: 'cancelled during the gap',
  D1: 'drain job rejected',
  D2: 'drain throws',
  D3: 'cancelled during drain',
} as const;
/** A row of {@link ABORT_PATHS}. */
export type AbortPath = keyof typeof ABORT_PATHS;

/** The gap rows' earlier names (`spillway demo` printed them before the rename). */
export const ABORT_PATH_ALIASES: Readonly<Record<string, AbortPath>> = {
  G2: 'GAP2',
  G3: 'GAP3',
  G5: 'GAP5',
  GC: 'GAPC',
};

/**
 * The row a name stands for, its earlier name accepted too; undefined for no row.
 *
 * @example
 * ```ts
 * abortPathNamed('G3'); // 'GAP3'
 * abortPathNamed('D1'); // 'D1'
 * ```
 */
export function abortPathNamed(name: string): AbortPath | undefined {
  if (Object.hasOwn(ABORT_PATHS, name)) return name as AbortPath;
  return Object.hasOwn(ABORT_PATH_ALIASES, name) ? ABORT_PATH_ALIASES[name] : undefined;
}

/** The error a channel consumer throws for `drain-error`: matched by identity. */
export class InjectedFaultError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_INJECTED_FAULT';
}
