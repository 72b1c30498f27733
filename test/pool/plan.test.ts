/**
 * The loop planner on its own: the seeded schedule, where each fault is aimed and which abort
 * path (docs/flink.md §4) an aborted loop took. Pure: no recovery runs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ABORT_PATHS, abortPathNamed, FAULT_KINDS, type FaultKind } from '../../src/pool/faults.ts';
import {
  abortPath,
  FaultSchedule,
  makePlan,
  VARIANTS,
  type OpCounts,
  type Plan,
} from '../../src/pool/plan.ts';

const OPS: OpCounts = {
  checkpointReads: 9,
  spillWrites: 40,
  spillCloses: 6,
  drainReads: 12,
  buffers: 30,
};

const opCounts = fc.record({
  checkpointReads: fc.integer({ min: 1, max: 50 }),
  spillWrites: fc.integer({ min: 1, max: 50 }),
  spillCloses: fc.integer({ min: 1, max: 50 }),
  drainReads: fc.integer({ min: 1, max: 50 }),
  buffers: fc.integer({ min: 1, max: 50 }),
});

/** The operations `nth` counts, per kind and variant (undefined: the fault has no `nth`). */
function countedOps(plan: Plan, ops: OpCounts): number | undefined {
  switch (plan.kind) {
    case 'fetch-error':
      return ops.checkpointReads;
    case 'close-error':
      return ops.spillCloses;
    case 'enospc':
    case 'cancel-fetch':
      return ops.spillWrites;
    case 'drain-error':
      return plan.variant === 'spill-read' ? ops.drainReads : ops.buffers;
    case 'cancel-drain':
    case 'checkpoint':
      return ops.buffers;
    case 'cancel-after-failure':
      return plan.variant === 'fetch' ? ops.spillWrites : ops.buffers;
    default:
      return undefined;
  }
}

describe('FaultSchedule', () => {
  it('runs every kind exactly once per round', () => {
    const schedule = new FaultSchedule(FAULT_KINDS, 7);
    const k = FAULT_KINDS.length;
    for (let round = 0; round < 4; round++) {
      const kinds = Array.from({ length: k }, (_, i) => schedule.kindOf(round * k + i));
      expect(kinds.every((x) => x.round === round)).toBe(true);
      expect(kinds.map((x) => x.kind).sort()).toEqual([...FAULT_KINDS].sort());
    }
  });

  it('is seeded: the same seed plans the same loops, another seed another order', () => {
    const plans = (seed: number) => {
      const schedule = new FaultSchedule(FAULT_KINDS, seed);
      return Array.from({ length: 3 * FAULT_KINDS.length }, (_, n) => schedule.plan(n, OPS));
    };
    expect(plans(42)).toEqual(plans(42));
    expect(plans(43).map((p) => p.kind)).not.toEqual(plans(42).map((p) => p.kind));
  });

  it('gives answers that do not depend on the order loops are asked for', () => {
    const inOrder = new FaultSchedule(FAULT_KINDS, 3);
    const backwards = new FaultSchedule(FAULT_KINDS, 3);
    const n = 2 * FAULT_KINDS.length;
    const forward = Array.from({ length: n }, (_, i) => inOrder.plan(i, OPS));
    const reverse = Array.from({ length: n }, (_, i) => backwards.plan(n - 1 - i, OPS)).reverse();
    expect(reverse).toEqual(forward);
  });
});

