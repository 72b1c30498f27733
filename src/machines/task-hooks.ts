/**
 * A task's {@link TaskHooks} (tests, the demo's fault injection), applied from outside the
 * stages. The stages call no hook: they reach the task's mailbox and channel-IO executor, and
 * each hook runs where a stage reaches them, through a wrapped mailbox and executor that only
 * a task started with hooks gets (`withHooks`). A task without hooks runs on the plain ones.
 *
 * Each hook is attached by the id of the actor whose mail or job it wraps ({@link HOOK_TARGETS},
 * from actor-ids.ts, the constants the machines invoke those actors under and name their work
 * after); {@link checkHookTargets} fails loudly when a target names no actor of the machine.
 *
 * Where each hook runs, and why that is the same point as inside the stage:
 * - `beforeStage('fetch' | 'drain')`: as the stage submits its job (`fetch`, `drain`) to the
 *   executor, before it is queued. A throw fails the submit, so the stage fails with it.
 * - `beforeStage('gap')`: as the gap posts its first mail (`requestPartitions`), before it is
 *   queued.
 * - `afterDrainerBuilt(drainer)`: inside the `buildDrainer` mail, after its body (the drainer
 *   exists and is already the task's: DRAINER.READY was sent), so a throw fails that mail with
 *   the main reader open (row GAP4).
 * - `beforeDrain(drainer)`: inside the drain job, right before the drain starts (after the
 *   hand-off grant was released): the drainer's own `drain` is wrapped when it is built.
 */
import { Mailbox } from '../services/mailbox.ts';
import { SerialExecutor } from '../services/executor.ts';
import type { Drainer } from '../services/spill/drainer.ts';
import type { TaskHooks, TaskServices } from './task-services.ts';
import { ACTOR_IDS } from './actor-ids.ts';
import { InternalError } from '../services/errors.ts';

/**
 * Where the hooks attach, each as the path of actor ids from the task machine to the actor whose
 * mail (gap) or executor job (fetch, drain) it wraps; the mail or job has the actor's id as name.
 */
export const HOOK_TARGETS = {
  /** `beforeStage('fetch')`: the fetch stage's job. */
  fetch: [ACTOR_IDS.fetch],
  /** `beforeStage('gap')`: the gap's first mail. */
  gap: [ACTOR_IDS.gap, ACTOR_IDS.requestPartitions],
  /** `afterDrainerBuilt`, `beforeDrain` (wrapped as the drainer is built): the drainer's mail. */
  drainerBuilt: [ACTOR_IDS.gap, ACTOR_IDS.buildDrainer],
  /** `beforeStage('drain')`: the drain stage's job. */
  drain: [ACTOR_IDS.drain],
} as const satisfies Record<string, readonly string[]>;

/** The part of an XState machine definition this check reads (ids of invoked actors). */
interface MachineShape {
  readonly root: StateNodeShape;
  readonly implementations: { readonly actors: Record<string, unknown> };
}
interface StateNodeShape {
  readonly invoke: readonly { readonly id: string; readonly src: unknown }[];
  readonly states: Record<string, StateNodeShape>;
}

/**
 * Throws unless every target (a path of actor ids from `machine`) names an actor the machine
 * invokes: a hook attached to an actor that was renamed or removed would otherwise never run,
 * and the test relying on it would pass without testing anything.
 *
 * @example
 * ```ts
 * checkHookTargets(taskMachine); // the product's targets: fine
 * checkHookTargets(taskMachine, { typo: ['gap', 'requestPartition'] }); // throws
 * ```
 */
export function checkHookTargets(
  machine: MachineShape,
  targets: Record<string, readonly string[]> = HOOK_TARGETS,
): void {
  for (const [hook, path] of Object.entries(targets)) {
    let current: MachineShape | undefined = machine;
    for (const id of path) {
      const invoked: { id: string; src: unknown } | undefined =
        current === undefined ? undefined : findInvoke(current.root, id);
      if (invoked === undefined || current === undefined) {
        throw new InternalError(
          `task hook '${hook}' is attached to actor '${path.join('.')}', which the task machine does not invoke`,
        );
      }
      const src: unknown =
        typeof invoked.src === 'string' ? current.implementations.actors[invoked.src] : invoked.src;
      current = isMachine(src) ? src : undefined;
    }
  }
}

