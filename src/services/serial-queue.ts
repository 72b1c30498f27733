/**
 * What the channel-IO executor and the task mailbox share: a FIFO of named runs, one at a time,
 * each settling its own promise. Each owner decides when to refuse a run (its own state and
 * wording) and what to do with the runs still queued (the mailbox drops them, the executor
 * waits for them).
 */

interface Run {
  readonly name: string;
  readonly run: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
}

/**
 * Runs queued functions serially, in order; each result or failure settles its own promise.
 *
 * @example
 * ```ts
 * const queue = new SerialQueue(() => console.log('idle'));
 * const one = queue.enqueue('one', () => 1); // starts in a microtask, not inside enqueue()
 * ```
 */
export class SerialQueue {
  private readonly queue: Run[] = [];
  private running = false;

  /** `onIdle` is called each time the queue has run dry. */
  constructor(private readonly onIdle: () => void = () => {}) {}

  /** Runs queued and not yet started (the running one is not counted). */
  get pending(): number {
    return this.queue.length;
  }

  /** Nothing queued and nothing running. */
  get idle(): boolean {
    return !this.running && this.queue.length === 0;
  }

  /** Queues `run`; it starts asynchronously after every earlier run has settled. */
  enqueue<T>(name: string, run: () => T | Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ name, run, resolve: resolve as (value: unknown) => void, reject });
      if (!this.running) {
        this.running = true;
        // Never run inside enqueue(): like a thread pool, the caller keeps going first and can
        // finish its own step (register a state, say) before any run observes it.
        queueMicrotask(() => void this.pump());
      }
    });
  }

  /** Removes every run not yet started and returns their names; their promises never settle. */
  drop(): string[] {
    return this.queue.splice(0).map((r) => r.name);
  }

  private async pump(): Promise<void> {
    // Runs are taken from the queue only when they start, so drop() can still remove one that
    // was queued while the previous one ran.
    for (let next = this.queue.shift(); next !== undefined; next = this.queue.shift()) {
      try {
        next.resolve(await next.run());
      } catch (e) {
        next.reject(e);
      }
    }
    this.running = false;
    this.onIdle();
  }
}
