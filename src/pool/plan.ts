/**
 * The loop planner: which fault kind loop `n` injects, at which point of its stage, and how
 * the task must then end. Pure and seeded: the same seed plans the same run.
 */
import type { StageName } from '../machines/task-services.ts';
import type { Outcome } from '../machines/task.machine.ts';
import type { AbortPath, FaultKind } from './faults.ts';
import { between, mix, rng } from './random.ts';

/** Where, within its kind, a fault is applied (a seam, a hook, or the stage it hits). */
export type Variant =
  | 'plain'
  | 'first-read'
  | 'requestPartitions'
  | 'installTrigger'
  | 'beforeStage'
  | 'afterDrainerBuilt'
  | 'beforeDrain'
  | 'onBuffer'
  | 'spill-read'
  | 'fetch'
  | 'drain';

/** The variants of each kind, taken in turn round after round. */
export const VARIANTS: Record<FaultKind, readonly Variant[]> = {
  none: ['plain'],
  'fetch-error': ['plain', 'first-read'],
  'close-error': ['plain'],
  enospc: ['plain'],
  'cancel-fetch': ['plain'],
  'mail-rejected': ['requestPartitions', 'installTrigger'],
  'mail-dropped': ['requestPartitions', 'installTrigger'],
  'cancel-gap': ['beforeStage', 'afterDrainerBuilt'],
  'executor-rejected': ['plain'],
  'drain-error': ['onBuffer', 'spill-read'],
  'cancel-drain': ['onBuffer', 'beforeDrain'],
  checkpoint: ['onBuffer', 'beforeDrain'],
  'cancel-after-failure': ['fetch', 'drain'],
};

/** Operations one clean recovery performs (measured), so every fault lands inside them. */
export interface OpCounts {
  checkpointReads: number;
  spillWrites: number;
  spillCloses: number;
  drainReads: number;
  buffers: number;
}

/** What one loop injects and how its task must end. */
export interface Plan {
  kind: FaultKind;
  variant: Variant;
  /** Which matching operation / buffer triggers the fault (1-based). */
  nth: number;
  expect: Outcome;
  /** The stage the task must be in when it ends (undefined: it finishes). */
  stage: StageName | undefined;
}

/**
 * The plan of loop `loop`, the `round`-th of its `kind`: the round picks the variant, the seed
 * and loop pick `nth` within the operations `ops` one clean recovery performs.
 *
 * @example
 * ```ts
 * const plan = makePlan('enospc', 0, 1, 5, ops);
 * // { kind: 'enospc', variant: 'plain', nth: 1…ops.spillWrites, expect: 'failed', stage: 'fetch' }
 * ```
 */
export function makePlan(
  kind: FaultKind,
  round: number,
  seed: number,
  loop: number,
  ops: OpCounts,
): Plan {
  const variants = VARIANTS[kind];
  const variant = variants[round % variants.length]!;
  const r = rng(mix(seed, loop));
  let nth = 1;
  let expect: Outcome = 'failed';
  let stage: StageName | undefined = 'fetch';
  switch (kind) {
    case 'none':
      expect = 'finished';
      stage = undefined;
      break;
    case 'checkpoint':
      expect = 'finished';
      stage = undefined;
      // Mid-drain, never after the last buffer (then the cut would be trivially empty).
      nth = between(r, 1, Math.max(1, ops.buffers - 1));
      break;
    case 'fetch-error':
      // The first read fails before any spill file exists (F1); any later one after (F2).
      nth =
        variant === 'first-read' || ops.checkpointReads < 2
          ? 1
          : between(r, 2, ops.checkpointReads);
      break;
    case 'close-error':
      nth = between(r, 1, ops.spillCloses);
      break;
    case 'enospc':
      nth = between(r, 1, ops.spillWrites);
      break;
    case 'cancel-fetch':
      nth = between(r, 1, ops.spillWrites);
      expect = 'cancelled';
      break;
    case 'mail-rejected':
      stage = 'gap';
      break;
    case 'mail-dropped':
    case 'cancel-gap':
      stage = 'gap';
      expect = 'cancelled';
      break;
    case 'executor-rejected':
      stage = 'drain';
      break;
    case 'drain-error':
      stage = 'drain';
      nth = between(r, 1, variant === 'spill-read' ? ops.drainReads : ops.buffers);
      break;
    case 'cancel-drain':
      stage = 'drain';
      expect = 'cancelled';
      nth = between(r, 1, ops.buffers);
      break;
    case 'cancel-after-failure':
      // ENOSPC in fetch or a throwing channel in drain, then a cancel at the stage's next
      // file operation (its own cleanup): the failure came first and must stay the cause.
      stage = variant === 'fetch' ? 'fetch' : 'drain';
      nth = between(r, 1, variant === 'fetch' ? ops.spillWrites : ops.buffers);
      break;
  }
  return { kind, variant, nth, expect, stage };
}

/**
 * The abort path an aborted loop of `plan` took; `spillFilesOpened` tells F1 from F2. Undefined
 * for kinds that end `finished`.
 */
export function abortPath(plan: Plan, spillFilesOpened: number): AbortPath | undefined {
  switch (plan.kind) {
    case 'fetch-error':
      return spillFilesOpened > 0 ? 'F2' : 'F1';
    case 'close-error':
      return 'F3';
    case 'enospc':
      return 'F2';
    case 'cancel-fetch':
      return 'F4';
    case 'mail-rejected':
      return plan.variant === 'installTrigger' ? 'GAP5' : 'GAP2';
    case 'mail-dropped':
      return plan.variant === 'installTrigger' ? 'GAP5' : 'GAP3';
    case 'cancel-gap':
      return 'GAPC';
    case 'executor-rejected':
      return 'D1';
    case 'drain-error':
      return 'D2';
    case 'cancel-drain':
      return 'D3';
    case 'cancel-after-failure':
      return plan.variant === 'fetch' ? 'F2' : 'D2';
    default:
      return undefined;
  }
}

/**
 * The fault schedule of a run: every kind once per round, in an order the seed shuffles anew
 * each round.
 *
 * @example
 * ```ts
 * const schedule = new FaultSchedule(['none', 'enospc'], 1);
 * schedule.kindOf(3); // { kind: 'none' | 'enospc', round: 1 }
 * ```
 */
export class FaultSchedule {
  private cache: { round: number; order: FaultKind[] } | undefined;

  constructor(
    private readonly faults: readonly FaultKind[],
    private readonly seed: number,
  ) {}

  /** The kind of loop `n` and which round of the schedule it is in. */
  kindOf(n: number): { kind: FaultKind; round: number } {
    const k = this.faults.length;
    const round = Math.floor(n / k);
    if (this.cache?.round !== round) {
      const order = [...this.faults];
      const r = rng(mix(this.seed, 0x7fff0000 + round));
      for (let i = order.length - 1; i > 0; i--) {
        const j = Math.floor(r() * (i + 1));
        [order[i], order[j]] = [order[j]!, order[i]!];
      }
      this.cache = { round, order };
    }
    return { kind: this.cache.order[n % k]!, round };
  }

  /** The plan of loop `n`, aimed inside `ops`. */
  plan(n: number, ops: OpCounts): Plan {
    const { kind, round } = this.kindOf(n);
    return makePlan(kind, round, this.seed, n, ops);
  }
}
