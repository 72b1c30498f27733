/**
 * The fetch rows of the abort table with a Flink source behind a misbehaving http server (the
 * test's own 127.0.0.1 file server, the fault proxy in front): a reset, a clean cut mid-body, a
 * stall and a 503 are survived by the resumable ranged reads — every input channel's bytes equal
 * Flink's own reading — and a store that keeps failing is one clean RemoteError. Either way
 * nothing is left on disk. With strong ETags a resume asks `If-Match`; without one it re-reads and
 * hashes the prefix.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RemoteError, recoverChannelState } from '../../src/index.ts';
import { channelKey } from '../../src/services/channel.ts';
import { startFaultProxy, type Fault } from '../helpers/fault-proxy.ts';
import {
  compareChannelFiles,
  expectedSubtasks,
  listFlinkFixtures,
} from '../helpers/flink-expected.ts';
import { startFileServer } from '../helpers/http-file-server.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

// The 1.x file fixture: its largest channel-state file (~72 KiB) is the one a fault hits.
const f = listFlinkFixtures().find((x) => x.variant === 'file' && x.flink.startsWith('1.'));
const FAST = { backoffMs: 1, stallTimeoutMs: 2_000 };

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (stops.length > 0) await stops.pop()!();
});

/** Serves the fixtures (through a proxy with `plan`); the checkpoint's `_metadata` URL. */
async function serve(plan: Fault[], etag = true) {
  const root = join(f!.dir, '..');
  const server = await startFileServer(root, { etag });
  stops.push(() => server.stop());
  const proxy = await startFaultProxy(server.port, plan);
  stops.push(() => proxy.stop());
  return { proxy, server, url: `${proxy.url}/${f!.checkpoint.slice(root.length + 1)}/_metadata` };
}

/** Recovers every subtask's input channels over `url`; the differences from Flink's bytes. */
async function recoverAll(url: string, remote: object): Promise<string[]> {
  const diffs: string[] = [];
  for (const s of expectedSubtasks(f!.expected)) {
    const root = await makeTempRoot();
    const out = join(root, 'out');
    await mkdir(out);
    const parts = new Map<string, Buffer[]>();
    await recoverChannelState({
      checkpoint: url,
      spillRoot: root,
      remote,
      flink: { operator: s.operator, subtask: s.subtask },
      channels: (info) => {
        const chunks: Buffer[] = [];
        parts.set(channelKey(info), chunks);
        return { onBuffer: (b) => void chunks.push(Buffer.from(b)), onFinished: () => undefined };
      },
    }).done;
    for (const [name, chunks] of parts)
      await writeFile(join(out, `${name}.bin`), Buffer.concat(chunks));
    diffs.push(...(await compareChannelFiles(s.dir, out, { input: true })));
    expect(listSpill(root)).toEqual({ taskDirs: [], spillFiles: [] });
  }
  return diffs;
}

describe.skipIf(f === undefined)(
  'abort table F rows: a Flink checkpoint from a misbehaving http server',
  () => {
    for (const [row, fault, etag] of [
      ['a reset mid-body, strong ETag', { kind: 'reset', afterBytes: 20_000 }, true],
      ['a clean cut (FIN) mid-body, strong ETag', { kind: 'truncate', afterBytes: 20_000 }, true],
      ['a stall mid-body, strong ETag', { kind: 'stall', afterBytes: 20_000 }, true],
      ['a 503 on the second connection', { kind: '503', afterConnections: 1 }, true],
      [
        'a reset mid-body, no ETag (the prefix is re-read and hashed)',
        { kind: 'reset', afterBytes: 20_000 },
        false,
      ],
    ] as const) {
      it(`${row}: every input channel equals Flink's bytes, nothing left`, async () => {
        const { proxy, server, url } = await serve([{ ...fault }], etag);
        expect(await recoverAll(url, FAST)).toEqual([]);
        expect(proxy.fired).toEqual([fault.kind]);
        const resumed = server.requests.filter((r) => r.headers['if-match'] !== undefined);
        if (etag && fault.kind !== '503') expect(resumed.length).toBeGreaterThan(0);
        if (!etag) expect(resumed).toEqual([]);
      }, 120_000);
    }

    it('the store keeps failing (503 past the retries): one RemoteError, nothing left', async () => {
      const plan = Array.from({ length: 4 }, (): Fault => ({ kind: '503' }));
      const { url } = await serve(plan);
      const root = await makeTempRoot();
      const s = expectedSubtasks(f!.expected)[0]!;
      const error = await recoverChannelState({
        checkpoint: url,
        spillRoot: root,
        remote: { ...FAST, maxRetries: 2 },
        flink: { operator: s.operator, subtask: s.subtask },
        channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
      }).done.then(
        () => expect.fail('a store that keeps failing must fail the recovery'),
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RemoteError);
      expect(listSpill(root)).toEqual({ taskDirs: [], spillFiles: [] });
    }, 60_000);
  },
);
