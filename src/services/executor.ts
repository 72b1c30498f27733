/**
 * The channel-IO executor (Flink's single-thread `channelIOExecutor`, §7.4): fetch and drain
 * run here, one job at a time, and are never interrupted — cancellation reaches them only
 * through the shared abort flag (F4, D3), never by cutting a job short.
 */
import { RejectedError } from './errors.ts';

interface Job {
  readonly name: string;
  readonly run: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
}

/**
 * Runs submitted jobs serially in FIFO order; `shutdown()` is graceful.
 *
 * @example
 * ```ts
 * const io = new SerialExecutor('channel-io');
 * const fetched = io.submit('fetch', () => fetchChannelState());
 * await io.shutdown(); // waits for 'fetch'; later submits reject (row D1)
 * ```
 */
export class SerialExecutor {
  private readonly queue: Job[] = [];
  private running = false;
  private stopping: Promise<void> | undefined;
  private markDrained: () => void = () => {};

  constructor(readonly name: string) {}

  /** True from the first `shutdown()` call on. */
  get isShutdown(): boolean {
    return this.stopping !== undefined;
  }

  /** Nothing queued and nothing running. */
  get idle(): boolean {
    return !this.running && this.queue.length === 0;
  }

  /**
   * Queues `job`; it starts asynchronously after every earlier job has settled and its result
   * settles the returned promise. After {@link shutdown} the promise rejects with
   * {@link RejectedError} and the job never runs (row D1).
   */
  submit<T>(name: string, job: () => Promise<T> | T): Promise<T> {
    if (this.stopping !== undefined) {
      return Promise.reject(
        new RejectedError(`job '${name}' rejected: executor '${this.name}' is shut down`),
      );
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ name, run: job, resolve: resolve as (value: unknown) => void, reject });
      if (!this.running) {
        this.running = true;
        // Never run inside submit(): like a thread pool, the submitter keeps going first.
        queueMicrotask(() => void this.pump());
      }
    });
  }

  /**
   * Stops accepting jobs and resolves once every queued and running job has finished. Job
   * failures belong to their own promises, so shutdown never rejects. Every call returns the
   * same promise.
   */
  shutdown(): Promise<void> {
    if (this.stopping !== undefined) return this.stopping;
    this.stopping = this.idle
      ? Promise.resolve()
      : new Promise<void>((resolve) => (this.markDrained = resolve));
    return this.stopping;
  }

  private async pump(): Promise<void> {
    for (let job = this.queue.shift(); job !== undefined; job = this.queue.shift()) {
      try {
        job.resolve(await job.run());
      } catch (e) {
        job.reject(e);
      }
    }
    this.running = false;
    // No-op unless shutdown() is waiting; nothing can be queued after shutdown, so this is final.
    if (this.stopping !== undefined) this.markDrained();
  }
}
