/**
 * The task mailbox (Flink `TaskMailbox` + `MailboxExecutor`, §7.5): the single consumer that
 * runs the steps between fetch and drain. Its close is deliberately faithful to Flink: queued
 * mails are dropped and their promises never settle (row GAP3), which is why the fetched state
 * must be registered with the registry backstop before the first mail is posted.
 */
import { RejectedError } from './errors.ts';
import { SerialQueue } from './serial-queue.ts';

/** `open`: put and take. `quiesced`: take only. `closed`: nothing. */
export type MailboxState = 'open' | 'quiesced' | 'closed';

/**
 * A single-consumer FIFO of named mails; one mail runs at a time.
 *
 * @example
 * ```ts
 * const mailbox = new Mailbox();
 * const gap = mailbox.execute('gap', () => requestPartitions());
 * mailbox.quiesce(); // queued mails still run, new ones are rejected (row GAP2)
 * const { names } = mailbox.close(); // still-queued mails are dropped, never settle (row GAP3)
 * ```
 */
export class Mailbox {
  private current: MailboxState = 'open';
  private readonly queue = new SerialQueue();

  get state(): MailboxState {
    return this.current;
  }

  /** Mails queued and not yet started (the running mail is not counted). */
  get pending(): number {
    return this.queue.pending;
  }

  /**
   * Queues `mail`; it starts asynchronously, after every earlier mail has settled. The returned
   * promise settles with the mail's result, or rejects with {@link RejectedError} (row GAP2) if
   * the mailbox is not open. If the mailbox is closed before the mail starts, it never settles.
   */
  execute<T>(name: string, mail: () => T | Promise<T>): Promise<T> {
    if (this.current !== 'open') {
      return Promise.reject(
        new RejectedError(`mail '${name}' rejected: mailbox is ${this.current}`),
      );
    }
    // Never run inside execute(): the caller must be able to finish its own step (e.g.
    // register a state) before any mail observes it.
    return this.queue.enqueue(name, mail);
  }

  /** Moves `open` → `quiesced` (Flink `prepareClose()`); any other state is left alone. */
  quiesce(): void {
    if (this.current === 'open') this.current = 'quiesced';
  }

  /**
   * Closes the mailbox once: drops every queued mail (their promises never settle, as in Flink
   * where `execute`d mails are silently discarded) and returns what was dropped. A running mail
   * keeps running to its end. Later calls drop nothing.
   */
  close(): { dropped: number; names: string[] } {
    if (this.current === 'closed') return { dropped: 0, names: [] };
    this.current = 'closed';
    const names = this.queue.drop();
    return { dropped: names.length, names };
  }
}
