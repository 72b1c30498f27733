import { describe, expect, it } from 'vitest';
import { TaskEnding } from '../../src/services/task-ending.ts';
import {
  CancelledError,
  ConsumerError,
  InternalError,
  suppressedOf,
} from '../../src/services/errors.ts';

const finished = { status: 'done', value: 'finished', error: undefined, cause: undefined } as const;

/** A resource whose close fails with `error`. */
const failing = (error: Error) => ({
  close: () => {
    throw error;
  },
});

function services(log: string[]) {
  return {
    mailbox: { close: () => void log.push('mailbox') },
    executor: { shutdown: async () => void log.push('executor') },
  };
}

describe('task ending', () => {
  it('G1 closes what the task owns first, then the executor, then the mailbox (Flink order), once', async () => {
    const log: string[] = [];
    const ending = new TaskEnding(services(log));
    ending.own('taskDir', { close: () => void log.push('taskDir') });
    ending.own('drainer', { close: () => void log.push('drainer') });
    ending.own('released', { close: () => void log.push('released') });
    ending.disown('released');
    const first = ending.close();
    expect(ending.close()).toBe(first);
    await first;
    expect(log).toEqual(['drainer', 'taskDir', 'executor', 'mailbox']);
    expect(ending.outcome(finished)).toBeUndefined();
  });

  it('F5 a resource handed over after the close began is closed, and the close waits for it', async () => {
    const log: string[] = [];
    const ending = new TaskEnding();
    const closing = ending.close();
    ending.own('late', { close: async () => void log.push('late') });
    await closing;
    expect(log).toEqual(['late']);
  });

  it('G5 C1 a failed close is the failure of a task that otherwise finished, later ones suppressed', async () => {
    const ending = new TaskEnding();
    const released = new Error('release failed');
    const closeFailed = new Error('close failed');
    ending.cleanupFailed(released);
    ending.own('taskDir', failing(closeFailed));
    await ending.close();
    const error = ending.outcome(finished);
    expect(error).toBe(released);
    expect(suppressedOf(error)).toEqual([closeFailed]);
  });

  it('G5 under a real cause: late stage errors, then cleanup errors (with theirs) are suppressed, in order', async () => {
    const ending = new TaskEnding();
    const cause = new Error('stage failed');
    const late = new Error('late');
    const first = new Error('first close');
    const second = new Error('second close');
    ending.lateError(late);
    ending.own('a', failing(second));
    ending.own('b', failing(first));
    await ending.close();
    const error = ending.outcome({ status: 'done', value: 'failed', error: undefined, cause });
    expect(error).toBe(cause);
    expect(suppressedOf(error)).toEqual([late, first, second]);
  });

  it('G5 a stopped task with no cause ends with a CancelledError; a thrown machine error is the cause', async () => {
    const ending = new TaskEnding();
    await ending.close();
    const stopped = ending.outcome({
      status: 'stopped',
      value: {},
      error: undefined,
      cause: undefined,
    });
    expect(stopped).toBeInstanceOf(CancelledError);
    expect(stopped?.message).toBe('task actor stopped');
    const thrown = new Error('action threw');
    expect(ending.outcome({ status: 'error', value: {}, error: thrown, cause: undefined })).toBe(
      thrown,
    );
  });

  it('G1 what the task holds for its caller closes after the mailbox, and a late one is awaited', async () => {
    const log: string[] = [];
    const ending = new TaskEnding(services(log));
    ending.ownForCaller('stream', { close: () => void log.push('stream') });
    ending.own('drainer', { close: () => void log.push('drainer') });
    ending.ownForCaller('remainder', { close: async () => void log.push('remainder') });
    await ending.close();
    ending.ownForCaller('late', { close: () => void log.push('late') });
    await ending.close();
    expect(log).toEqual(['drainer', 'executor', 'mailbox', 'remainder', 'stream', 'late']);
  });

  it("G5 a caller's holding that fails to close fails a finished task; failure() wraps as ours", async () => {
    const ending = new TaskEnding();
    const rmFailed = new Error('rm failed');
    ending.ownForCaller('remainder', failing(rmFailed));
    await ending.close();
    expect(ending.outcome(finished)).toBe(rmFailed);
    const wrapped = ending.failure(finished);
    expect(wrapped).toBeInstanceOf(InternalError);
    expect(wrapped?.cause).toBe(rmFailed);
  });

  it("G5 an error the caller's code threw leaves as a ConsumerError whose cause it is", async () => {
    const ending = new TaskEnding();
    const thrown = new Error('consumer broke');
    ending.callerThrew(thrown);
    await ending.close();
    const error = ending.failure({
      status: 'done',
      value: 'failed',
      error: undefined,
      cause: thrown,
    });
    expect(error).toBeInstanceOf(ConsumerError);
    expect(error?.cause).toBe(thrown);
    expect(ending.failure(finished)).toBeUndefined();
  });
});
