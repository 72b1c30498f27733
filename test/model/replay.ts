/**
 * Replays one spec-model path on the REAL task: real actors, real spill files, real mailbox and
 * executor. The replay holds the task still at the point each model state names (a fs-seam pause
 * or a TaskHooks promise), performs the next event there, and checks the oracle after every step
 * and at the end:
 *
 * - model: the real task is in the state the model says (value, parked stage, outcome);
 * - G1: no task dir and no spill file exists at the instant `done` settles, nor afterwards;
 * - G2: `context.ownership` agrees with what is really open (owned ⇒ open, open ⇒ owned, the
 *   owner is a live actor, the registry backstop holds exactly what is owned); after a bare
 *   `actor.stop()` the backstop has taken over before `stop()` returns;
 * - G3: after the ending event no task dir is created and no spill file is written;
 * - G5: `done` rejects with the first real cause (the injected error, a `RejectedError`, a
 *   `CancelledError`), never with an `AbortedError` or ENOENT; a finished task reports every byte.
 *
 * A violation throws an {@link OracleViolation} naming the rule: the mutation check counts them.
 */
import { basename, join } from 'node:path';
import { existsSync } from 'node:fs';
import {
  startRecoveryOn,
  type RecoveryReport,
  type StartedRecovery as Recovery,
} from '../../src/recover.ts';
import { taskMachine } from '../../src/machines.ts';
import type { CheckpointResult } from '../../src/machines/events.ts';
import type { TaskHooks, TaskServices } from '../../src/machines/task-services.ts';
import { channelKey } from '../../src/services/channel.ts';
import {
  AbortedError,
  CancelledError,
  RejectedError,
  suppressedOf,
} from '../../src/services/errors.ts';
import { type FsOp } from '../../src/services/fs.ts';
import { seam, makeFsError } from '../helpers/fault-seam.ts';
import type { MadeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import type { RescaleOption } from '../../src/services/rescale/rescale-options.ts';
import type { ModelPath } from './paths.ts';
import { INITIAL_STATE, stateKey } from './paths.ts';
import type { SpecEventType } from './spec.machine.ts';
import {
  HangError,
  deferred,
  eventually,
  macrotasks,
  withHangGuard,
  type Deferred,
} from '../helpers/async.ts';
import { SMALL_LIMITS } from '../helpers/checkpoints.ts';
import {
  listSpill,
  outcomeWithListing,
  removeSpillRoot,
  type SpillListing,
} from '../helpers/spill-root.ts';
import { removeDir, tempDir } from '../helpers/temp.ts';

export type Rule = 'model' | 'G1' | 'G2' | 'G3' | 'G5' | 'G6' | 'S4' | 'hang';

/** The oracle said no. `rule` says which promise was broken. */
export class OracleViolation extends Error {
  constructor(
    readonly rule: Rule,
    message: string,
  ) {
    super(`${rule}: ${message}`);
  }
}

function check(ok: boolean, rule: Rule, message: () => string): asserts ok {
  if (!ok) throw new OracleViolation(rule, message());
}

/** Where the real task is held for each model state. */
type ParkName = 'fetch.read' | 'fetch.spill' | 'gap' | 'drain' | 'checkpoint.write';

interface Park {
  readonly arrived: Deferred;
  readonly gate: Deferred;
  entered: boolean;
}

/** The real task state (dotted) each model state corresponds to. */
const REAL_STATE: Record<string, string> = {
  'alive.restoring.fetching.reading': 'alive.restoring.fetching',
  'alive.restoring.fetching.spilling': 'alive.restoring.fetching',
  'alive.restoring.gap': 'alive.restoring.gap',
  'alive.restoring.stalled': 'alive.restoring.gap',
  'alive.restoring.draining': 'alive.restoring.draining',
  'alive.restoring.checkpointing': 'alive.restoring.draining',
  'alive.restoring.checkpointed': 'alive.restoring.draining',
  'alive.running': 'alive.running',
};

/** The park each model state is held at (running and stalled are held by nothing). */
const PARK_OF: Record<string, ParkName | undefined> = {
  'alive.restoring.fetching.reading': 'fetch.read',
  'alive.restoring.fetching.spilling': 'fetch.spill',
  'alive.restoring.gap': 'gap',
  'alive.restoring.draining': 'drain',
  'alive.restoring.checkpointing': 'checkpoint.write',
};

const CHECKPOINT_ID = 1;

const ENDINGS = new Set(['finished', 'failed', 'cancelled', 'stopped']);

export interface ReplayOptions {
  fixture: MadeCheckpoint;
  /** A task machine variant (the mutants); default the product's. */
  machine?: typeof taskMachine;
  /** How long a promise that must settle may take before it counts as a hang. */
  hangMs?: number;
  /**
   * Rescaling (filtering mode): `fixture.payloadBytes` and `fixture.channels` are then what
   * the filtering recovery must deliver.
   */
  rescale?: RescaleOption;
}

/** What one replay saw; thrown violations carry the rest. */
export interface ReplayResult {
  report?: RecoveryReport;
  error?: Error;
}

interface ChannelLog {
  bytes: number;
  finished: number;
  /** `b:<id>` for a barrier, `d` for a delivery, in order. */
  events: string[];
}

/**
 * Replays `path` on a fresh spill root and checks the oracle. Throws {@link OracleViolation} on
 * the first broken promise; always cleans up everything it made.
 */
export async function replayPath(path: ModelPath, options: ReplayOptions): Promise<ReplayResult> {
  const run = new Replay(path, options);
  try {
    return await run.execute();
  } finally {
    await run.cleanup();
  }
}

class Replay {
  private readonly hangMs: number;
  private spillRoot = '';
  private outDir = '';
  private recovery!: Recovery;
  private readonly parks = new Map<ParkName, Park>();
  private readonly channels = new Map<string, ChannelLog>();
  /** Armed by DRAIN.FAILED: the main reader's next read of spill-segment-1 throws it. */
  private drainFault: Error | undefined;
  /** Armed by GAP.FAILED: thrown by afterDrainerBuilt, i.e. with the main reader open (row GAP4). */
  private gapFault: Error | undefined;
  private blocker: Deferred | undefined;
  private releasedAll = false;
  private checkpoint: Promise<{ result?: CheckpointResult; error?: unknown }> | undefined;
  /** Set once the ending event was performed: from then on, G3 watches the writer. */
  private ended = false;
  private readonly afterEnd: string[] = [];
  /** What the spill root held at the instant `done` settled. */
  private settledListing: SpillListing | undefined;
  /** The cause the path's ending event must produce. */
  private expected:
    | { kind: 'report' }
    | { kind: 'same'; error: Error }
    | { kind: 'class'; ctor: typeof RejectedError | typeof CancelledError }
    | undefined;

  constructor(
    private readonly path: ModelPath,
    private readonly options: ReplayOptions,
  ) {
    this.hangMs = options.hangMs ?? 10_000;
  }

  private get actor() {
    return this.recovery.actor;
  }

  private get services(): TaskServices {
    return this.actor.getSnapshot().context.services;
  }

  private park(name: ParkName): Park {
    let p = this.parks.get(name);
    if (p === undefined) {
      p = { arrived: deferred(), gate: deferred(), entered: false };
      this.parks.set(name, p);
    }
    return p;
  }

  /**
   * Holds the caller until the path releases (or fails) this park. First entry only, and never
   * once the path has ended: what runs after the ending runs freely.
   */
  private enter(name: ParkName): Promise<void> | undefined {
    const p = this.park(name);
    if (p.entered || this.releasedAll) return undefined;
    p.entered = true;
    p.arrived.resolve();
    return p.gate.promise;
  }

  private isOwnSpillFile(path: string, index: number): boolean {
    return (
      path.startsWith(this.spillRoot) &&
      new RegExp(`/task-[^/]+/spill-segment-${index}\\.bin$`).test(path)
    );
  }

  private readonly fsHook = async (op: FsOp, path: string): Promise<void> => {
    if (this.ended && path.startsWith(this.spillRoot)) {
      // G3: the writer's creations and growths; reads and deletes are fine after an abort.
      if (
        (op === 'mkdir' && /\/task-[^/]+$/.test(path)) ||
        (op === 'write' && /spill-segment-/.test(path))
      ) {
        this.afterEnd.push(`${op} ${path}`);
      }
    }
    if (op === 'read' && path === this.options.fixture.path) return this.enter('fetch.read');
    if (op === 'open' && this.isOwnSpillFile(path, 1)) {
      // The first open of spill-segment-1 is the writer's rotation; later ones are readers'.
      return this.enter('fetch.spill');
    }
    if (op === 'read' && this.drainFault !== undefined && this.isOwnSpillFile(path, 1)) {
      const fault = this.drainFault;
      this.drainFault = undefined;
      throw fault;
    }
    // The remainder file is created at `out` or staged beside the spill files under a name that
    // contains out's name: either way this is the checkpoint writer creating its output.
    if (op === 'open' && basename(path).includes(basename(this.outFile))) {
      return this.enter('checkpoint.write');
    }
  };

  private get outFile(): string {
    return join(this.outDir, `checkpoint-${CHECKPOINT_ID}.spwc`);
  }

  private readonly hooks: TaskHooks = {
    beforeStage: (stage) => {
      if (stage === 'gap') return this.enter('gap');
      if (stage === 'drain') return this.enter('drain');
      return undefined;
    },
    afterDrainerBuilt: () => {
      if (this.gapFault !== undefined) throw this.gapFault;
    },
  };

  async execute(): Promise<ReplayResult> {
    seam.resetFsSeam();
    this.spillRoot = await tempDir();
    this.outDir = await tempDir();
    seam.setFsHook(this.fsHook);
    this.recovery = startRecoveryOn(this.options.machine ?? taskMachine, {
      checkpoint: this.options.fixture.path,
      spillRoot: this.spillRoot,
      limits: SMALL_LIMITS,
      hooks: this.hooks,
      autoFinish: false,
      taskId: 'model',
      channels: (info) => {
        const log: ChannelLog = { bytes: 0, finished: 0, events: [] };
        this.channels.set(channelKey(info), log);
        return {
          onBuffer: (b) => {
            log.bytes += b.length;
            if (log.events.at(-1) !== 'd') log.events.push('d');
          },
          onFinished: () => void log.finished++,
          onBarrier: (id) => void log.events.push(`b:${id}`),
        };
      },
      ...(this.options.rescale ? { rescale: this.options.rescale } : {}),
    });
    // Taken synchronously in the first callback on `done`: G1 is about that instant.
    const done = outcomeWithListing(this.recovery.done, this.spillRoot).then(
      ({ atDone, ...outcome }): ReplayResult => {
        this.settledListing = atDone;
        return outcome;
      },
    );

    let state = INITIAL_STATE;
    await this.arrive(state, 'start');
    for (const step of this.path.steps) {
      // G3 watches the writer from the ending event on (a stage failure is an ending too).
      if (ENDINGS.has(step.state)) this.ended = true;
      await this.perform(step.event, state);
      state = step.state;
      await this.arrive(state, step.event);
    }

    // Whatever is still held finishes now, as a stage that is never interrupted would.
    this.releaseAll();
    const outcome = await withHangGuard(done, 'done', this.hangMs).catch((e: unknown) => {
      throw e instanceof HangError ? new OracleViolation('hang', e.message) : e;
    });
    this.checkOutcome(outcome);
    this.checkSpillRootEmpty(this.settledListing!, 'at the instant done settled');
    this.checkFinalOwnership();
    await this.settleBackground();
    this.checkSpillRootEmpty(listSpill(this.spillRoot), 'after the background work settled');
    check(this.afterEnd.length === 0, 'G3', () => `after the ending: ${this.afterEnd.join(', ')}`);
    return outcome;
  }

  /** Performs one model event on the real task. */
  private async perform(event: SpecEventType, from: string): Promise<void> {
    const release = (name: ParkName) => this.park(name).gate.resolve();
    switch (event) {
      case 'FETCH.SPILLED':
        return release('fetch.read');
      case 'FETCH.FAILED': {
        const [park, op, file]: [ParkName, FsOp, string] =
          from === 'alive.restoring.fetching.reading'
            ? ['fetch.read', 'read', this.options.fixture.path]
            : ['fetch.spill', 'open', 'spill-segment-1.bin'];
        const error = makeFsError('EIO', op, file);
        this.expectCause({ kind: 'same', error });
        this.park(park).gate.reject(error);
        return;
      }
      case 'FETCH.DONE':
        return release('fetch.spill');
      case 'GAP.DONE':
        return release('gap');
      case 'GAP.FAILED':
        this.gapFault = new Error('injected: buildDrainer failed with the main reader open');
        this.expectCause({ kind: 'same', error: this.gapFault });
        return release('gap');
      case 'MAIL.REJECTED':
        this.services.mailbox.quiesce();
        this.expectCause({ kind: 'class', ctor: RejectedError });
        return release('gap');
      case 'MAIL.DROPPED': {
        // A running mail ahead of requestPartitions, so the close finds it queued (row GAP3).
        const mailbox = this.services.mailbox;
        this.blocker = deferred();
        const blocker = this.blocker;
        mailbox.execute('blocker', () => blocker.promise).catch(() => undefined);
        release('gap');
        check(
          await eventually(() => mailbox.pending >= 1),
          'model',
          () => 'requestPartitions was never queued',
        );
        const { names } = mailbox.close();
        check(names.join() === 'requestPartitions', 'model', () => `dropped [${names.join()}]`);
        return;
      }
      case 'DRAIN.DONE':
        return release('drain');
      case 'DRAIN.FAILED':
        this.drainFault = makeFsError('EIO', 'read', 'spill-segment-1.bin');
        this.expectCause({ kind: 'same', error: this.drainFault });
        return release('drain');
      case 'EXECUTOR.REJECTED':
        void this.services.executor.shutdown();
        this.expectCause({ kind: 'class', ctor: RejectedError });
        return release('drain');
      case 'CHECKPOINT':
        this.checkpoint = this.recovery.checkpoint(CHECKPOINT_ID, { out: this.outFile }).then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        );
        return;
      case 'CHECKPOINT.DONE': {
        release('checkpoint.write');
        const { result, error } = await this.guard(this.checkpoint!, 'checkpoint');
        check(result !== undefined, 'model', () => `checkpoint failed: ${String(error)}`);
        // The drain had not started: the whole state is the remainder (G6), cut by a barrier
        // that every channel saw before any byte.
        const total = result.channels.reduce((n, c) => n + c.bytes, 0);
        check(
          result.file === this.outFile && total === this.options.fixture.payloadBytes,
          'G6',
          () =>
            `remainder ${total} of ${this.options.fixture.payloadBytes} bytes in ${result.file}`,
        );
        const logs = this.options.fixture.channels.map((c) => this.channels.get(channelKey(c)));
        check(
          logs.every((log) => log?.events.join() === `b:${CHECKPOINT_ID}`),
          'G6',
          () => `barriers per channel: ${JSON.stringify(logs.map((l) => l?.events))}`,
        );
        return;
      }
      case 'FINISH':
        this.expectCause({ kind: 'report' });
        this.actor.send({ type: 'FINISH' });
        return;
      case 'CANCEL':
        this.expectCause({ kind: 'class', ctor: CancelledError });
        this.recovery.cancel('model path');
        return;
      case 'FAIL': {
        const error = new Error('injected: FAIL from outside');
        this.expectCause({ kind: 'same', error });
        this.actor.send({ type: 'FAIL', error });
        return;
      }
      case 'STOP': {
        this.expectCause({ kind: 'class', ctor: CancelledError });
        this.actor.stop();
        // No exit action runs on stop: the registry actor's disposer must hand every resource
        // to the backstop within stop() itself, or for a moment nobody owns them (G2).
        check(
          this.actor.getSnapshot().context.ending.registry.isClosed,
          'G2',
          () => 'actor.stop() returned and the registry backstop has not started closing',
        );
        return;
      }
    }
  }

  private expectCause(expected: NonNullable<Replay['expected']>): void {
    this.expected ??= expected;
  }

  /** Resolves true once `predicate` holds, false if the actor stops, errors or ends without it. */
  private until(
    predicate: (s: ReturnType<Recovery['actor']['getSnapshot']>) => boolean,
  ): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const test = (): boolean => {
        const s = this.actor.getSnapshot();
        if (predicate(s)) return (resolve(true), true);
        if (s.status !== 'active') return (resolve(false), true);
        return false;
      };
      if (test()) return;
      const sub = this.actor.subscribe({
        next: () => void (test() && sub.unsubscribe()),
        complete: () => void (test() || resolve(false)),
        error: () => resolve(false),
      });
    });
  }

  /** Resolves (false) once the task is no longer active. */
  private whenEnded(): Promise<boolean> {
    return this.until(() => false);
  }

  private guard<T>(p: Promise<T>, what: string): Promise<T> {
    return withHangGuard(p, what, this.hangMs).catch((e: unknown) => {
      throw e instanceof HangError ? new OracleViolation('hang', e.message) : e;
    });
  }

  /** Waits until the real task is where the model state says, then checks ownership there. */
  private async arrive(state: string, after: string): Promise<void> {
    const now = () => this.actor.getSnapshot();
    const where = () =>
      `${now().status} ${stateKey(now().value)}${now().context.cause ? ` (${describe(now().context.cause)})` : ''}`;
    if (state === 'stopped') {
      check(now().status === 'stopped', 'model', () => `after STOP the task is ${where()}`);
      return;
    }
    if (ENDINGS.has(state)) {
      await this.guard(this.whenEnded(), `the task ending in ${state}`);
      check(
        now().status === 'done' && now().value === state,
        'model',
        () => `after ${after} the model is ${state}, the task is ${where()}`,
      );
      return;
    }
    const park = PARK_OF[state];
    let reached: Promise<boolean>;
    if (park !== undefined) {
      const arrived = this.park(park).arrived.promise.then(() => true);
      reached = Promise.race([arrived, this.whenEnded()]);
    } else if (state === 'alive.running') {
      reached = this.until((s) => s.status === 'active' && stateKey(s.value) === 'alive.running');
    } else {
      reached = Promise.resolve(true);
    }
    const ok = await this.guard(reached, `reaching ${state} after ${after}`);
    check(
      ok && now().status === 'active',
      'model',
      () => `after ${after} the model is in ${state}, the task is ${where()}`,
    );
    check(
      stateKey(now().value) === REAL_STATE[state],
      'model',
      () => `after ${after} the model is in ${state}, the task is ${where()}`,
    );
    this.checkLiveOwnership(state);
  }

  /** G2 while the task is alive: the ownership map against the real resources. */
  private checkLiveOwnership(state: string): void {
    const snap = this.actor.getSnapshot();
    const { ownership, state: fetched, drainer, services } = snap.context;
    const owned = Object.keys(ownership).sort();
    const where = `in ${state}, ownership ${JSON.stringify(ownership)}`;
    const { taskDirs } = listSpill(this.spillRoot);

    // What the model state says must be owned.
    const holdsSnapshot = state === 'alive.restoring.checkpointing' || this.checkpointHeld();
    const expected: string[] = {
      'alive.restoring.fetching.reading': [],
      'alive.restoring.fetching.spilling': ['taskDir'],
      'alive.restoring.gap': ['fetchedState'],
      'alive.restoring.stalled': ['fetchedState'],
      'alive.restoring.draining': ['drainer', 'fetchedState'],
      'alive.restoring.checkpointing': ['drainer', 'fetchedState'],
      'alive.restoring.checkpointed': ['drainer', 'fetchedState'],
      'alive.running': [],
    }[state]!;
    const want = [
      ...expected,
      ...(holdsSnapshot ? ['fetchedState', `snapshot-${CHECKPOINT_ID}`] : []),
    ];
    check(
      owned.join() === [...new Set(want)].sort().join(),
      'G2',
      () => `${where}; expected owned: [${[...new Set(want)].sort().join(', ')}]`,
    );

    // Owned ⇒ really open.
    if (ownership.taskDir !== undefined) {
      check(taskDirs.length === 1, 'G2', () => `${where} but task dirs on disk: [${taskDirs}]`);
    }
    if (ownership.fetchedState !== undefined) {
      check(
        fetched !== undefined &&
          !fetched.isClosed &&
          (fetched.taskDir === undefined || existsSync(fetched.taskDir)),
        'G2',
        () => `${where} but the fetched state is ${fetched === undefined ? 'absent' : 'closed'}`,
      );
    }
    if (ownership.drainer !== undefined) {
      // The drainer's main reader holds a grant on the state for as long as the drainer is open.
      check(
        drainer !== undefined && fetched !== undefined && fetched.refCount >= 1,
        'G2',
        () => `${where} but no open drainer`,
      );
    }
    // Open ⇒ owned: a task dir on disk, or a fetched state not yet closed, has an owner.
    if (taskDirs.length > 0) {
      check(
        ownership.taskDir !== undefined || ownership.fetchedState !== undefined,
        'G2',
        () => `${where} but ${taskDirs.join(', ')} exists on disk with no owner`,
      );
    }
    if (fetched !== undefined && !fetched.isClosed) {
      check(
        ownership.fetchedState !== undefined,
        'G2',
        () => `${where} but the fetched state is open`,
      );
    }
    // The owner is a live actor (or the task itself).
    for (const [resource, owner] of Object.entries(ownership)) {
      if (owner === undefined || owner === 'task') continue;
      check(
        (snap.children as Record<string, unknown>)[owner] !== undefined,
        'G2',
        () => `${where}: ${resource} is owned by ${owner}, which is not a live actor`,
      );
    }
    // The registry backstop holds exactly the owned resources, besides the mailbox and executor:
    // no owned resource without a backstop, no stale entry for one that was already released.
    check(
      snap.context.ending.registry.size === 2 + owned.length,
      'G2',
      () => `${where} but the registry holds ${snap.context.ending.registry.size - 2} resources`,
    );
  }

  /** A checkpoint writer is still held on its output file (CHECKPOINT without CHECKPOINT.DONE). */
  private checkpointHeld(): boolean {
    const p = this.parks.get('checkpoint.write');
    return p !== undefined && p.entered && !p.gate.settled;
  }

  private releaseAll(): void {
    this.releasedAll = true;
    for (const p of this.parks.values()) if (!p.gate.settled) p.gate.resolve();
    this.blocker?.resolve();
  }

  /** G5 (and the model's outcome): `done` settled the way the ending event dictates. */
  private checkOutcome(outcome: ReplayResult): void {
    const expected = this.expected;
    check(expected !== undefined, 'model', () => 'the path has no ending event');
    if (expected.kind === 'report') {
      check(
        outcome.report !== undefined,
        'G5',
        () => `a finished task rejected with ${describe(outcome.error)}`,
      );
      const payload = this.options.fixture.payloadBytes;
      const mismatched = this.options.fixture.channels.filter((c) => {
        const log = this.channels.get(channelKey(c));
        return log === undefined || log.bytes !== c.bytes || log.finished !== 1;
      });
      check(
        outcome.report.bytesDelivered === payload && mismatched.length === 0,
        'G6',
        () =>
          `delivered ${outcome.report!.bytesDelivered} of ${payload} bytes; wrong channels: ` +
          mismatched.map((c) => channelKey(c)).join(', '),
      );
      return;
    }
    const error = outcome.error;
    check(
      error !== undefined,
      'G5',
      () => `the task ended by ${this.path.steps.at(-1)!.event} but done resolved`,
    );
    check(
      !(error instanceof AbortedError) && (error as NodeJS.ErrnoException).code !== 'ENOENT',
      'G5',
      () => `the cause is an abort consequence: ${describe(error)}`,
    );
    if (expected.kind === 'same') {
      check(
        error === expected.error,
        'G5',
        () => `expected ${describe(expected.error)}, got ${describe(error)}`,
      );
    } else {
      check(
        error instanceof expected.ctor,
        'G5',
        () => `expected a ${expected.ctor.name}, got ${describe(error)}`,
      );
    }
    check(!suppressedOf(error).includes(error), 'G5', () => 'the cause suppresses itself');
  }

  private checkSpillRootEmpty(listing: SpillListing, when: string): void {
    check(
      listing.taskDirs.length === 0 && listing.spillFiles.length === 0,
      'G1',
      () => `${when}: ${[...listing.taskDirs, ...listing.spillFiles].join(', ')}`,
    );
  }

  /** G2 once ended: nothing is owned any more, and the backstop has closed. */
  private checkFinalOwnership(): void {
    const snap = this.actor.getSnapshot();
    check(snap.context.ending.registry.isClosed, 'G2', () => 'the registry was never closed');
    if (snap.status === 'done') {
      check(
        Object.keys(snap.context.ownership).length === 0,
        'G2',
        () =>
          `ended in ${String(snap.value)} still owning ${JSON.stringify(snap.context.ownership)}`,
      );
    }
  }

  /**
   * Lets the stages that were still running when the task ended finish (they are never
   * interrupted), so G1 and G3 can be checked once more: nothing may appear late.
   */
  private async settleBackground(): Promise<void> {
    if (this.checkpoint !== undefined) {
      const { error } = await this.guard(this.checkpoint, 'the checkpoint after the ending');
      // A checkpoint that failed leaves no half-written file (row S4).
      check(
        error === undefined || !existsSync(this.outFile),
        'S4',
        () => `a failed checkpoint left ${this.outFile}`,
      );
    }
    await this.guard(this.services.executor.shutdown(), 'executor drain');
    await macrotasks(3);
  }

  async cleanup(): Promise<void> {
    this.releaseAll();
    seam.resetFsSeam();
    if (this.recovery !== undefined) {
      if (this.actor.getSnapshot().status === 'active') this.actor.stop();
      await withHangGuard(this.recovery.done, 'done (cleanup)', this.hangMs).catch(() => undefined);
    }
    if (this.spillRoot !== '') await removeSpillRoot(this.spillRoot);
    if (this.outDir !== '') await removeDir(this.outDir);
  }
}

function describe(error: unknown): string {
  if (error === undefined) return 'nothing';
  const e = error as Error & { code?: string };
  return `${e.name}${e.code ? ` ${e.code}` : ''}: ${e.message}`;
}
