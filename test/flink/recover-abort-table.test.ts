/**
 * The fetch rows of Flink's abort table (F1–F5, docs/flink-channel-state.md §4) with a real Flink
 * checkpoint as the source (a committed fixture, copied): the harness of
 * test/machines/abort-table.test.ts (its `start`, `expectNoLeak`, fs-seam faults and pauses) with
 * `flink: { operator, subtask, outputState }` instead of an SPWC file. Every test ends with the G1
 * leak check.
 */
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AbortedError,
  CancelledError,
  CorruptCheckpointError,
  suppressedOf,
} from '../../src/services/errors.ts';
import { seam } from '../helpers/fault-seam.ts';
import { readFlinkMetadata } from '../../src/services/formats/flink/metadata.ts';
import type { FlinkChannelHandle } from '../../src/services/formats/flink/metadata-types.ts';
import type { FlinkSelection } from '../../src/services/formats/flink/entry-source.ts';
import { pauseOn, settle } from '../helpers/async.ts';
import {
  compareChannelFiles,
  listFlinkFixtures,
  expectedSubtasks,
} from '../helpers/flink-expected.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { codeOf, expectNoLeak, recorder, start, type Fixture } from '../machines/harness.ts';

// The file fixture with the largest output state: enough bytes for several tiny spill files.
const source = listFlinkFixtures().find((f) => f.flink.startsWith('2.') && f.variant === 'file');
/** Tiny files so a few dozen KiB of state spill into many of them (rotation, lazy opens). */
const TINY = {
  maxSpillFileBytes: 4 * 1024,
  maxSegmentBytes: 1024,
  bufferBytes: 1024,
  readChunkBytes: 2048,
};

interface FlinkFx extends Fixture {
  flink: FlinkSelection;
  /** The channel-state file of the selection's first handle. */
  stateFile: string;
  handles: FlinkChannelHandle[];
  expectedDir: string;
}

async function flinkFixture(): Promise<FlinkFx> {
  const f = source!;
  const dir = await makeTempRoot();
  const root = await makeTempRoot();
  await cp(f.jobDir, join(dir, 'job'), { recursive: true });
  const checkpoint = join(dir, 'job', f.checkpoint.slice(f.jobDir.length + 1));
  const meta = await readFlinkMetadata(checkpoint);
  // The subtask with the most output state.
  let best: { op: string; index: number; handles: FlinkChannelHandle[]; bytes: number } | undefined;
  for (const op of meta.operators) {
    for (const s of op.subtasks) {
      const bytes = s.outputSubpartitions.reduce((n, h) => n + h.stateSize, 0);
      if (best === undefined || bytes > best.bytes) {
        best = { op: op.id, index: s.index, handles: s.outputSubpartitions, bytes };
      }
    }
  }
  const handle = best!.handles.find((h) => h.offsets.length > 0)!;
  if (handle.delegate.kind !== 'relative' && handle.delegate.kind !== 'file') {
    throw new Error(`expected a file delegate, got ${handle.delegate.kind}`);
  }
  const stateFile =
    handle.delegate.kind === 'relative'
      ? join(checkpoint, handle.delegate.relativePath)
      : handle.delegate.path.replace(f.originalJobDir, join(dir, 'job'));
  const expectedDir = expectedSubtasks(f.expected).find(
    (s) => s.operator === best!.op && s.subtask === best!.index,
  )!.dir;
  return {
    dir,
    root,
    checkpoint,
    made: undefined as never,
    original: new Map(),
    flink: {
      operator: best!.op,
      subtask: best!.index,
      outputState: true,
      relocate: [{ from: f.originalJobDir, to: join(dir, 'job') }],
    },
    stateFile,
    handles: best!.handles.filter((h) => h.delegate === handle.delegate || sameFile(h, handle)),
    expectedDir,
  };
}

function sameFile(a: FlinkChannelHandle, b: FlinkChannelHandle): boolean {
  return JSON.stringify(a.delegate) === JSON.stringify(b.delegate);
}

function run(fx: FlinkFx, taskId: string) {
  return start(fx, { taskId, flink: fx.flink, limits: TINY });
}

