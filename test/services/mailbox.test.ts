import { describe, expect, it } from 'vitest';
import { RejectedError } from '../../src/services/errors.ts';
import { Mailbox } from '../../src/services/mailbox.ts';
import { deferred, macrotasks } from '../helpers/async.ts';

describe('Mailbox', () => {
  it('mails start asynchronously, never inside execute', async () => {
    const log: string[] = [];
    const mailbox = new Mailbox();
    const done = mailbox.execute('a', () => void log.push('a'));
    log.push('after execute');
    await done;
    expect(log).toEqual(['after execute', 'a']);
  });

  it('runs mails one at a time in FIFO order; the next starts after the previous settled', async () => {
    const log: string[] = [];
    const gate = deferred();
    const mailbox = new Mailbox();
    const a = mailbox.execute('a', async () => {
      log.push('a start');
      await gate.promise;
      log.push('a end');
    });
    const b = mailbox.execute('b', () => void log.push('b'));
    const c = mailbox.execute('c', async () => void log.push('c'));

    await macrotasks();
    expect(log).toEqual(['a start']);
    expect(mailbox.pending).toBe(2);

    gate.resolve();
    await Promise.all([a, b, c]);
    expect(log).toEqual(['a start', 'a end', 'b', 'c']);
    expect(mailbox.pending).toBe(0);
  });

  it("a mail's result or failure settles its own promise and the next mail still runs", async () => {
    const mailbox = new Mailbox();
    const failure = new Error('boom');
    const ok = mailbox.execute('ok', () => 42);
    const syncThrow = mailbox.execute('sync', () => {
      throw failure;
    });
    const asyncReject = mailbox.execute('async', () => Promise.reject(failure));
    const after = mailbox.execute('after', async () => 'still runs');

    await expect(ok).resolves.toBe(42);
    await expect(syncThrow).rejects.toBe(failure);
    await expect(asyncReject).rejects.toBe(failure);
    await expect(after).resolves.toBe('still runs');
  });

  it('G2 put after quiesce rejects with RejectedError; queued mails still run', async () => {
    const log: string[] = [];
    const mailbox = new Mailbox();
    const queued = mailbox.execute('queued', () => void log.push('queued'));
    mailbox.quiesce();
    expect(mailbox.state).toBe('quiesced');

    const rejected = mailbox.execute('gap', () => void log.push('gap'));
    await expect(rejected).rejects.toBeInstanceOf(RejectedError);
    await expect(rejected).rejects.toThrow(/gap.*quiesced/);
    await queued;
    await macrotasks();
    expect(log).toEqual(['queued']);
  });

  it('G2 put after close rejects with RejectedError naming the mail and the state', async () => {
    const mailbox = new Mailbox();
    mailbox.close();
    const rejected = mailbox.execute('trigger-install', () => 1);
    await expect(rejected).rejects.toBeInstanceOf(RejectedError);
    await expect(rejected).rejects.toThrow(/trigger-install.*closed/);
  });

  it('G3 close drops queued mails whose promises never settle', async () => {
    const log: string[] = [];
    const gate = deferred();
    const mailbox = new Mailbox();
    const running = mailbox.execute('running', async () => {
      log.push('running start');
      await gate.promise;
      log.push('running end');
      return 'finished';
    });
    let settledDropped = 0;
    const onSettle = () => void settledDropped++;
    mailbox.execute('gap', () => void log.push('gap')).then(onSettle, onSettle);
    mailbox.execute('trigger', () => void log.push('trigger')).then(onSettle, onSettle);
    await macrotasks();

    expect(mailbox.close()).toEqual({ dropped: 2, names: ['gap', 'trigger'] });
    expect(mailbox.state).toBe('closed');
    expect(mailbox.pending).toBe(0);

    // The running mail is not interrupted and its promise still settles.
    gate.resolve();
    await expect(running).resolves.toBe('finished');
    await macrotasks();
    expect(settledDropped).toBe(0);
    expect(log).toEqual(['running start', 'running end']);
  });

  it('G3 close before a queued mail started drops it even though it was already scheduled', async () => {
    const log: string[] = [];
    const mailbox = new Mailbox();
    let settled = false;
    mailbox.execute('gap', () => void log.push('gap')).finally(() => (settled = true));
    expect(mailbox.close()).toEqual({ dropped: 1, names: ['gap'] });
    await macrotasks();
    expect(log).toEqual([]);
    expect(settled).toBe(false);
  });

  it('close happens once; later calls drop nothing', () => {
    const mailbox = new Mailbox();
    void mailbox.execute('a', () => 1);
    expect(mailbox.close()).toEqual({ dropped: 1, names: ['a'] });
    expect(mailbox.close()).toEqual({ dropped: 0, names: [] });
  });

  it('quiesce only moves open to quiesced', () => {
    const mailbox = new Mailbox();
    expect(mailbox.state).toBe('open');
    mailbox.quiesce();
    mailbox.quiesce();
    expect(mailbox.state).toBe('quiesced');
    expect(mailbox.close()).toEqual({ dropped: 0, names: [] });
    mailbox.quiesce();
    expect(mailbox.state).toBe('closed');
  });

  it('mails queued after the queue ran empty still run', async () => {
    const log: string[] = [];
    const mailbox = new Mailbox();
    await mailbox.execute('a', () => void log.push('a'));
    await macrotasks();
    await mailbox.execute('b', () => void log.push('b'));
    expect(log).toEqual(['a', 'b']);
  });
});
