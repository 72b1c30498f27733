import { describe, expect, it } from 'vitest';
import { RejectedError } from '../../src/services/errors.ts';
import { SerialExecutor } from '../../src/services/executor.ts';
import { deferred, macrotasks } from '../helpers/async.ts';

describe('SerialExecutor', () => {
  it('jobs start asynchronously, never inside submit', async () => {
    const log: string[] = [];
    const io = new SerialExecutor('channel-io');
    const done = io.submit('fetch', () => void log.push('fetch'));
    log.push('after submit');
    expect(io.idle).toBe(false);
    await done;
    expect(log).toEqual(['after submit', 'fetch']);
  });

  it('runs jobs serially in FIFO order; the next starts after the previous settled', async () => {
    const log: string[] = [];
    const gate = deferred();
    const io = new SerialExecutor('channel-io');
    const a = io.submit('a', async () => {
      log.push('a start');
      await gate.promise;
      log.push('a end');
      return 'a';
    });
    const b = io.submit('b', () => {
      log.push('b');
      return 'b';
    });

    await macrotasks();
    expect(log).toEqual(['a start']);
    gate.resolve();
    expect(await Promise.all([a, b])).toEqual(['a', 'b']);
    expect(log).toEqual(['a start', 'a end', 'b']);
    await macrotasks();
    expect(io.idle).toBe(true);
  });

  it('a failing job rejects its own promise and the next job still runs', async () => {
    const io = new SerialExecutor('channel-io');
    const failure = new Error('EOF');
    const drain = io.submit('drain', () => Promise.reject(failure));
    const sync = io.submit('sync', () => {
      throw failure;
    });
    const next = io.submit('next', () => 7);
    await expect(drain).rejects.toBe(failure);
    await expect(sync).rejects.toBe(failure);
    await expect(next).resolves.toBe(7);
  });

  it('D1 submit after shutdown rejects and the job never runs', async () => {
    const log: string[] = [];
    const io = new SerialExecutor('channel-io');
    await io.shutdown();
    expect(io.isShutdown).toBe(true);

    const rejected = io.submit('drain', () => void log.push('drain'));
    await expect(rejected).rejects.toBeInstanceOf(RejectedError);
    await expect(rejected).rejects.toThrow(/drain.*channel-io/);
    await macrotasks();
    expect(log).toEqual([]);
    expect(io.idle).toBe(true);
  });

  it('shutdown waits for queued and running jobs, never interrupts', async () => {
    const log: string[] = [];
    const gate = deferred();
    const io = new SerialExecutor('channel-io');
    void io.submit('fetch', async () => {
      log.push('fetch start');
      await gate.promise;
      log.push('fetch end');
    });
    const drain = io.submit('drain', () => {
      log.push('drain');
      throw new Error('drain failed');
    });
    drain.catch(() => undefined);
    await macrotasks();

    let shutDown = false;
    const stopping = io.shutdown().then(() => (shutDown = true));
    await expect(io.submit('late', () => void log.push('late'))).rejects.toBeInstanceOf(
      RejectedError,
    );
    await macrotasks();
    expect(shutDown).toBe(false);
    expect(log).toEqual(['fetch start']);

    gate.resolve();
    await stopping; // resolves although 'drain' failed
    expect(log).toEqual(['fetch start', 'fetch end', 'drain']);
    expect(io.idle).toBe(true);
  });

  it('shutdown is idempotent and resolves at once when idle', async () => {
    const io = new SerialExecutor('channel-io');
    expect(io.isShutdown).toBe(false);
    const first = io.shutdown();
    expect(io.shutdown()).toBe(first);
    await expect(first).resolves.toBeUndefined();
    expect(io.shutdown()).toBe(first);
  });

  it('shutdown right after submit still lets the not-yet-started job run', async () => {
    const log: string[] = [];
    const io = new SerialExecutor('channel-io');
    const job = io.submit('fetch', () => void log.push('fetch'));
    await io.shutdown();
    await job;
    expect(log).toEqual(['fetch']);
  });
});