describe.skipIf(source === undefined)('abort table: fetch (F) with a real Flink source', () => {
  it('a clean run spills into several files and delivers exactly what Flink reads', async () => {
    const fx = await flinkFixture();
    const rec = recorder();
    const w = start(fx, { taskId: 'clean', flink: fx.flink, limits: TINY, channels: rec.channels });
    const report = await w.recovery.done;
    expect(report.spillFiles).toBeGreaterThan(3);
    const out = join(fx.dir, 'out');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(out);
    for (const key of rec.logs.keys()) {
      const [, g, , c] = key.split('-');
      await writeFile(join(out, `partition-${g}-subpartition-${c}.bin`), rec.delivered(key));
    }
    expect(await compareChannelFiles(fx.expectedDir, out, { input: false, output: true })).toEqual(
      [],
    );
    await expectNoLeak(fx);
  });

  it('F1 bad _metadata magic: CorruptCheckpointError at byte 0 before any file exists', async () => {
    const fx = await flinkFixture();
    const meta = join(fx.checkpoint, '_metadata');
    const bytes = await readFile(meta);
    bytes.writeUInt32BE(0x12345678, 0);
    await writeFile(meta, bytes);
    const w = run(fx, 'f1magic');
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CorruptCheckpointError);
    expect((error as CorruptCheckpointError).offset).toBe(0);
    expect(w.taskDir()).toBeUndefined();
    await expectNoLeak(fx);
  });

  it('F1 bad channel-state header version: CorruptCheckpointError naming the state file, no task dir', async () => {
    const fx = await flinkFixture();
    const bytes = await readFile(fx.stateFile);
    bytes.writeInt32BE(3, 0);
    await writeFile(fx.stateFile, bytes);
    const w = run(fx, 'f1header');
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CorruptCheckpointError);
    expect((error as CorruptCheckpointError).file).toBe(fx.stateFile);
    expect(w.taskDir()).toBeUndefined();
    await expectNoLeak(fx);
  });

  it('F1 EIO on the first channel-state read: the I/O error is the cause, no task dir created', async () => {
    const fx = await flinkFixture();
    seam.injectFault({ op: 'read', code: 'EIO', pathIncludes: fx.stateFile });
    const w = run(fx, 'f1eio');
    const error = await settle(w.recovery.done);
    expect(codeOf(error)).toBe('EIO');
    expect(suppressedOf(error)).toEqual([]);
    expect(w.taskDir()).toBeUndefined();
    await expectNoLeak(fx);
  });

  it('F2 ENOSPC on the 3rd spill write: reported first, the fetch stage deletes its own dir', async () => {
    const fx = await flinkFixture();
    seam.injectFault({ op: 'write', code: 'ENOSPC', nth: 3, pathIncludes: 'spill-segment-' });
    const w = run(fx, 'f2');
    let reported: unknown;
    w.onEvent('FAIL', (e) => (reported = e.error));
    const error = await settle(w.recovery.done);
    expect(codeOf(error)).toBe('ENOSPC');
    expect(w.taskDir()).toBeDefined();
    expect(reported).toBe(error);
    expect(w.events.map((e) => e.type)).not.toContain('FETCH.HANDOFF');
    await expectNoLeak(fx, w.taskDir());
  });

  it('F2 a corrupt last entry after several spill files: CorruptCheckpointError at its offset, dir gone', async () => {
    const fx = await flinkFixture();
    const last = Math.max(...fx.handles.flatMap((h) => h.offsets));
    const bytes = await readFile(fx.stateFile);
    bytes.writeInt32BE(-1, last);
    await writeFile(fx.stateFile, bytes);
    const w = run(fx, 'f2corrupt');
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CorruptCheckpointError);
    expect((error as CorruptCheckpointError).offset).toBe(last);
    expect(w.taskDir()).toBeDefined();
    await expectNoLeak(fx, w.taskDir());
  });

  it('F3 close of the last spill file fails before the state exists: the close error is the cause, dir gone', async () => {
    const fx = await flinkFixture();
    const n = (await run(fx, 'count').recovery.done).spillFiles;
    seam.injectFault({ op: 'close', code: 'EIO', pathIncludes: `spill-segment-${n - 1}.bin` });
    const w = run(fx, 'f3');
    const error = await settle(w.recovery.done);
    expect(codeOf(error)).toBe('EIO');
    expect(w.events.map((e) => e.type)).not.toContain('FETCH.HANDOFF');
    await expectNoLeak(fx, w.taskDir());
  });

  it('F4 cancel while a spill file creation is paused: nothing is created or written after abort', async () => {
    const fx = await flinkFixture();
    const pause = pauseOn((op, path) => op === 'open' && path.endsWith('spill-segment-2.bin'));
    const w = run(fx, 'f4open');
    await pause.reached;
    w.recovery.cancel('test');
    pause.release();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    const spillOps = pause.after.filter((o) => o.path.includes('spill-segment-'));
    expect(spillOps.filter((o) => o.op === 'open' || o.op === 'write')).toEqual([]);
    await expectNoLeak(fx, w.taskDir());
  });

  it('F4 cancel while a channel-state read is paused: the read stops, the spill dir is gone', async () => {
    const fx = await flinkFixture();
    let reads = 0;
    const pause = pauseOn((op, path) => op === 'read' && path === fx.stateFile && ++reads === 3);
    const w = run(fx, 'f4read');
    await pause.reached;
    w.recovery.cancel('test');
    pause.release();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    expect(pause.after.filter((o) => o.op === 'open' && o.path.includes('spill-segment-'))).toEqual(
      [],
    );
    await expectNoLeak(fx, w.taskDir());
  });

  it('F5 fetch finishes after its task was cancelled (final close paused): the state is discarded, never handed off', async () => {
    const fx = await flinkFixture();
    const n = (await run(fx, 'count5').recovery.done).spillFiles;
    const pause = pauseOn(
      (op, path) => op === 'close' && path.endsWith(`spill-segment-${n - 1}.bin`),
    );
    const w = run(fx, 'f5');
    await pause.reached;
    w.recovery.cancel('test');
    pause.release();
    const error = await settle(w.recovery.done);
    expect(error).toBeInstanceOf(CancelledError);
    expect(w.events.map((e) => e.type)).not.toContain('FETCH.HANDOFF');
    for (const e of suppressedOf(error)) expect(e).toBeInstanceOf(AbortedError);
    await expectNoLeak(fx, w.taskDir());
  });
});
