/**
 * Progress counts channels as they are delivered, not only at the end: a channel counts once
 * the drain has delivered its last segment, while `onFinished` (`channelsFinished`) still waits
 * for the whole drain (docs/flink.md §5 rule 3). The CLI's bar shows this count.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { channelId, type ChannelConsumer, type ChannelInfo } from '../../src/services/channel.ts';
import { ProgressCounters } from '../../src/services/progress.ts';
import { Drainer } from '../../src/services/spill/drainer.ts';
import { SpillWriter } from '../../src/services/spill/spill-writer.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const A: ChannelInfo = { gate: 0, channel: 0 };
const B: ChannelInfo = { gate: 0, channel: 1 };
const C: ChannelInfo = { gate: 1, channel: 0 };
const EMPTY: ChannelInfo = { gate: 1, channel: 1 };

describe('channels delivered are counted live', () => {
  it('channelsDelivered counts each channel when its last byte is delivered, before any onFinished; channelsFinished only at the end', async () => {
    const taskDir = join(await makeTempRoot(), 'task-live');
    const writer = new SpillWriter({ taskDir, maxSegmentBytes: 64 });
    writer.noteChannel(EMPTY);
    // A whole, then B and C interleaved, B's last byte before C's.
    await writer.append(A, Buffer.alloc(200, 1));
    await writer.append(B, Buffer.alloc(30, 2));
    await writer.append(C, Buffer.alloc(30, 3));
    await writer.append(B, Buffer.alloc(30, 2));
    await writer.append(C, Buffer.alloc(30, 3));
    const state = await writer.close();
    const progress = new ProgressCounters('t-live');
    // What the counters said at each channel's first and last buffer.
    const seen: string[] = [];
    const consumers = new Map<number, ChannelConsumer>();
    for (const [name, info] of [
      ['A', A],
      ['B', B],
      ['C', C],
      ['E', EMPTY],
    ] as const) {
      consumers.set(channelId(info), {
        onBuffer: () =>
          void seen.push(`${name}: ${progress.channelsDelivered}/${progress.channelsFinished}`),
        onFinished: () => void seen.push(`fin ${name}: ${progress.channelsDelivered}`),
      });
    }
    const drainer = new Drainer(state, consumers, { bufferBytes: 16, progress });
    try {
      await drainer.drain();
    } finally {
      await drainer.close();
      await state.release();
    }
    const firstB = seen.indexOf('B: 2/0');
    // EMPTY (no bytes) counts from the start; A once its last segment is through (before B).
    expect(seen[0]).toBe('A: 1/0');
    expect(firstB).toBeGreaterThan(0);
    // C's buffers after B's last one see B counted: 3 delivered, still 0 finished.
    expect(seen.filter((s) => s.startsWith('C: ')).at(-1)).toBe('C: 3/0');
    // Every onFinished comes after all four were delivered (the drain is whole first).
    expect(seen.filter((s) => s.startsWith('fin '))).toEqual([
      'fin E: 4',
      'fin A: 4',
      'fin B: 4',
      'fin C: 4',
    ]);
    expect(progress.channelsDelivered).toBe(4);
    expect(progress.channelsFinished).toBe(4);
  });
});
