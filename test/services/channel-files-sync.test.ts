/**
 * The file sink's synchronous creation of small channel files (one open/write/close in a go,
 * no thread-pool round trips): the files are right, a link is never written through (G10), and
 * the event loop still gets turns while thousands are created (G11: a cancel must get in).
 */
import { lstat, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChannelFileSink } from '../../src/services/outputs/channel-files.ts';
import { makeTempRoot } from '../helpers/temp.ts';

describe('ChannelFileSink, small channels created synchronously', () => {
  it('G6 every small channel gets exactly its bytes, an empty channel an empty file, also past the staging bound', async () => {
    const dir = await makeTempRoot();
    // maxStagedChannels 4: most channels are written by eviction before they finish.
    const sink = new ChannelFileSink(dir, { maxStagedChannels: 4 });
    const count = 50;
    const consumers = Array.from({ length: count }, (_, c) =>
      sink.consumer({ gate: 1, channel: c }),
    );
    for (let c = 0; c < count; c++) {
      if (c % 7 === 0) continue; // no bytes at all
      await consumers[c]!.onBuffer(Buffer.from(`a${c}-`));
      await consumers[c]!.onBuffer(Buffer.from(`b${c}`));
    }
    for (const consumer of consumers) await consumer.onFinished();
    await sink.finish();
    expect((await readdir(dir)).length).toBe(count);
    for (let c = 0; c < count; c++) {
      const got = await readFile(join(dir, `gate-1-channel-${c}.bin`), 'utf8');
      expect(got).toBe(c % 7 === 0 ? '' : `a${c}-b${c}`);
    }
  });

  it('G10 a symlink planted at a channel file name is never written through: the sink fails with EEXIST, the target is untouched', async () => {
    const dir = await makeTempRoot();
    const elsewhere = join(await makeTempRoot(), 'victim.txt');
    await writeFile(elsewhere, 'keep me');
    await symlink(elsewhere, join(dir, 'gate-0-channel-3.bin'));
    const sink = new ChannelFileSink(dir);
    const consumer = sink.consumer({ gate: 0, channel: 3 });
    await consumer.onBuffer(Buffer.from('payload'));
    expect(() => consumer.onFinished()).toThrow(expect.objectContaining({ code: 'EEXIST' }));
    await expect(sink.finish()).rejects.toMatchObject({ code: 'EEXIST' });
    expect(await readFile(elsewhere, 'utf8')).toBe('keep me');
    expect((await lstat(join(dir, 'gate-0-channel-3.bin'))).isSymbolicLink()).toBe(true);
  });

  it('G11 the event loop gets a turn while thousands of small files are created', async () => {
    const dir = await makeTempRoot();
    const sink = new ChannelFileSink(dir);
    const count = 1000;
    let turns = 0;
    let finishedAtFirstTurn = -1;
    let finished = 0;
    const tick = (): void => {
      turns++;
      if (finishedAtFirstTurn < 0) finishedAtFirstTurn = finished;
      if (finished < count) setImmediate(tick);
    };
    setImmediate(tick);
    for (let c = 0; c < count; c++) {
      const consumer = sink.consumer({ gate: 0, channel: c });
      const took = consumer.onBuffer(Buffer.of(c & 0xff));
      if (took !== undefined) await took;
      const ended = consumer.onFinished();
      if (ended !== undefined) await ended;
      finished++;
    }
    await sink.finish();
    // A drain that never awaits anything else still lets the loop run every few hundred files.
    expect(finishedAtFirstTurn).toBeGreaterThan(0);
    expect(finishedAtFirstTurn).toBeLessThan(count);
    expect(turns).toBeGreaterThanOrEqual(count / 512);
    expect((await readdir(dir)).length).toBe(count);
  });
});
