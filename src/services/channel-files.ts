/**
 * Channel consumers that write each channel's recovered bytes to `gate-<g>-channel-<c>.bin`
 * (DESIGN §4), coalescing deliveries into 256 KiB writes.
 */
import { join } from 'node:path';
import { fsSeam, type SeamFile } from './fs.ts';
import { ErrorCollector } from './errors.ts';
import { channelKey, type ChannelConsumer, type ChannelInfo } from './channel.ts';

/**
 * Per-channel staging size. Deliveries are copied in rather than kept: a kept 32 KiB slice would
 * pin the reader's whole 1 MiB read buffer, once per channel (G8: memory must not grow with the
 * channel count).
 */
const STAGE_BYTES = 256 * 1024;

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
    let stage: Buffer | undefined;
    let staged = 0;
    let writing = false;
    const ensure = () =>
      (file ??= fsSeam.open(path, 'w').then((f) => {
        this.created.push(path);
        this.open.add(f);
        return f;
      }));
    const flush = async () => {
      const f = await ensure();
      if (staged === 0) return;
      const bytes = stage!.subarray(0, staged);
      staged = 0;
      writing = true;
      try {
        await f.write(bytes);
      } finally {
        writing = false;
      }
    };
    /**
     * The stage to copy into. The drainer awaits a flush before it delivers again, so the one
     * stage is free again by then and is reused (no 256 KiB of garbage per flush); a caller
     * that does not wait gets a fresh one rather than bytes written under a pending write.
     */
    const freeStage = (): Buffer => {
      if (stage === undefined || writing) stage = Buffer.allocUnsafe(STAGE_BYTES);
      return stage;
    };
    return {
      // Every delivery is copied into the stage before onBuffer returns, or written as it is
      // with the returned promise settling only once the write is done: nothing is kept.
      borrows: true,
      onBuffer: (buffer) => {
        this.bytes += buffer.length;
        if (buffer.length >= STAGE_BYTES) {
          // Big enough to write as it is: no copy.
          return flush().then(async () => void (await (await ensure()).write(buffer)));
        }
        const target = staged === 0 ? freeStage() : stage!;
        const n = Math.min(buffer.length, STAGE_BYTES - staged);
        buffer.copy(target, staged, 0, n);
        staged += n;
        if (staged < STAGE_BYTES) return undefined;
        const rest = buffer.subarray(n);
        return flush().then(() => {
          if (rest.length === 0) return;
          rest.copy(freeStage(), 0);
          staged = rest.length;
        });
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
