/**
 * The product's side of each ratio: the fetch stage, the drain, a plain async recovery built
 * from the same services, and the full recovery through the task machine. Consumers discard
 * what they get, synchronously, so the figures are Spillway's own cost and nothing else.
 */
import { startRecovery } from '../src/recover.ts';
import { Drainer, type DrainReport } from '../src/services/spill/drainer.ts';
import { type ChannelConsumer } from '../src/services/channel.ts';
import { fetchToSpill, type FetchStageResult } from '../src/services/spill/fetch-stage.ts';
import { type SpillLimits } from '../src/services/spill/limits.ts';
import { channelId } from '../src/services/channel.ts';
import { type FetchedChannelState } from '../src/services/spill/fetched-state.ts';
import type { SpillRoot } from '../src/services/spill-root/spill-root.ts';

/**
 * A consumer that drops every buffer at once and never returns a promise. It borrows (keeps
 * nothing), as a real consumer that copies into its own buffers does.
 */
export const discardingConsumer: ChannelConsumer = {
  borrows: true,
  onBuffer() {},
  onFinished() {},
};

function consumersFor(state: FetchedChannelState): Map<number, ChannelConsumer> {
  const map = new Map<number, ChannelConsumer>();
  for (const info of state.channels) map.set(channelId(info), discardingConsumer);
  return map;
}

/**
 * Stage 1 alone: checkpoint → spill files in `taskDir`. The caller owns the returned state
 * (it holds the hand-off grant) and must release it.
 */
export async function timeFetch(
  checkpoint: string,
  taskDir: string,
  limits: SpillLimits = {},
): Promise<{ ms: number; result: FetchStageResult }> {
  const t0 = performance.now();
  const result = await fetchToSpill({
    checkpoint,
    taskDir,
    limits,
    signal: new AbortController().signal,
    onTaskDirAcquired: () => undefined,
  });
  return { ms: performance.now() - t0, result };
}

/**
 * Stage 3 alone: drains `state` into discarding consumers through a fresh drainer (its own
 * grant; the caller's grants are untouched, so the files survive for the next measurement).
 */
export async function timeDrain(
  state: FetchedChannelState,
  limits: SpillLimits = {},
): Promise<{ ms: number; report: DrainReport }> {
  const t0 = performance.now();
  const drainer = new Drainer(state, consumersFor(state), limits);
  try {
    const report = await drainer.drain();
    return { ms: performance.now() - t0, report };
  } finally {
    await drainer.close();
  }
}

/**
 * Fetch + drain as one plain async function over the same services the machines use (spill
 * root, fetch stage, drainer), with none of the orchestration: no actors, events, mailbox,
 * executor or registry. The baseline of `recoverVsPlain`.
 */
export async function plainRecover(
  checkpoint: string,
  root: SpillRoot,
  taskId: string,
  limits: SpillLimits = {},
): Promise<{ ms: number; bytes: number }> {
  const t0 = performance.now();
  const { state } = await fetchToSpill({
    checkpoint,
    taskDir: root.taskDirPath(taskId),
    limits,
    signal: new AbortController().signal,
    onTaskDirAcquired: () => undefined,
  });
  let drainer: Drainer | undefined;
  try {
    drainer = new Drainer(state, consumersFor(state), limits);
    await state.release(); // the hand-off grant: the drainer's reader now keeps the files alive
    const report = await drainer.drain();
    await drainer.close(); // last grant: deletes the task dir, as the full recovery does
    return { ms: performance.now() - t0, bytes: report.bytes };
  } finally {
    await drainer?.close();
    await state.close();
  }
}

/** The full recovery: `startRecovery` through fetch, gap and drain machines. */
export async function fullRecover(
  checkpoint: string,
  spillRoot: string,
  taskId: string,
  limits: SpillLimits = {},
): Promise<{ ms: number; bytes: number }> {
  const t0 = performance.now();
  const recovery = startRecovery({
    checkpoint,
    spillRoot,
    taskId,
    limits,
    channels: () => discardingConsumer,
  });
  const report = await recovery.done;
  return { ms: performance.now() - t0, bytes: report.bytesDelivered };
}
