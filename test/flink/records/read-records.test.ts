/**
 * `readFlinkRecords` as a library: the `decode` hook reads values Spillway has no type for
 * (it gets a copy of the value's bytes); an aborted signal ends the iteration with a
 * CancelledError whose cause is the signal's reason; breaking out of the loop stops the read
 * (the iterator is done, nothing rejects later); a bad `type` throws before anything is read.
 */
import { describe, expect, it } from 'vitest';
import {
  CancelledError,
  readFlinkRecords,
  TypeSpecError,
  type FlinkElement,
} from '../../../src/index.ts';
import { listFlinkFixtures } from '../../helpers/flink-expected.ts';

const f = listFlinkFixtures().find((x) => x.name === '2.3.0-file')!;
const base = { checkpoint: f.checkpoint, operator: 'slow-join', subtask: 0 };

describe('readFlinkRecords (library)', () => {
  it('a decode hook gets each record value’s bytes, as a copy, and its result is the value', async () => {
    const seen: Uint8Array[] = [];
    const values: unknown[] = [];
    for await (const e of readFlinkRecords({
      ...base,
      decode: (bytes) => {
        seen.push(bytes);
        // Tuple2<Long, String>: the Long, as the user's own code would read it.
        return Buffer.from(bytes).readBigInt64BE(0);
      },
    })) {
      if (e.kind === 'record') values.push(e.value);
    }
    expect(values.length).toBeGreaterThan(100);
    expect(values.every((v) => typeof v === 'bigint')).toBe(true);
    // Copies: no two share a buffer (the read's chunks are reused).
    expect(new Set(seen.map((b) => b.buffer)).size).toBe(seen.length);
  });

  it('an aborted signal ends the iteration with a CancelledError carrying the reason', async () => {
    const controller = new AbortController();
    const reason = new Error('user pressed stop');
    const got: FlinkElement[] = [];
    const error = await (async () => {
      for await (const e of readFlinkRecords({ ...base, signal: controller.signal })) {
        got.push(e);
        if (got.length === 3) controller.abort(reason);
      }
    })().catch((e: unknown) => e);
    // Elements already queued may still arrive; then the iteration ends with the abort.
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).cause).toBe(reason);
  });

  it('breaking out of the loop stops the read; the iterator is then done', async () => {
    const iterable = readFlinkRecords(base);
    const it = iterable[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.done).toBe(false);
    await it.return!();
    expect(await it.next()).toEqual({ done: true, value: undefined });
    // A fresh iteration reads from the start again.
    let n = 0;
    for await (const _ of iterable) if (++n === 5) break;
    expect(n).toBe(5);
  });

  it('a bad type throws a TypeSpecError at the call, before anything is read', () => {
    expect(() => readFlinkRecords({ ...base, type: 'Tuple<Long,' })).toThrow(TypeSpecError);
  });
});