describe('makePlan', () => {
  it('aims every fault inside the operations one clean recovery performs', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...FAULT_KINDS),
        fc.nat(5),
        fc.nat(),
        fc.nat(10_000),
        opCounts,
        (kind, round, seed, loop, ops) => {
          const plan = makePlan(kind, round, seed, loop, ops);
          const counted = countedOps(plan, ops);
          expect(plan.nth).toBeGreaterThanOrEqual(1);
          expect(plan.nth).toBeLessThanOrEqual(counted ?? 1);
        },
      ),
    );
  });

  it('cuts a checkpoint mid-drain, never after the last buffer', () => {
    fc.assert(
      fc.property(fc.nat(5), fc.nat(), fc.nat(10_000), opCounts, (round, seed, loop, ops) => {
        const plan = makePlan('checkpoint', round, seed, loop, ops);
        expect(plan.nth).toBeLessThanOrEqual(Math.max(1, ops.buffers - 1));
      }),
    );
  });

  it('F1 fails the first checkpoint read; F2 a later one, once spill files can exist', () => {
    const firstRead = VARIANTS['fetch-error'].indexOf('first-read');
    const plain = VARIANTS['fetch-error'].indexOf('plain');
    for (let loop = 0; loop < 50; loop++) {
      expect(makePlan('fetch-error', firstRead, 1, loop, OPS).nth).toBe(1);
      expect(makePlan('fetch-error', plain, 1, loop, OPS).nth).toBeGreaterThanOrEqual(2);
    }
    // A checkpoint read in one go has no later read to fail.
    const oneRead = { ...OPS, checkpointReads: 1 };
    expect(makePlan('fetch-error', plain, 1, 0, oneRead).nth).toBe(1);
  });

  it('takes each kind variant by variant, round after round', () => {
    for (const kind of FAULT_KINDS) {
      const variants = VARIANTS[kind];
      const seen = Array.from({ length: 2 * variants.length }, (_, round) => {
        return makePlan(kind, round, 1, round, OPS).variant;
      });
      expect(seen).toEqual([...variants, ...variants]);
    }
  });

  it('plans the ending each kind must reach: finished, failed or cancelled, in its stage', () => {
    const ending = (kind: FaultKind) => {
      const { expect: outcome, stage } = makePlan(kind, 0, 1, 0, OPS);
      return `${outcome}${stage === undefined ? '' : ` in ${stage}`}`;
    };
    expect(Object.fromEntries(FAULT_KINDS.map((k) => [k, ending(k)]))).toEqual({
      none: 'finished',
      'fetch-error': 'failed in fetch',
      'close-error': 'failed in fetch',
      enospc: 'failed in fetch',
      'cancel-fetch': 'cancelled in fetch',
      'mail-rejected': 'failed in gap',
      'mail-dropped': 'cancelled in gap',
      'cancel-gap': 'cancelled in gap',
      'executor-rejected': 'failed in drain',
      'drain-error': 'failed in drain',
      'cancel-drain': 'cancelled in drain',
      checkpoint: 'finished',
      'cancel-after-failure': 'failed in fetch',
    });
  });
});

describe('abortPath', () => {
  const plan = (kind: FaultKind, variant: Plan['variant']): Plan => ({
    ...makePlan(kind, 0, 1, 0, OPS),
    variant,
  });

  it('tells F1 from F2 by whether the failed fetch had opened a spill file', () => {
    expect(abortPath(plan('fetch-error', 'first-read'), 0)).toBe('F1');
    expect(abortPath(plan('fetch-error', 'plain'), 3)).toBe('F2');
  });

  it('names the trigger-install mail GAP5 whether it was rejected or dropped', () => {
    expect(abortPath(plan('mail-rejected', 'requestPartitions'), 2)).toBe('GAP2');
    expect(abortPath(plan('mail-dropped', 'requestPartitions'), 2)).toBe('GAP3');
    expect(abortPath(plan('mail-rejected', 'installTrigger'), 2)).toBe('GAP5');
    expect(abortPath(plan('mail-dropped', 'installTrigger'), 2)).toBe('GAP5');
  });

  it('a cancel while a failure cleans up is the failure’s path (F2 in fetch, D2 in drain)', () => {
    expect(abortPath(plan('cancel-after-failure', 'fetch'), 1)).toBe('F2');
    expect(abortPath(plan('cancel-after-failure', 'drain'), 5)).toBe('D2');
  });

  it('the gap rows are GAP…, never a guarantee id, and their earlier names still name them', () => {
    expect(Object.keys(ABORT_PATHS).filter((row) => /^G\d+$/.test(row))).toEqual([]);
    expect(['G2', 'G3', 'G5', 'GC'].map(abortPathNamed)).toEqual(['GAP2', 'GAP3', 'GAP5', 'GAPC']);
    expect(abortPathNamed('D1')).toBe('D1');
    expect(abortPathNamed('G1')).toBeUndefined();
  });

  it('loops that end finished take no abort path', () => {
    expect(abortPath(plan('none', 'plain'), 4)).toBeUndefined();
    expect(abortPath(plan('checkpoint', 'onBuffer'), 4)).toBeUndefined();
  });
});
