/**
 * What the inspection events cannot say: per owner the spill resources it holds with their task
 * dir, files and bytes, the task dir's spill files one by one, and the bytes delivered while
 * the drain runs (the task's context has the drain's report only once the drain is over). A
 * recovery handed to `InspectorServer.watch` is read through its public `ownership()` and
 * `progress()` a few times a second while it runs, and once more when it has ended.
 */
import { basename } from 'node:path';
import type { OwnershipReport, Recovery } from '../src/recovery-types.ts';
import type { RecoveryProgress } from '../src/services/progress.ts';
import { listFiles } from '../src/services/fs.ts';
import { sanitize } from './sanitize.ts';
import type { OwnersRecord, OwnerId, RecoveryAbout, ResourceId } from './protocol.ts';

/** What `watch` reads of a recovery: its public surface, nothing of XState. */
export type WatchedRecovery = Pick<Recovery, 'ownership' | 'progress' | 'done'>;

/**
 * What the watcher knows of a recovery beyond its public surface (`recover --inspect` passes
 * it): what is recovered, and the dir where its per-channel files grow while it runs.
 */
export interface WatchAbout extends RecoveryAbout {
  /** The dir holding one file per channel while they are written (listed at each reading). */
  channelFilesDir?: string;
}

/** How often a running recovery is read (the page redraws at most ~12 times a second). */
export const OWNERS_INTERVAL_MS = 250;
/** The task dir's files listed one by one; beyond this only their count and bytes. */
export const FILES_LISTED = 64;

/** `OwnersRecord` without what the relay adds: its kind, task, sequence number and time. */
export type OwnersReading = Omit<OwnersRecord, 'k' | 'i' | 't' | 'task'>;

/**
 * One reading: the ownership report grouped by owner, the progress counters the page shows,
 * and the spill files under the task dir (name and bytes), sanitized like every record.
 *
 * @example
 * ```ts
 * const reading = await readOwners(recovery); // { owners: [{ owner: 'drain', … }], delivered, … }
 * ```
 */
export async function readOwners(
  recovery: WatchedRecovery,
  about?: WatchAbout,
): Promise<OwnersReading> {
  const progress: RecoveryProgress = recovery.progress();
  const report: OwnershipReport = recovery.ownership();
  const byOwner = new Map<OwnerId, OwnersReading['owners'][number]>();
  let dir: string | undefined;
  for (const [resource, owned] of Object.entries(report) as [
    ResourceId,
    NonNullable<OwnershipReport[ResourceId]>,
  ][]) {
    let entry = byOwner.get(owned.owner);
    if (entry === undefined) {
      entry = { owner: owned.owner, resources: [] };
      byOwner.set(owned.owner, entry);
    }
    entry.resources.push({
      resource,
      ...(owned.path !== undefined ? { path: owned.path } : {}),
      ...(owned.files !== undefined ? { files: owned.files } : {}),
      ...(owned.bytes !== undefined ? { bytes: owned.bytes } : {}),
    });
    dir ??= owned.path;
  }
  const reading: OwnersReading = {
    stage: progress.stage,
    owners: [...byOwner.values()],
    read: progress.bytesRead,
    spilled: progress.bytesSpilled,
    spillFiles: progress.spillFiles,
    delivered: progress.bytesDelivered,
    channelsFinished: progress.channelsFinished,
  };
  if (progress.checkpointBytes !== undefined) reading.checkpointBytes = progress.checkpointBytes;
  if (progress.payloadBytes !== undefined) reading.payload = progress.payloadBytes;
  if (progress.channels !== undefined) reading.channels = progress.channels;
  if (dir !== undefined) {
    reading.dir = dir;
    const { listed, more } = await listDir(dir);
    reading.files = listed;
    if (more !== undefined) reading.moreFiles = more;
  }
  if (about !== undefined) {
    const { channelFilesDir, ...shown } = about;
    reading.about = shown;
    if (channelFilesDir !== undefined) {
      // Only the channel files: the staging dir also holds its owner marker (owner.json).
      const { listed, more } = await listDir(channelFilesDir, (name) => name.endsWith('.bin'));
      reading.channelFiles = listed;
      if (more !== undefined) reading.moreChannelFiles = more;
    }
  }
  return sanitize(reading) as OwnersReading;
}

/** A dir's files as they are on disk now (a dir deleted meanwhile is simply empty), in order. */
async function listDir(
  dir: string,
  keep: (name: string) => boolean = () => true,
): Promise<{
  listed: { name: string; bytes: number }[];
  more?: { files: number; bytes: number };
}> {
  const files = (await listFiles(dir).catch(() => [])).filter((f) => keep(basename(f.path)));
  files.sort((a, b) => a.path.localeCompare(b.path, 'en', { numeric: true }));
  const listed = files
    .slice(0, FILES_LISTED)
    .map((f) => ({ name: basename(f.path), bytes: f.size }));
  if (files.length <= FILES_LISTED) return { listed };
  const rest = files.slice(FILES_LISTED);
  return { listed, more: { files: rest.length, bytes: rest.reduce((n, f) => n + f.size, 0) } };
}

/**
 * Reads `recovery` every `intervalMs` until it has ended (then once more), emitting a reading
 * whenever it changed. The timer is unref'd: watching never keeps a process alive. Returns a
 * function that stops watching.
 *
 * @example
 * ```ts
 * const stop = watchOwners(recovery, (reading) => relay.push({ k: 'owners', task, ...reading }));
 * ```
 */
export function watchOwners(
  recovery: WatchedRecovery,
  emit: (reading: OwnersReading) => void,
  { intervalMs = OWNERS_INTERVAL_MS, about }: { intervalMs?: number; about?: WatchAbout } = {},
): () => void {
  let stopped = false;
  let reading = false;
  let last = '';
  const read = async () => {
    if (stopped || reading) return;
    reading = true;
    try {
      const now = await readOwners(recovery, about);
      const json = JSON.stringify(now);
      if (!stopped && json !== last) {
        last = json;
        emit(now);
      }
    } catch {
      // Watching is advice: a reading that fails is simply not shown.
    } finally {
      reading = false;
    }
  };
  const timer = setInterval(() => void read(), intervalMs);
  timer.unref();
  void read();
  const ended = () => {
    clearInterval(timer);
    // The ending's reading: nothing owned any more, the final counts.
    void (async () => {
      while (reading) await new Promise((resolve) => setTimeout(resolve, 5));
      await read();
      stopped = true;
    })();
  };
  recovery.done.then(ended, ended);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
