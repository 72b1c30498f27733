/**
 * The channel-IO executor (Flink's single-thread `channelIOExecutor`, §7.4): fetch and drain
 * run here, one job at a time, and are never interrupted — cancellation reaches them only
 * through the shared abort flag (F4, D3), never by cutting a job short.
 */
import { RejectedError } from './errors.ts';
import { SerialQueue } from './serial-queue.ts';

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
  // No-op unless shutdown() is waiting; nothing can be queued after shutdown, so this is final.
  private readonly queue = new SerialQueue(() => {
    if (this.stopping !== undefined) this.markDrained();
  });
  private stopping: Promise<void> | undefined;
  private markDrained: () => void = () => {};

  constructor(readonly name: string) {}

  /** True from the first `shutdown()` call on. */
  get isShutdown(): boolean {
    return this.stopping !== undefined;
  }

  /** Nothing queued and nothing running. */
  get idle(): boolean {
    return this.queue.idle;
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
    return this.queue.enqueue(name, job);
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
}
