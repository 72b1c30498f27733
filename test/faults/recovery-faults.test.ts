/**
 * fs faults, enumerated rather than sampled: a small recovery is run once cleanly to count every
 * file-system operation it performs (`seam.fsOpCounts()` after `seam.resetFsSeam()`), then once per
 * operation × call index × errno (ENOSPC, EIO, EACCES) with exactly that call failing.
 *
 * What each run must end with depends on which step the fault hits (decided here, from the
 * contracts, and asserted precisely):
 *
 * - `cause`: any step of the recovery itself (checkpoint read, spill writes, drain reads, file
 *   closes): `done` rejects with the injected error itself (G5), the task is `failed`.
 * - `spill-root`: opening the spill root (its checks, `<root>/spillway`, the owner dir and its
 *   marker): `done` rejects with the injected error, or with a `SpillRootError` naming the path
 *   whose `cause` is the injected error; the task is `failed`.
 * - `sweep`: the start-up sweep's listing of `<root>/spillway`: the sweep is best effort (it logs
 *   and continues, DESIGN §3), so the task still finishes with every byte delivered.
 * - `cleanup`: the final remove of the task dir when the last grant is released, after every
 *   byte was delivered: there is no earlier cause, so `done` rejects with a `CleanupError` whose
 *   `cause` is the injected error (C1: never swallowed), and the registry's close retries the
 *   deletion (the fault fires once), so nothing is left.
 * - `cleanup-best-effort`: the fast path of that deletion (listing the task dir, unlinking its
 *   spill files) is best effort by design: the final recursive remove deletes whatever it left
 *   and is the one step whose error counts. So the task finishes with every byte delivered, and
 *   nothing is left.
 *
 * In every run: the cause is never an `AbortedError`, and no task dir or spill file exists at the
 * instant `done` settles, nor afterwards (G1).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecovery, type RecoveryReport } from '../../src/recover.ts';
import { AbortedError, CleanupError } from '../../src/services/errors.ts';
import { SpillRootError } from '../../src/services/errors.ts';
import { FS_OPS, type FsOp } from '../../src/services/fs.ts';
import { seam, type FaultCode } from '../helpers/fault-seam.ts';
import type { SpillLimits } from '../../src/services/spill/limits.ts';
import { makeSmallCheckpoint, suiteCheckpoint } from '../helpers/checkpoints.ts';
import {
  outcomeWithListing,
  listSpill,
  removeSpillRoot,
  type SpillListing,
} from '../helpers/spill-root.ts';
import { tempDir } from '../helpers/temp.ts';

const CODES: readonly FaultCode[] = ['ENOSPC', 'EIO', 'EACCES'];
const TASK_ID = 'faults';
/** 12 KiB over 2 channels in ~3 spill files of a few segments: every kind of step, few calls. */
const LIMITS: SpillLimits = {
  maxSpillFileBytes: 4096,
  maxSegmentBytes: 2048,
  bufferBytes: 1024,
  readChunkBytes: 4096,
};

type Expectation = 'cause' | 'spill-root' | 'sweep' | 'cleanup' | 'cleanup-best-effort';

interface Run {
  report?: RecoveryReport;
  error?: Error & { code?: string; syscall?: string; path?: string };
  /** The spill root's contents at the instant `done` settled, and after. */
  atDone: SpillListing;
  after: SpillListing;
  value: unknown;
  counts: Record<FsOp, number>;
  /** Every seam call in order, normalized (`<root>`, `task-*`), for the clean run. */
  calls: string[];
}

/** 12 KiB over 2 channels; with LIMITS ~3 spill files of a few segments. */
const input = suiteCheckpoint((dir) =>
  makeSmallCheckpoint(dir, {
    name: 'faults.spwc',
    kib: 12,
    channels: 2,
    seed: 5,
    maxEntryBytes: 1500,
  }),
);
let clean: Run;
/** What the per-operation tests that ran enumerated: for the line printed after the file. */
const enumerated = {
  points: 0,
  runs: 0,
  clean: 0,
  byExpectation: new Map<Expectation, number>(),
};

async function recover(fault?: { op: FsOp; code: FaultCode; nth: number }): Promise<Run> {
  const root = await tempDir();
  const calls: string[] = [];
  const normalize = (path: string) =>
    path
      .replace(root, '<root>')
      .replace(input.dir, '<fixture>')
      .replace(/owner-[^/]+/, 'owner-*')
      .replace(/task-faults-[0-9a-f]+/, 'task-*')
      .replace(/\.owner\.json\.tmp-[0-9a-f]+/, '.owner.json.tmp-*');
  seam.resetFsSeam();
  // Every call, asynchronous or synchronous (a small task dir is deleted synchronously).
  const record = (op: FsOp, path: string) => void calls.push(`${op} ${normalize(path)}`);
  seam.setFsHook(record);
  seam.setFsSyncHook(record);
  if (fault !== undefined) seam.injectFault(fault);
  const recovery = startRecovery({
    checkpoint: input.path,
    spillRoot: root,
    limits: LIMITS,
    taskId: TASK_ID,
    channels: () => ({ onBuffer: () => {}, onFinished: () => {} }),
  });
  const { atDone, ...outcome } = await outcomeWithListing(recovery.done, root);
  const counts = seam.fsOpCounts();
  seam.resetFsSeam();
  const after = listSpill(root);
  await removeSpillRoot(root);
  return {
    ...outcome,
    atDone,
    after,
    value: recovery.actor.getSnapshot().value,
    counts,
    calls,
  };
}

