/**
 * The oracle that judges each ended loop: did the task end as planned with the injected first
 * cause (G5), did every channel get exactly its bytes (G6), does a checkpoint cut during drain
 * split them exactly (G6), and is the task's dir gone (G1)?
 */
import type { RecoveryReport } from '../recover.ts';
import type { CheckpointResult } from '../machines/events.ts';
import type { Outcome } from '../machines/task.machine.ts';
import { readCheckpoint } from '../services/formats/spwc/reader.ts';
import { channelKey } from '../services/channel.ts';
import { crc32 } from '../services/crc32.ts';
import { CancelledError, MisuseError, originalOf, RejectedError } from '../services/errors.ts';
import { fsSeam } from '../services/fs.ts';
import type { Census } from './census.ts';
import { taskDirMarker, type LoopState } from './loop.ts';
import { describeError, type KindStats, type Note, type PoolMetrics } from './metrics.ts';
import { abortPath } from './plan.ts';
import type { ChannelShape } from './shape.ts';

/** How a loop's recovery ended. */
export interface LoopEnd {
  report: RecoveryReport | undefined;
  error: unknown;
  /** The run's own stop signal had fired by then. */
  interrupted: boolean;
}

/** How a loop ended measured against its plan; each but `asExpected` is counted as such. */
export type Ending = 'asExpected' | 'interrupted' | 'missed' | 'masked';

/** The figures of the pool's metrics that the judge keeps. */
export type JudgeFigures = Pick<
  PoolMetrics,
  | 'outcomes'
  | 'spillFilesWritten'
  | 'abortPaths'
  | 'interrupted'
  | 'faultsMissed'
  | 'maskedCauses'
  | 'deliveryErrors'
  | 'checkpointsVerified'
>;

/** How a recovery that settled with `error` ended (`undefined`: it resolved). */
export function outcomeOf(error: unknown): Outcome {
  return error === undefined
    ? 'finished'
    : error instanceof CancelledError
      ? 'cancelled'
      : 'failed';
}

/** Whether `error` is the first cause the loop injected (or `undefined` for a clean run). */
export function expectedCause(loop: LoopState, wrapped: unknown): boolean {
  const { plan } = loop;
  if (wrapped === undefined) return plan.expect === 'finished';
  // The injected fault as it happened, under the ConsumerError or IoError that carries it out.
  const error = originalOf(wrapped);
  if (plan.expect === 'cancelled') return error instanceof CancelledError && loop.fired;
  const e = error as NodeJS.ErrnoException;
  const inTask = typeof e.path === 'string' && e.path.includes(taskDirMarker(loop.id));
  switch (plan.kind) {
    case 'fetch-error':
      return e.code === 'EIO' && e.syscall === 'read' && e.path === loop.input;
    case 'close-error':
      return e.code === 'EIO' && e.syscall === 'close' && inTask;
    case 'enospc':
      return e.code === 'ENOSPC' && e.syscall === 'write' && inTask;
    case 'mail-rejected':
      return error instanceof RejectedError && e.message.includes(`mail '${plan.variant}'`);
    case 'executor-rejected':
      return error instanceof RejectedError && e.message.includes(`job 'drain'`);
    case 'cancel-after-failure':
      if (plan.variant === 'fetch') return e.code === 'ENOSPC' && e.syscall === 'write' && inTask;
      return loop.injected !== undefined && error === loop.injected;
    case 'drain-error':
      if (plan.variant === 'spill-read') {
        return e.code === 'EIO' && e.syscall === 'read' && inTask;
      }
      return loop.injected !== undefined && error === loop.injected;
    default:
      return false;
  }
}

/** `<id> <kind>/<variant>#<nth>`: how problem lines name a loop. */
export function loopName(loop: LoopState): string {
  const { plan } = loop;
  return `${loop.id} ${plan.kind}/${plan.variant}#${plan.nth}`;
}

/**
 * Measures the ending against the plan; `problem` says what went wrong (for `asExpected`, that
 * the task ended in another stage than planned).
 */
export function classify(
  loop: LoopState,
  error: unknown,
  interrupted: boolean,
): { outcome: Outcome; ending: Ending; problem: string | undefined } {
  const { plan } = loop;
  const outcome = outcomeOf(error);
  const expected = expectedCause(loop, error);
  const what = loopName(loop);
  if (interrupted && (outcome === 'cancelled' || expected)) {
    // Our own stop signal: a CancelledError is the right answer whatever was planned.
    return { outcome, ending: 'interrupted', problem: undefined };
  }
  if (outcome === plan.expect && expected) {
    const wrongStage = plan.stage !== undefined && loop.stage !== plan.stage;
    const problem = wrongStage
      ? `${what}: ended in stage ${loop.stage}, planned ${plan.stage}`
      : undefined;
    return { outcome, ending: 'asExpected', problem };
  }
  if (outcome === 'finished') {
    // The fault never fired (or fired where it could not hurt): nothing to mask.
    return { outcome, ending: 'missed', problem: `${what}: fault did not fire, task finished` };
  }
  return {
    outcome,
    ending: 'masked',
    problem: `${what}: expected ${plan.expect}, got ${outcome}: ${describeError(error)}`,
  };
}

/**
 * G6: each channel got exactly its bytes, in order, and was finished exactly once, and the
 * report agrees. One line per delivery error.
 */
