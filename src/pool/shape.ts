/**
 * What the pool knows of its checkpoint before the first loop: each channel's bytes and CRC
 * (to check every delivery against) and the operations one clean recovery of it performs (to
 * aim every fault inside them).
 */
import { startRecovery, type SpillLimits } from '../recover.ts';
import { readCheckpoint } from '../services/formats/spwc/reader.ts';
import { channelKey } from '../services/channel.ts';
import { crc32 } from '../services/crc32.ts';
import { SpillwayError } from '../services/errors.ts';
import { faultSeam } from './fault-seam.ts';
import type { SpillRoot } from '../services/spill-root/spill-root.ts';
import { FilteringSpill } from '../services/spill/filtering-spill.ts';
import { recordRules, type RescaleOption } from '../services/rescale/rescale-options.ts';
import { taskDirsOf } from './census.ts';
import { taskDirMarker, type ChannelShape } from './loop.ts';
import type { OpCounts } from './plan.ts';

export type { ChannelShape } from './loop.ts';

/** What the pool knows of its checkpoint and of one clean recovery of it. */
export interface Shape {
  payloadBytes: number;
  channels: ChannelShape[];
  /** Operations one clean recovery performs (measured by {@link measureOps}). */
  ops: OpCounts;
}

/**
 * Reads `checkpoint` once: its payload size and each channel's bytes and CRC. `ops` are all 1
 * until {@link measureOps} has run. With `rescale`, what a rescaled recovery must deliver: the
 * survivors, through the same filtering handler with a sink that sums instead of spilling.
 */
export async function readShape(checkpoint: string, rescale?: RescaleOption): Promise<Shape> {
  if (rescale !== undefined) return readRescaledShape(checkpoint, rescale);
  const channels = new Map<string, ChannelShape>();
  let current: ChannelShape | undefined;
  const summary = await readCheckpoint(checkpoint, {
    onEntry(gate, channel) {
      const key = channelKey({ gate, channel });
      current = channels.get(key);
      if (current === undefined) {
        current = { key, gate, channel, bytes: 0, crc: 0 };
        channels.set(key, current);
      }
    },
    onPayload(chunk) {
      current!.crc = crc32(chunk, current!.crc);
      current!.bytes += chunk.length;
    },
  });
  return {
    payloadBytes: summary.payloadBytes,
    channels: [...channels.values()],
    ops: { checkpointReads: 1, spillWrites: 1, spillCloses: 1, drainReads: 1, buffers: 1 },
  };
}

async function readRescaledShape(checkpoint: string, rescale: RescaleOption): Promise<Shape> {
  const channels = new Map<string, ChannelShape>();
  const shapeOf = (info: { gate: number; channel: number }): ChannelShape => {
    const key = channelKey(info);
    let shape = channels.get(key);
    if (shape === undefined) {
      shape = { key, gate: info.gate, channel: info.channel, bytes: 0, crc: 0 };
      channels.set(key, shape);
    }
    return shape;
  };
  const filter = new FilteringSpill(
    {
      maxSegmentBytes: Number.MAX_SAFE_INTEGER,
      noteChannel: (info) => void shapeOf(info),
      keepTogether: () => Promise.resolve(),
      append: (info, bytes) => {
        const shape = shapeOf(info);
        shape.crc = crc32(bytes, shape.crc);
        shape.bytes += bytes.length;
        return Promise.resolve();
      },
    },
    recordRules(rescale, checkpoint),
  );
  await readCheckpoint(checkpoint, filter.visitor());
  filter.finish();
  const list = [...channels.values()];
  return {
    payloadBytes: list.reduce((n, c) => n + c.bytes, 0),
    channels: list,
    ops: { checkpointReads: 1, spillWrites: 1, spillCloses: 1, drainReads: 1, buffers: 1 },
  };
}

/**
 * One clean recovery that counts what a loop really does (checkpoint reads, spill writes and
 * closes, drain reads, delivered buffers), so each fault is aimed inside that work whatever
 * the writer's coalescing or the limits. It must finish, and leave nothing behind. Each count
 * is at least 1. Installs the fs seam's hook while it runs.
 */
export async function measureOps(options: {
  checkpoint: string;
  spill: SpillRoot;
  limits: Required<SpillLimits>;
  taskId: string;
  rescale?: RescaleOption | undefined;
}): Promise<OpCounts> {
  const { checkpoint, spill, limits, taskId: id } = options;
  const inTask = taskDirMarker(id);
  const ops: OpCounts = {
    checkpointReads: 0,
    spillWrites: 0,
    spillCloses: 0,
    drainReads: 0,
    buffers: 0,
  };
  let fetching = true;
  faultSeam().setFsHook((op, path) => {
    if (op === 'read' && path === checkpoint) ops.checkpointReads++;
    if (!path.includes(inTask)) return;
    if (op === 'write') ops.spillWrites++;
    if (op === 'close' && fetching) ops.spillCloses++;
    if (op === 'read' && !fetching) ops.drainReads++;
  });
  try {
    const recovery = startRecovery({
      checkpoint,
      spillRoot: spill.root,
      limits,
      taskId: id,
      ...(options.rescale !== undefined ? { rescale: options.rescale } : {}),
      channels: () => ({
        borrows: true,
        onBuffer: () => void ops.buffers++,
        onFinished: () => undefined,
      }),
      hooks: { beforeStage: (stage) => void (fetching &&= stage === 'fetch') },
    });
    await recovery.done;
  } finally {
    faultSeam().setFsHook(undefined);
  }
  const left = await taskDirsOf(spill.ownerDir, id);
  if (left.length > 0) throw new SpillwayError(`calibration recovery left ${left[0]} behind (G1)`);
  for (const key of Object.keys(ops) as (keyof OpCounts)[]) ops[key] = Math.max(1, ops[key]);
  return ops;
}