/** Which step the n-th call of `op` is in the clean run, hence what a fault there must do. */
function expectationFor(op: FsOp, n: number): { expectation: Expectation; call: string } {
  const call = clean.calls.filter((c) => c.startsWith(`${op} `))[n - 1]!;
  const path = call.slice(op.length + 1);
  if (op === 'readdir' && path === '<root>/spillway') return { expectation: 'sweep', call };
  if (op === 'rm' && /\/task-\*$/.test(path)) return { expectation: 'cleanup', call };
  if ((op === 'readdir' || op === 'unlink') && /\/task-\*(\/[^/]+)?$/.test(path)) {
    return { expectation: 'cleanup-best-effort', call };
  }
  if (path.startsWith('<root>') && !path.includes('/task-*')) {
    return { expectation: 'spill-root', call };
  }
  return { expectation: 'cause', call };
}

/** The error the seam injected for this fault (its message says so, with op and code). */
function isInjected(e: unknown, op: FsOp, code: FaultCode): boolean {
  const err = e as Run['error'];
  return (
    err !== undefined &&
    err.code === code &&
    err.syscall === op &&
    typeof err.message === 'string' &&
    err.message.endsWith('(injected)')
  );
}

/** What is wrong with one faulted run, or undefined. */
function verdict(run: Run, op: FsOp, code: FaultCode, n: number, expectation: Expectation) {
  const empty = (l: SpillListing) => l.taskDirs.length === 0 && l.spillFiles.length === 0;
  if (!empty(run.atDone)) return `G1: left at done: ${JSON.stringify(run.atDone)}`;
  if (!empty(run.after)) return `G1: left afterwards: ${JSON.stringify(run.after)}`;
  if (run.counts[op] < n) return `the fault never fired (${run.counts[op]} ${op} calls)`;
  const e = run.error;
  if (e instanceof AbortedError) return `G5: the cause is an AbortedError: ${e.message}`;
  const got = e === undefined ? 'a report' : `${e.name} ${e.code ?? ''}: ${e.message}`;
  switch (expectation) {
    case 'sweep':
    case 'cleanup-best-effort':
      return run.report?.bytesDelivered === input.made.payloadBytes && run.value === 'finished'
        ? undefined
        : `a ${expectation} fault must not fail the task; got ${got}`;
    case 'cause':
      return isInjected(e, op, code) && run.value === 'failed'
        ? undefined
        : `G5: expected the injected ${code} itself as the cause of a failed task; got ${got} (${String(run.value)})`;
    case 'spill-root':
      return (isInjected(e, op, code) ||
        (e instanceof SpillRootError && isInjected(e.cause, op, code))) &&
        run.value === 'failed'
        ? undefined
        : `G5: expected the injected ${code} (or a SpillRootError caused by it); got ${got}`;
    case 'cleanup':
      return e instanceof CleanupError && isInjected(e.cause, op, code) && run.value === 'failed'
        ? undefined
        : `C1: expected a CleanupError caused by the injected ${code}; got ${got} (${String(run.value)})`;
  }
}

beforeAll(async () => {
  clean = await recover();
});

afterAll(() => {
  const kinds = [...enumerated.byExpectation].map(([k, v]) => `${v} ${k}`).join(', ');
  console.log(
    `fs faults: ${enumerated.points} fault points (${kinds}) × ${CODES.length} codes = ${enumerated.runs} runs, ${enumerated.clean} clean`,
  );
  seam.resetFsSeam();
});

describe('fs faults at every call of a small recovery', () => {
  it('the clean run finishes and performs the same calls every time (the enumeration is exact)', async () => {
    expect(clean.error).toBeUndefined();
    expect(clean.report?.bytesDelivered).toBe(input.made.payloadBytes);
    expect(clean.report?.spillFiles).toBeGreaterThanOrEqual(3);
    const again = await recover();
    expect(again.calls).toEqual(clean.calls);
    expect(again.counts).toEqual(clean.counts);
  });

  for (const op of FS_OPS) {
    it(`${op}: ENOSPC, EIO and EACCES at each of its calls end clean, with the cause the contract names`, async () => {
      const problems: string[] = [];
      for (let n = 1; n <= clean.counts[op]; n++) {
        const { expectation, call } = expectationFor(op, n);
        enumerated.points++;
        enumerated.byExpectation.set(
          expectation,
          (enumerated.byExpectation.get(expectation) ?? 0) + 1,
        );
        for (const code of CODES) {
          enumerated.runs++;
          const run = await recover({ op, code, nth: n });
          const problem = verdict(run, op, code, n, expectation);
          if (problem === undefined) enumerated.clean++;
          else problems.push(`${code} at ${op} #${n} (${call}) [${expectation}]: ${problem}`);
        }
      }
      expect(problems).toEqual([]);
    });
  }

  it('the per-operation tests cover every call of the clean run', () => {
    // Each call of the clean run is some operation's n-th call, and every operation has a test
    // above that faults each of its calls with each code.
    expect(clean.calls).toHaveLength(Object.values(clean.counts).reduce((a, b) => a + b, 0));
    for (const call of clean.calls) expect(FS_OPS).toContain(call.split(' ')[0]);
    for (const op of FS_OPS) {
      expect(clean.calls.filter((c) => c.startsWith(`${op} `))).toHaveLength(clean.counts[op]);
    }
  });
});