export function deliveryProblems(
  loop: LoopState,
  channels: readonly ChannelShape[],
  report: RecoveryReport | undefined,
): string[] {
  const what = loopName(loop);
  const problems: string[] = [];
  let total = 0;
  for (const c of channels) {
    const t = loop.tracks.get(c.key);
    total += t?.bytes ?? 0;
    if (t === undefined || t.bytes !== c.bytes || t.crc !== c.crc || t.finished !== 1) {
      problems.push(
        `${what}: ${c.key} got ${t?.bytes ?? 0} of ${c.bytes} bytes ` +
          `(crc ${t?.crc === c.crc ? 'ok' : 'wrong'}, finished ${t?.finished ?? 0}×)`,
      );
    }
  }
  if (report !== undefined && report.bytesDelivered !== total) {
    problems.push(`${what}: report says ${report.bytesDelivered} bytes, channels got ${total}`);
  }
  return problems;
}

/**
 * G6 at a checkpoint: for every channel, the bytes before its barrier followed by its
 * remainder in the checkpoint file are exactly the original bytes. `problems` holds one line
 * per delivery error. Removes the remainder file whatever it finds.
 */
export async function checkCheckpoint(
  loop: LoopState,
  channels: readonly ChannelShape[],
  outcome: Outcome,
): Promise<{ verified: boolean; problems: string[] }> {
  if (loop.checkpoint === undefined) return { verified: false, problems: [] };
  const what = loopName(loop);
  try {
    let result: CheckpointResult;
    try {
      result = await loop.checkpoint;
    } catch (e) {
      const problems =
        outcome === 'finished'
          ? [`${what}: checkpoint failed on a task that finished: ${describeError(e)}`]
          : [];
      return { verified: false, problems };
    }
    if (outcome !== 'finished') return { verified: false, problems: [] };
    const resumed = new Map<string, { crc: number; bytes: number }>();
    for (const [key, t] of loop.tracks) {
      // No barrier: the channel was finished before the cut, so its remainder must be empty.
      const at = t.barriers.get(result.checkpointId) ?? { crc: t.crc, bytes: t.bytes };
      resumed.set(key, { ...at });
    }
    if (result.file !== undefined) {
      let current: { crc: number; bytes: number } | undefined;
      await readCheckpoint(result.file, {
        onEntry(gate, channel) {
          current = resumed.get(channelKey({ gate, channel }));
          if (current === undefined) throw new MisuseError(`remainder names unknown channel`);
        },
        onPayload(chunk) {
          current!.crc = crc32(chunk, current!.crc);
          current!.bytes += chunk.length;
        },
      });
    }
    for (const c of channels) {
      const r = resumed.get(c.key);
      if (r === undefined || r.bytes !== c.bytes || r.crc !== c.crc) {
        const got = r?.bytes ?? 0;
        const line = `${what}: ${c.key} delivered-before-barrier + remainder = ${got} of ${c.bytes} bytes`;
        return { verified: false, problems: [line] };
      }
    }
    return { verified: true, problems: [] };
  } finally {
    if (loop.checkpointOut !== undefined) await fsSeam.rm(loop.checkpointOut);
  }
}

/**
 * Judges each ended loop of a pool into its figures: its outcome and abort path, whether its
 * cause was the injected one, what it delivered, and that its task dir is gone.
 */
export class Judge {
  constructor(
    private readonly channels: readonly ChannelShape[],
    private readonly census: Census,
    private readonly figures: JudgeFigures,
    private readonly note: Note,
  ) {}

  /** Counts the loop's ending into the figures and `stats`, noting every problem. */
  async ended(loop: LoopState, stats: KindStats, end: LoopEnd): Promise<void> {
    const m = this.figures;
    const { outcome, ending, problem } = classify(loop, end.error, end.interrupted);
    m.outcomes[outcome]++;
    m.spillFilesWritten += loop.spillFiles.size;
    const path = abortPath(loop.plan, loop.spillFiles.size);
    if (path !== undefined && outcome !== 'finished') {
      m.abortPaths[path] = (m.abortPaths[path] ?? 0) + 1;
      stats.paths[path] = (stats.paths[path] ?? 0) + 1;
    }
    stats[ending]++;
    if (ending === 'interrupted') m.interrupted++;
    if (ending === 'missed') m.faultsMissed++;
    if (ending === 'masked') m.maskedCauses++;
    if (problem !== undefined) this.note(problem);

    if (outcome === 'finished') {
      this.countDeliveryErrors(deliveryProblems(loop, loop.expected ?? this.channels, end.report));
    }
    const checkpoint = await checkCheckpoint(loop, loop.expected ?? this.channels, outcome);
    this.countDeliveryErrors(checkpoint.problems);
    if (checkpoint.verified) m.checkpointsVerified++;
    await this.taskDirGone(loop);
  }

  private countDeliveryErrors(problems: readonly string[]): void {
    this.figures.deliveryErrors += problems.length;
    for (const p of problems) this.note(p);
  }

  /** G1: by the time `done` settled, the task's dir (and every spill file in it) is gone. */
  private async taskDirGone(loop: LoopState): Promise<void> {
    for (const name of await this.census.leftBehind(loop.id)) {
      this.note(`${loop.id} ${loop.plan.kind}: ${name} still there after done settled`);
    }
  }
}