function findInvoke(node: StateNodeShape, id: string): { id: string; src: unknown } | undefined {
  const here = node.invoke.find((i) => i.id === id);
  if (here !== undefined) return here;
  for (const child of Object.values(node.states)) {
    const found = findInvoke(child, id);
    if (found !== undefined) return found;
  }
  return undefined;
}

function isMachine(logic: unknown): logic is MachineShape {
  return (
    typeof logic === 'object' && logic !== null && 'root' in logic && 'implementations' in logic
  );
}

const last = (path: readonly string[]): string => path[path.length - 1]!;

/**
 * `services` with `hooks` applied: the same inputs on a mailbox and an executor that run the
 * hooks; the hooks are handed these services (so a test can quiesce the very mailbox the
 * stages use).
 *
 * @example
 * ```ts
 * const services = withHooks(plain, { beforeStage: (stage, s) => stage === 'gap' && s.mailbox.quiesce() });
 * ```
 */
export function withHooks(services: TaskServices, hooks: TaskHooks): TaskServices {
  const hooked: TaskServices = {
    ...services,
    mailbox: new HookedMailbox(hooks, () => hooked),
    executor: new HookedExecutor(services.executor.name, hooks, () => hooked),
  };
  return hooked;
}

/** Runs `before` (awaited when it returned a promise), then `then`. */
function after<T>(before: void | Promise<void>, then: () => Promise<T>): Promise<T> {
  return before instanceof Promise ? before.then(then) : Promise.resolve().then(then);
}

class HookedMailbox extends Mailbox {
  constructor(
    private readonly hooks: TaskHooks,
    private readonly services: () => TaskServices,
  ) {
    super();
  }

  override execute<T>(name: string, mail: () => T | Promise<T>): Promise<T> {
    const { hooks } = this;
    if (name === last(HOOK_TARGETS.gap) && hooks.beforeStage !== undefined) {
      const before = hooks.beforeStage('gap', this.services());
      return after(before, () => super.execute(name, mail));
    }
    if (
      name === last(HOOK_TARGETS.drainerBuilt) &&
      (hooks.afterDrainerBuilt ?? hooks.beforeDrain) !== undefined
    ) {
      return super.execute(name, () => {
        // The gap's buildDrainer mail returns the drainer it built.
        const drainer = mail() as Drainer;
        if (hooks.beforeDrain !== undefined) wrapDrain(drainer, hooks.beforeDrain);
        hooks.afterDrainerBuilt?.(drainer);
        return drainer as T;
      });
    }
    return super.execute(name, mail);
  }
}

class HookedExecutor extends SerialExecutor {
  constructor(
    name: string,
    private readonly hooks: TaskHooks,
    private readonly services: () => TaskServices,
  ) {
    super(name);
  }

  override submit<T>(name: string, job: () => Promise<T> | T): Promise<T> {
    const { beforeStage } = this.hooks;
    const stage =
      name === last(HOOK_TARGETS.fetch)
        ? 'fetch'
        : name === last(HOOK_TARGETS.drain)
          ? 'drain'
          : undefined;
    if (stage === undefined || beforeStage === undefined) return super.submit(name, job);
    return after(beforeStage(stage, this.services()), () => super.submit(name, job));
  }
}

/** `beforeDrain` runs as the drain job calls `drainer.drain()`, before the drain starts. */
function wrapDrain(drainer: Drainer, beforeDrain: NonNullable<TaskHooks['beforeDrain']>): void {
  const drain = drainer.drain.bind(drainer);
  drainer.drain = async () => {
    await beforeDrain(drainer);
    return drain();
  };
}
