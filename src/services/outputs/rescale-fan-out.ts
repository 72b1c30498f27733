/**
 * `--rescale P` into a directory in ONE read of the channel state: a single recovery filters
 * for every new subtask at once (services/spill/fan-out-spill.ts) and its channels are routed,
 * by their virtual gate, to new subtask I's files in `subtask-<I>/`. The files are those of
 * the P per-I runs, byte for byte; the checkpoint is read once instead of P times.
 */
import { join } from 'node:path';
import type { ChannelConsumer, ChannelInfo } from '../channel.ts';
import { fsSeam } from '../fs.ts';
import type { PlannedFlinkSelection } from '../formats/flink/entry-source.ts';
import type { RecordReport } from '../spill/filtering-spill.ts';
import { fannedOut, type RescaleFanOut } from '../spill/fan-out-spill.ts';
import { ChannelFileSink } from './channel-files.ts';
import { channelFileName } from './file-names.ts';

/** One new subtask's directory, as the caller planned it. */
export interface FanOutUnit {
  readonly dir: string;
  readonly flink?: PlannedFlinkSelection | undefined;
}

/** The one recovery asked of `start` (a directory's `SideRequest`, recover-to-directory.ts). */
export interface FanOutRequest {
  readonly channels: (info: ChannelInfo) => ChannelConsumer;
  readonly flink?: PlannedFlinkSelection | undefined;
  readonly rescaleFanOut: RescaleFanOut;
  readonly side: 'input';
  readonly dir: '';
  readonly stagingDir: string;
}

/** What new subtask I got: its channels, bytes delivered and record counts. */
export interface FanOutShare {
  channels: number;
  bytesDelivered: number;
  records?: RecordReport;
}

/**
 * Recovers every new subtask of `units` (unit I is new subtask I) in one recovery started
 * through `start`: its report, retries, and each new subtask's share (channels, bytes,
 * records). The sinks are pushed onto `sinks` as they are made: the caller discards them on
 * failure.
 *
 * @example
 * ```ts
 * const { total, shares } = await recoverFannedOut(units, staging, 0o700, sinks, start);
 * ```
 */
export async function recoverFannedOut<T>(
  units: readonly FanOutUnit[],
  stagingDir: string,
  /** The mode of the dirs made in it (the output dir's `stagingDirMode`). */
  dirMode: number,
  sinks: { sink: ChannelFileSink; side: 'input'; dir: string }[],
  start: (request: FanOutRequest) => {
    readonly done: Promise<T>;
    progress(): { retries: number };
  },
): Promise<{ total: T; retries: number; shares: FanOutShare[] }> {
  const count = units.length;
  // P sinks at once: together they stage and hold open what one sink would.
  const limits = {
    maxStagedBytes: Math.max(64 * 1024, Math.floor((16 * 1024 * 1024) / count)),
    chunkBytes: Math.max(64 * 1024, Math.floor((1024 * 1024) / count)),
    maxStagedChannels: Math.max(1, Math.floor(1024 / count)),
    maxOpenFiles: Math.max(2, Math.floor(64 / count)),
  };
  const own: ChannelFileSink[] = [];
  for (const unit of units) {
    const staging = join(stagingDir, unit.dir);
    await fsSeam.mkdir(staging, { recursive: true, mode: dirMode });
    const sink = new ChannelFileSink(staging, limits, (info) => channelFileName('input', info));
    sinks.push({ sink, side: 'input', dir: unit.dir });
    own.push(sink);
  }
  let bySubtask: RecordReport[] | undefined;
  const request: FanOutRequest = {
    channels: (info: ChannelInfo) => {
      const { subtask, info: real } = fannedOut(info);
      return own[subtask]!.consumer(real);
    },
    flink: units[0]?.flink,
    rescaleFanOut: { parallelism: count, onRecords: (r) => (bySubtask = r) },
    side: 'input',
    dir: '',
    stagingDir,
  };
  const recovery = start(request);
  const total = await recovery.done;
  for (const sink of own) await sink.finish();
  const shares = own.map((sink, i) => ({
    channels: sink.finishedCount,
    bytesDelivered: sink.bytes,
    ...(bySubtask?.[i] !== undefined ? { records: bySubtask[i] } : {}),
  }));
  return { total, retries: recovery.progress().retries, shares };
}
