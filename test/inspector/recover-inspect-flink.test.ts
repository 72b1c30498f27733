/**
 * `spillway recover --inspect` of a real Flink checkpoint (issue 32): the page is told what is
 * recovered (checkpoint, operator, subtask, side) and each channel file's bytes as it grows; the
 * server keeps serving after the end for `--inspect-hold` (Ctrl-C stops it, the recovery's exit
 * code stands); with `--wait-for-page` the recovery starts only once a page is open, and the
 * server stays until that page has been sent the end. Real child processes, real sockets.
 */
import { mkdir, readdir } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import type { InspectorRecord, OwnersRecord, ServerMessage } from '../../inspector/protocol.ts';
import { makeTempRoot, repoRoot, spawnCli, spillLeftovers, waitFor } from '../e2e/harness.ts';

const CHECKPOINT = join(repoRoot, 'examples', 'flink-checkpoint', 'chk-3');
/** slow-join subtask 0's input channels, as Flink's own classes read them. */
const CHANNEL_BYTES = {
  'gate-0-channel-0.bin': 22,
  'gate-0-channel-1.bin': 2571,
  'gate-1-channel-0.bin': 751,
};

const sockets: WebSocket[] = [];
afterEach(() => {
  for (const ws of sockets.splice(0)) ws.terminate();
});

function getJson(url: URL): Promise<unknown> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve(JSON.parse(body)));
    })
      .on('error', reject)
      .end();
  });
}

function recoverFlink(out: string, spill: string, ...flags: string[]) {
  return spawnCli([
    'recover',
    CHECKPOINT,
    '--operator',
    'slow-join',
    '--subtask',
    '0',
    '--out',
    out,
    '--spill-root',
    spill,
    '--inspect=0',
    ...flags,
  ]);
}

const urlIn = (stderr: string) => {
  const m = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(stderr);
  return m === null ? undefined : new URL(m[1]!);
};

describe('recover --inspect of a real Flink checkpoint', () => {
  test('--inspect-hold keeps serving after the end: the page has the operator, subtask and every channel file with its bytes; Ctrl-C ends the hold with exit 0', async () => {
    const root = await makeTempRoot();
    const out = join(root, 'out');
    const spill = join(root, 'spill');
    await mkdir(spill);
    const child = recoverFlink(out, spill, '--inspect-hold', '600');
    await waitFor('the hold', () => /still serving .* for 600 s/.test(child.stderr) || undefined, {
      child,
    });
    const url = urlIn(child.stderr)!;
    // The recovery is over and its files are published; the page can still be opened.
    expect((await readdir(out)).sort()).toEqual(Object.keys(CHANNEL_BYTES));
    const history = (await getJson(new URL('/history.json', url))) as {
      records: InspectorRecord[];
    };
    const owners = history.records.filter((r): r is OwnersRecord => r.k === 'owners');
    const last = owners.at(-1)!;
    expect(last.about).toMatchObject({
      checkpoint: CHECKPOINT,
      format: 'flink',
      operator: 'slow-join',
      subtask: 0,
      side: 'input',
      out,
    });
    expect(Object.fromEntries(last.channelFiles!.map((f) => [f.name, f.bytes]))).toEqual(
      CHANNEL_BYTES,
    );
    child.proc.kill('SIGINT');
    const { code } = await child.exited;
    expect(code, child.stderr).toBe(0);
    expect(await spillLeftovers(spill)).toEqual([]);
  });

  test('--wait-for-page: nothing starts before a page is open; then it runs, and the server stays until the page was sent the end', async () => {
    const root = await makeTempRoot();
    const out = join(root, 'out');
    const spill = join(root, 'spill');
    await mkdir(spill);
    const child = recoverFlink(out, spill, '--wait-for-page');
    await waitFor('the URL', () => urlIn(child.stderr), { child });
    expect(child.stderr).toMatch(/open the live inspector to start the recovery/);
    const url = urlIn(child.stderr)!;
    // No page yet: no task was started, nothing recovered.
    const before = (await getJson(new URL('/history.json', url))) as { records: InspectorRecord[] };
    expect(before.records.filter((r) => r.k === 'actor')).toEqual([]);
    await expect(readdir(out)).rejects.toThrow();

    const ws = new WebSocket(`ws://${url.host}/ws`);
    sockets.push(ws);
    const seen: InspectorRecord[] = [];
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString()) as ServerMessage;
      if (m.type === 'batch') seen.push(...m.records);
    });
    const { code } = await child.exited;
    expect(code, child.stderr).toBe(0);
    // The page was sent the whole run, to its final reading, before the server closed.
    const owners = seen.filter((r): r is OwnersRecord => r.k === 'owners');
    expect(owners.at(-1)?.stage).toBe('finished');
    expect((await readdir(out)).sort()).toEqual(Object.keys(CHANNEL_BYTES));
    expect(await spillLeftovers(spill)).toEqual([]);
  });

  test('--inspect-hold and --wait-for-page without --inspect are usage errors', async () => {
    const root = await makeTempRoot();
    const child = spawnCli([
      'recover',
      CHECKPOINT,
      '--out',
      join(root, 'o'),
      '--inspect-hold',
      '5',
    ]);
    const { code } = await child.exited;
    expect(code).toBe(2);
    expect(child.stderr).toMatch(/--inspect-hold goes with --inspect/);
  });
});
