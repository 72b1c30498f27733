/**
 * Channel consumers that write each channel's recovered bytes to `gate-<g>-channel-<c>.bin`
 * (DESIGN §4), coalescing deliveries into 1 MiB writes.
 */
import { join } from 'node:path';
import { fsSeam, type SeamFile } from './fs.ts';
import { ErrorCollector } from './errors.ts';
import type { ChannelConsumer } from './drainer.ts';
import { channelKey, type ChannelInfo } from './fetched-state.ts';

const FLUSH_BYTES = 1024 * 1024;

/**
 * One output file per channel in `dir` (which must exist). Files are created lazily, and every
 * channel gets one, even an empty one. `discard()` removes what this sink created, so a failed
 * or cancelled recovery leaves no half-written output.
 *
 * @example
 * ```ts
 * const sink = new ChannelFileSink('out');
 * recoverChannelState({ checkpoint, channels: (info) => sink.consumer(info) });
 * ```
 */
export class ChannelFileSink {
  private readonly created: string[] = [];
  private readonly open = new Set<SeamFile>();
  bytes = 0;

  constructor(readonly dir: string) {}

  /** The files created so far. */
  get files(): readonly string[] {
    return this.created;
  }

  consumer(info: ChannelInfo): ChannelConsumer {
    const path = join(this.dir, `${channelKey(info)}.bin`);
    let file: Promise<SeamFile> | undefined;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const ensure = () =>
      (file ??= fsSeam.open(path, 'w').then((f) => {
        this.created.push(path);
        this.open.add(f);
        return f;
      }));
    const flush = async () => {
      const f = await ensure();
      if (pendingBytes === 0) return;
      const bufs = pending;
      pending = [];
      pendingBytes = 0;
      await f.write(...bufs);
    };
    return {
      onBuffer: (buffer) => {
        pending.push(buffer);
        pendingBytes += buffer.length;
        this.bytes += buffer.length;
        return pendingBytes >= FLUSH_BYTES ? flush() : undefined;
      },
      onFinished: async () => {
        await flush();
        const f = await ensure();
        this.open.delete(f);
        await f.close();
      },
    };
  }

  /** Closes every file still open and deletes every file this sink created. */
  async discard(): Promise<void> {
    const errors = new ErrorCollector();
    for (const f of this.open) await f.close().catch((e) => errors.add(e));
    this.open.clear();
    for (const path of this.created) await fsSeam.rm(path).catch((e) => errors.add(e));
    errors.throwIfAny();
  }
}
