/**
 * `InspectorServer.watch(recovery)`: what a page learns of a watched recovery beyond its
 * inspection events — per owner its task dir, the resources it holds with files and bytes, the
 * task dir's spill files one by one, and the bytes delivered *while* the drain runs (the
 * task's context has the drain's report only at its end). A real recovery of a real checkpoint,
 * its drain paced by its own consumer so the drain is long enough to be read in.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import WebSocket from 'ws';
import type { OwnersRecord, ServerMessage } from '../../inspector/protocol.ts';
import { startInspectorServer } from '../../inspector/server.ts';
import { startRecovery } from '../../src/recover.ts';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { makeTempRoot, spillLeftovers, waitFor } from '../e2e/harness.ts';

let spillRoot: string;
beforeAll(async () => {
  spillRoot = await mkdtemp(join(tmpdir(), 'spillway-test-owners-'));
});
afterAll(async () => {
  try {
    expect((await spillLeftovers(spillRoot)).filter((p) => /task-|spill-segment/.test(p))).toEqual(
      [],
    );
  } finally {
    await rm(spillRoot, { recursive: true, force: true });
  }
});

test('a watched recovery shows per owner its task dir, files and bytes, each spill file with its bytes, and bytes delivered live during the drain; the last reading after the end owns nothing', async () => {
  const root = await makeTempRoot();
  const made = await makeCheckpoint({ out: join(root, 'cp.spwc'), mb: 2, seed: 11 });
  const server = await startInspectorServer();
  const ws = new WebSocket(`ws://127.0.0.1:${server.port}/ws`);
  try {
    const owners: OwnersRecord[] = [];
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString()) as ServerMessage;
      if (m.type === 'batch') for (const r of m.records) if (r.k === 'owners') owners.push(r);
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));

    const recovery = startRecovery({
      checkpoint: made.path,
      spillRoot,
      inspect: server.inspect,
      // Several spill files, and a drain slow enough for several readings.
      limits: { maxSpillFileBytes: 256 * 1024, bufferBytes: 32 * 1024 },
      channels: () => ({
        onBuffer: () => new Promise<void>((resolve) => setTimeout(resolve, 4)),
        onFinished: () => undefined,
      }),
    });
    server.watch(recovery);
    const report = await recovery.done;
    const last = await waitFor('the reading after the end', () =>
      owners.find((r) => r.stage === 'finished'),
    );

    const task = `task-${recovery.taskId}`;
    expect(new Set(owners.map((r) => r.task))).toEqual(new Set([task]));

    // Mid-drain: the drain owns the fetched state and the drainer in the task dir, the files
    // are listed one by one with their bytes, and delivered is between 0 and the payload.
    const midDrain = owners.filter(
      (r) => r.stage === 'drain' && r.delivered > 0 && r.delivered < report.bytesDelivered,
    );
    expect(midDrain.length).toBeGreaterThan(0);
    // Delivered only grows, reading by reading.
    const delivered = owners.map((r) => r.delivered);
    expect(delivered).toEqual([...delivered].sort((a, b) => a - b));
    const r = midDrain[0]!;
    expect(r.payload).toBe(report.bytesDelivered);
    const drain = r.owners.find((o) => o.owner === 'drain');
    expect(drain?.resources.map((x) => x.resource).sort()).toEqual(['drainer', 'fetchedState']);
    const state = drain!.resources.find((x) => x.resource === 'fetchedState')!;
    const drainer = drain!.resources.find((x) => x.resource === 'drainer')!;
    expect(r.dir).toMatch(/task-[^/]+$/);
    expect(state.path).toBe(r.dir);
    expect(state.files).toBe(report.spillFiles);
    expect(state.bytes).toBe(report.spilledBytes);
    // The drainer's bytes are what is still to deliver.
    expect(drainer.bytes).toBe(r.payload! - r.delivered);
    // Each spill file by name, with its bytes on disk; together they are the fetched state.
    expect(r.files!.map((f) => f.name)).toEqual(
      Array.from({ length: report.spillFiles }, (_, n) => `spill-segment-${n}.bin`),
    );
    expect(report.spillFiles).toBeGreaterThan(1);
    for (const f of r.files!) expect(f.bytes).toBeGreaterThan(0);
    expect(r.files!.reduce((n, f) => n + f.bytes, 0)).toBe(report.spilledBytes);

    // While fetching, the fetch stage owns the task dir it writes.
    const fetching = owners.find((x) => x.stage === 'fetch' && x.owners.length > 0);
    if (fetching !== undefined) {
      expect(fetching.owners.map((o) => o.owner)).toEqual(['fetch']);
      expect(fetching.owners[0]!.resources[0]!.resource).toBe('taskDir');
    }

    // After the end: nothing owned, no dir, everything delivered.
    expect(last.owners).toEqual([]);
    expect(last.dir).toBeUndefined();
    expect(last.delivered).toBe(report.bytesDelivered);
    expect(last.channelsFinished).toBe(report.channels);
  } finally {
    ws.terminate();
    await server.close();
  }
});
