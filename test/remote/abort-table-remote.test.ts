/**
 * The fetch rows of Flink's abort table (docs/flink.md §4) run again with the
 * checkpoint behind `http://` (a real node:http server, the fault proxy where the network must
 * misbehave): the guarantees hold exactly as for a local file — the first cause wins (G5), no
 * file is created or grown after an abort (G3), nothing is left (G1) — and a cancel also closes
 * the request's socket.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CancelledError,
  CorruptCheckpointError,
  isAbortConsequence,
  RemoteError,
  suppressedOf,
} from '../../src/services/errors.ts';
import { seam } from '../helpers/fault-seam.ts';
import { readCheckpoint } from '../../src/services/formats/spwc/reader.ts';
import { pauseOn, settle } from '../helpers/async.ts';
import { startFaultProxy, type Fault, type FaultProxy } from '../helpers/fault-proxy.ts';
import { startFileServer, type FileServer } from '../helpers/http-file-server.ts';
import { waitFor } from '../helpers/processes.ts';
import {
  codeOf,
  errorTree,
  expectNoLeak,
  fixture,
  start,
  type Fixture,
} from '../machines/harness.ts';

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (stops.length > 0) await stops.pop()!();
});

/** A fixture whose checkpoint is served over http (through a fault proxy if a plan is given). */
async function remoteFixture(
  plan?: Fault[],
  options: { kib?: number } = {},
): Promise<{ fx: Fixture; url: string; server: FileServer; proxy?: FaultProxy }> {
  const fx = await fixture(options);
  const server = await startFileServer(fx.dir);
  stops.push(() => server.stop());
  let base = server.url;
  let proxy: FaultProxy | undefined;
  if (plan !== undefined) {
    proxy = await startFaultProxy(server.port, plan);
    stops.push(() => proxy!.stop());
    base = proxy.url;
  }
  return { fx, url: `${base}/${basename(fx.checkpoint)}`, server, proxy };
}

const FAST = { backoffMs: 1, stallTimeoutMs: 60_000 };

describe('abort table: fetch (F) from an http:// checkpoint', () => {
  it('F1 corrupt header over http: CorruptCheckpointError naming the URL, no task dir', async () => {
    const { fx, url } = await remoteFixture();
    const bytes = await readFile(fx.checkpoint);
    bytes.write('SPWX', 0, 'latin1');
    await writeFile(fx.checkpoint, bytes);
    const w = start(fx, { taskId: 'rf1', checkpoint: url });
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CorruptCheckpointError);
    expect((error as CorruptCheckpointError).offset).toBe(0);
    expect((error as CorruptCheckpointError).file).toBe(url);
    expect(w.taskDir()).toBeUndefined();
    await expectNoLeak(fx);
  });

  it('F1 the store keeps failing (503, retries exhausted): RemoteError is the cause, each retry was an event, no task dir', async () => {
    const plan = Array.from({ length: 4 }, (): Fault => ({ kind: '503' }));
    const { fx, url } = await remoteFixture(plan);
    const w = start(fx, { taskId: 'rf1x', checkpoint: url, remote: { ...FAST, maxRetries: 2 } });
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(RemoteError);
    expect(suppressedOf(error)).toEqual([]);
    expect(w.events.filter((e) => e.type === 'FETCH.RETRY').map((e) => e.retry)).toEqual([1, 2]);
    expect(w.taskDir()).toBeUndefined();
    await expectNoLeak(fx);
  });

  it('F2 ENOSPC on the 3rd spill write while reading remotely: the write error is the cause, reported first, dir gone', async () => {
    const { fx, url } = await remoteFixture();
    seam.injectFault({ op: 'write', code: 'ENOSPC', nth: 3, pathIncludes: 'spill-segment-' });
    const w = start(fx, { taskId: 'rf2', checkpoint: url });
    let reported: unknown;
    w.onEvent('FAIL', (e) => (reported = e.error));
    const error = await settle(w.recovery.done);
    expect(codeOf(error)).toBe('ENOSPC');
    expect(reported).toBe(error);
    await expectNoLeak(fx, w.taskDir());
  });

  it('F2 CRC mismatch late in a remote checkpoint, after a resumed reset: CorruptCheckpointError at the crc field, dir gone', async () => {
    const { fx, url, proxy } = await remoteFixture([{ kind: 'reset', afterBytes: 200_000 }], {
      kib: 1536,
    });
    let last = { offset: -1, length: 0 };
    await readCheckpoint(fx.checkpoint, {
      onEntry(_g, _c, length, offset) {
        if (length > 0) last = { offset: offset + 16, length };
      },
      onPayload() {},
    });
    const bytes = await readFile(fx.checkpoint);
    bytes[last.offset + (last.length >> 1)]! ^= 0xff;
    await writeFile(fx.checkpoint, bytes);
    const w = start(fx, { taskId: 'rf2crc', checkpoint: url, remote: FAST });
    const error = await settle(w.recovery.done);
    expect(proxy!.fired).toEqual(['reset']);
    expect(error).toBeInstanceOf(CorruptCheckpointError);
    expect((error as CorruptCheckpointError).offset).toBe(last.offset - 4);
    await expectNoLeak(fx, w.taskDir());
  });

  it('F4 cancel while a spill file creation is paused (remote source): nothing created or written after the abort', async () => {
    const { fx, url } = await remoteFixture();
    const pause = pauseOn((op, path) => op === 'open' && path.endsWith('spill-segment-2.bin'));
    const w = start(fx, { taskId: 'rf4open', checkpoint: url });
    await pause.reached;
    w.recovery.cancel('test');
    pause.release();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    const spillOps = pause.after.filter((o) => o.path.includes('spill-segment-'));
    expect(spillOps.filter((o) => o.op === 'open' || o.op === 'write')).toEqual([]);
    expect(errorTree(error).some((e) => codeOf(e) === 'ENOENT')).toBe(false);
    await expectNoLeak(fx, w.taskDir());
  });

  it('F4 cancel while the GET is stalled mid-body: CancelledError, the socket is closed, dir gone', async () => {
    const { fx, url, proxy } = await remoteFixture([{ kind: 'stall', afterBytes: 100_000 }]);
    const w = start(fx, { taskId: 'rf4stall', checkpoint: url, remote: FAST });
    await waitFor('the stall', () => (proxy!.fired.length > 0 ? true : undefined));
    w.recovery.cancel('test');
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    // What the abort caused (the request's own AbortError, a fenced write) is suppressed (G4).
    for (const e of suppressedOf(error)) expect(isAbortConsequence(e), String(e)).toBe(true);
    await waitFor('the socket to close', () =>
      proxy!.clientClosedMidResponse >= 1 ? true : undefined,
    );
    await expectNoLeak(fx, w.taskDir());
  });

  it('F5 the actor is stopped while a spill file close is paused (remote source): the state is discarded, done rejects with CancelledError', async () => {
    const { fx, url } = await remoteFixture();
    const pause = pauseOn((op, path) => op === 'close' && /spill-segment-\d+\.bin$/.test(path));
    const w = start(fx, { taskId: 'rf5', checkpoint: url });
    await pause.reached;
    w.recovery.actor.stop();
    pause.release();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    await expectNoLeak(fx, w.taskDir());
  });
});
