/**
 * A task's {@link TaskHooks} (tests, the demo's fault injection), applied from outside the
 * stages. The stages call no hook: they reach the task's mailbox and channel-IO executor, and
 * each hook runs where a stage reaches them, through a wrapped mailbox and executor that only
 * a task started with hooks gets (`withHooks`). A task without hooks runs on the plain ones.
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
    if (name === 'requestPartitions' && hooks.beforeStage !== undefined) {
      const before = hooks.beforeStage('gap', this.services());
      return after(before, () => super.execute(name, mail));
    }
    if (name === 'buildDrainer' && (hooks.afterDrainerBuilt ?? hooks.beforeDrain) !== undefined) {
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
    if ((name !== 'fetch' && name !== 'drain') || beforeStage === undefined) {
      return super.submit(name, job);
    }
    return after(beforeStage(name, this.services()), () => super.submit(name, job));
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
