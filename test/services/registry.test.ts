import { describe, expect, it } from 'vitest';
import { RegistryClosedError, suppressedOf } from '../../src/services/errors.ts';
import { CloseableRegistry, type Closeable } from '../../src/services/registry.ts';
import { deferred, macrotasks } from '../helpers/async.ts';

/** A closeable that logs `name` when its close starts and then behaves as `behaviour` says. */
function entry(
  log: string[],
  name: string,
  behaviour: 'ok' | 'throw' | 'reject' | 'async' = 'ok',
): Closeable {
  return {
    close() {
      log.push(name);
      if (behaviour === 'throw') throw new Error(`${name} failed`);
      if (behaviour === 'reject') return Promise.reject(new Error(`${name} failed`));
      if (behaviour === 'async') return macrotasks(1).then(() => void log.push(`${name} done`));
    },
  };
}

describe('CloseableRegistry', () => {
  it('C3 closes every entry in reverse order; first error primary, rest suppressed', async () => {
    const log: string[] = [];
    const registry = new CloseableRegistry();
    registry.register(entry(log, 'a', 'reject'));
    registry.register(entry(log, 'b'));
    registry.register(entry(log, 'c', 'throw'));
    registry.register(entry(log, 'd'));

    const error = await registry.close().then(
      () => undefined,
      (e: unknown) => e as Error,
    );

    expect(log).toEqual(['d', 'c', 'b', 'a']);
    expect(error?.message).toBe('c failed');
    expect(suppressedOf(error).map((e) => e.message)).toEqual(['a failed']);
  });

  it('C3 async closes run one after another in reverse order and async errors are collected', async () => {
    const log: string[] = [];
    const registry = new CloseableRegistry();
    registry.register(entry(log, 'a', 'async'));
    registry.register(entry(log, 'b', 'reject'));
    registry.register(entry(log, 'c', 'async'));

    await expect(registry.close()).rejects.toThrow('b failed');
    expect(log).toEqual(['c', 'c done', 'b', 'a', 'a done']);
  });

  it('close is idempotent: later calls return the same promise and close nothing again', async () => {
    const log: string[] = [];
    const registry = new CloseableRegistry();
    registry.register(entry(log, 'a'));
    expect(registry.isClosed).toBe(false);

    const first = registry.close();
    expect(registry.isClosed).toBe(true);
    expect(registry.size).toBe(0);
    expect(registry.close()).toBe(first);
    await first;
    expect(registry.close()).toBe(first);
    expect(log).toEqual(['a']);
  });

  it('close rejects with the same error on every call', async () => {
    const registry = new CloseableRegistry();
    registry.register(entry([], 'a', 'throw'));
    const first = registry.close();
    await expect(first).rejects.toThrow('a failed');
    await expect(registry.close()).rejects.toThrow('a failed');
  });

  it('unregister returns true iff registered, and the entry is then not closed', async () => {
    const log: string[] = [];
    const registry = new CloseableRegistry();
    const a = entry(log, 'a');
    const b = entry(log, 'b');
    registry.register(a);
    registry.register(b);

    expect(registry.unregister(a)).toBe(true);
    expect(registry.unregister(a)).toBe(false);
    expect(registry.unregister(entry(log, 'never'))).toBe(false);
    expect(registry.size).toBe(1);

    await registry.close();
    expect(log).toEqual(['b']);
    expect(registry.unregister(b)).toBe(false);
  });

  it('registering the same object twice keeps one entry at its first position', async () => {
    const log: string[] = [];
    const registry = new CloseableRegistry();
    const a = entry(log, 'a');
    registry.register(a);
    registry.register(entry(log, 'b'));
    registry.register(a);
    expect(registry.size).toBe(2);

    await registry.close();
    expect(log).toEqual(['b', 'a']);
  });

  it('F5 register after close closes the argument and throws', async () => {
    const log: string[] = [];
    const registry = new CloseableRegistry();
    await registry.close();

    expect(() => registry.register(entry(log, 'late'))).toThrow(RegistryClosedError);
    expect(() => registry.register(entry(log, 'late2'))).toThrow(
      'registry already closed; closed the argument instead',
    );
    expect(log).toEqual(['late', 'late2']);
    expect(registry.size).toBe(0);
  });

  it('F5 register while close is running takes the late path too', async () => {
    const log: string[] = [];
    const gate = deferred();
    const registry = new CloseableRegistry();
    registry.register({ close: () => gate.promise });

    const closing = registry.close();
    expect(() => registry.register(entry(log, 'late'))).toThrow(RegistryClosedError);
    expect(log).toEqual(['late']);
    gate.resolve();
    await closing;
    expect(registry.size).toBe(0);
  });

  it('F5 late close errors are swallowed, sync or async', async () => {
    const registry = new CloseableRegistry();
    await registry.close();
    expect(() => registry.register(entry([], 'sync', 'throw'))).toThrow(RegistryClosedError);
    expect(() => registry.register(entry([], 'async', 'reject'))).toThrow(RegistryClosedError);
    await expect(registry.settled()).resolves.toBeUndefined();
  });

  it('settled waits for close and for every late close, and never rejects', async () => {
    const registry = new CloseableRegistry();
    registry.register(entry([], 'a', 'throw'));
    let settled = false;
    const settling = registry.settled().then(() => (settled = true));

    await macrotasks();
    expect(settled).toBe(false); // close() not called yet

    const late = deferred();
    await registry.close().catch(() => undefined);
    expect(() => registry.register({ close: () => late.promise })).toThrow(RegistryClosedError);
    await macrotasks();
    expect(settled).toBe(false); // the late argument is still closing

    late.reject(new Error('late close failed'));
    await settling;
    expect(settled).toBe(true);
  });

  it('settled also waits for a late close registered while it was already waiting', async () => {
    const registry = new CloseableRegistry();
    await registry.close();
    const first = deferred();
    const second = deferred();
    expect(() => registry.register({ close: () => first.promise })).toThrow(RegistryClosedError);
    let settled = false;
    const settling = registry.settled().then(() => (settled = true));

    expect(() => registry.register({ close: () => second.promise })).toThrow(RegistryClosedError);
    first.resolve();
    await macrotasks();
    expect(settled).toBe(false);

    second.resolve();
    await settling;
    expect(settled).toBe(true);
  });
});
