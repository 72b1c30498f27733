/**
 * Channels as streams (DESIGN §5): `channels(info)` may return a Node `Writable` or a web
 * `WritableStream`. Its backpressure is honoured, its errors — on a write, on finish — are the
 * task's first cause, and on every ending it is ended (success) or destroyed / aborted.
 */
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { channelKey, recoverChannelState, type ChannelInfo } from '../../src/index.ts';
import { channelBytes, makeSmallCheckpoint, SMALL_LIMITS } from '../helpers/checkpoints.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

async function setup() {
  const dir = await makeTempRoot();
  const { path } = await makeSmallCheckpoint(dir, { kib: 256, channels: 3 });
  return { dir, checkpoint: path, spillRoot: dir, expected: await channelBytes(path) };
}

/** A Writable that completes each write a macrotask later and records how much it buffered. */
class SlowSink extends Writable {
  readonly chunks: Buffer[] = [];
  maxBuffered = 0;
  refusals = 0;
  constructor(private readonly failOn?: 'write' | 'final') {
    super({ highWaterMark: 1024 });
  }
  override write(chunk: unknown, ...rest: never[]): boolean {
    const accepted = super.write(chunk as Buffer, ...rest);
    if (!accepted) this.refusals++;
    return accepted;
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    this.maxBuffered = Math.max(this.maxBuffered, this.writableLength);
    if (this.failOn === 'write' && this.chunks.length === 3) {
      setImmediate(() => cb(new Error('sink write failed')));
      return;
    }
    this.chunks.push(Buffer.from(chunk));
    setImmediate(() => cb());
  }
  override _final(cb: (e?: Error | null) => void): void {
    setImmediate(() => cb(this.failOn === 'final' ? new Error('sink finish failed') : null));
  }
}

describe('channels as Node Writables and web WritableStreams', () => {
  it('fs.WriteStream channels get exactly their bytes and are closed', async () => {
    const { dir, checkpoint, spillRoot, expected } = await setup();
    const streams: ReturnType<typeof createWriteStream>[] = [];
    const recovery = recoverChannelState({
      checkpoint,
      spillRoot,
      limits: SMALL_LIMITS,
      channels: (info: ChannelInfo) => {
        const s = createWriteStream(join(dir, `${channelKey(info)}.out`));
        streams.push(s);
        return s;
      },
    });
    const report = await recovery.done;
    expect(report.channels).toBe(expected.size);
    for (const [key, bytes] of expected) {
      expect((await readFile(join(dir, `${key}.out`))).equals(bytes), key).toBe(true);
    }
    expect(streams.every((s) => s.closed)).toBe(true);
    expect(listSpill(spillRoot).spillFiles).toEqual([]);
  });

  it("a Writable's backpressure is honoured: the drain waits for 'drain', never piling up", async () => {
    const { checkpoint, spillRoot, expected } = await setup();
    const sinks = new Map<string, SlowSink>();
    await recoverChannelState({
      checkpoint,
      spillRoot,
      limits: SMALL_LIMITS,
      channels: (info) => {
        const sink = new SlowSink();
        sinks.set(channelKey(info), sink);
        return sink;
      },
    }).done;
    for (const [key, bytes] of expected) {
      const sink = sinks.get(key)!;
      expect(Buffer.concat(sink.chunks).equals(bytes), key).toBe(true);
      // write() said "full" and the drain waited: never more than one buffer queued.
      expect(sink.refusals).toBeGreaterThan(0);
      expect(sink.maxBuffered).toBeLessThanOrEqual(SMALL_LIMITS.bufferBytes!);
    }
  });

  it("a Writable's finish error is the first cause, and no spill file is left", async () => {
    const { checkpoint, spillRoot } = await setup();
    const recovery = recoverChannelState({
      checkpoint,
      spillRoot,
      limits: SMALL_LIMITS,
      channels: ({ channel }) => new SlowSink(channel === 1 ? 'final' : undefined),
    });
    await expect(recovery.done).rejects.toThrow('sink finish failed');
    expect(listSpill(spillRoot).spillFiles).toEqual([]);
  });

  it("a Writable's write error is the first cause, and every other sink is destroyed", async () => {
    const { checkpoint, spillRoot } = await setup();
    const sinks: SlowSink[] = [];
    const recovery = recoverChannelState({
      checkpoint,
      spillRoot,
      limits: SMALL_LIMITS,
      channels: ({ channel }) => {
        const sink = new SlowSink(channel === 0 ? 'write' : undefined);
        sinks.push(sink);
        return sink;
      },
    });
    await expect(recovery.done).rejects.toThrow('sink write failed');
    expect(sinks.every((s) => s.destroyed || s.writableFinished)).toBe(true);
    expect(listSpill(spillRoot).spillFiles).toEqual([]);
  });

  it('a web WritableStream gets exactly its bytes with its desiredSize honoured', async () => {
    const { checkpoint, spillRoot, expected } = await setup();
    const got = new Map<string, Buffer[]>();
    let queuedMax = 0;
    let queued = 0;
    await recoverChannelState({
      checkpoint,
      spillRoot,
      limits: SMALL_LIMITS,
      channels: (info) => {
        const parts: Buffer[] = [];
        got.set(channelKey(info), parts);
        return new WritableStream<Uint8Array>(
          {
            write: async (chunk) => {
              queued--;
              parts.push(Buffer.from(chunk));
              await new Promise((r) => setImmediate(r));
            },
          },
          {
            highWaterMark: 2,
            size: () => {
              queued++;
              queuedMax = Math.max(queuedMax, queued);
              return 1;
            },
          },
        );
      },
    }).done;
    for (const [key, bytes] of expected) {
      expect(Buffer.concat(got.get(key)!).equals(bytes), key).toBe(true);
    }
    // The queue never grows past its high-water mark plus the write that filled it.
    expect(queuedMax).toBeLessThanOrEqual(3);
  });

  it('a sink is destroyed on cancel (Writable) or aborted with the cancellation (WritableStream)', async () => {
    const { checkpoint, spillRoot } = await setup();
    const writables: SlowSink[] = [];
    const aborts: unknown[] = [];
    const reason = new Error('shutting down');
    let cancelled = false;
    const recovery = recoverChannelState({
      checkpoint,
      spillRoot,
      limits: SMALL_LIMITS,
      channels: ({ channel }) => {
        if (channel === 2) {
          return new WritableStream<Uint8Array>({ abort: (why) => void aborts.push(why) });
        }
        const sink = new SlowSink();
        const write = sink.write.bind(sink);
        sink.write = ((chunk: Buffer) => {
          if (!cancelled) {
            cancelled = true;
            recovery.cancel(reason);
          }
          return write(chunk as never);
        }) as typeof sink.write;
        writables.push(sink);
        return sink;
      },
    });
    const error = await recovery.done.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' });
    expect((error as Error).cause).toBe(reason);
    expect(writables.length).toBeGreaterThan(0);
    expect(writables.every((s) => s.destroyed)).toBe(true);
    // Aborted once, with the task's own ending: the AbortError whose cause is the reason.
    expect(aborts).toHaveLength(1);
    expect(aborts[0]).toBe(error);
    expect(listSpill(spillRoot).spillFiles).toEqual([]);
  });
});
