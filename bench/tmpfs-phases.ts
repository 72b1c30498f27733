/**
 * The bench's phases that need a tmpfs: the ratios, the end-to-end pairs and the many-channel
 * figure again with the whole working set in RAM (the code's own cost, no disk in the way).
 * Each mounts its own tmpfs, sized to its peak, and unmounts it whatever happens; where no
 * tmpfs can be mounted (not root, not Linux) each says why instead.
 */
import { copyFile, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { makeCheckpoint, type MadeCheckpoint } from '../src/services/formats/spwc/generator.ts';
import { SpillRoot } from '../src/services/spill-root/spill-root.ts';
import { measureChannels, type ChannelFigures } from './channels.ts';
import { measureEndToEnd, type EndToEndFigures } from './e2e.ts';
import { mountTmpfs } from './floors.ts';
import { measureRatios, type RatioFigures } from './ratios.ts';
import type { BenchOptions, OrSkipped } from './options.ts';

const MIB = 1024 * 1024;

/**
 * The ratios again with the whole working set on a tmpfs: the checkpoint copied there,
 * its own spill root. Skipped, with the reason, where no tmpfs can be mounted.
 */
export async function onTmpfs(
  made: MadeCheckpoint,
  dir: string,
  options: BenchOptions,
  progress: (fraction: number, text: string) => void,
): Promise<OrSkipped<RatioFigures>> {
  const tmpfs = await mountTmpfs(join(dir, 'tmpfs'), Math.ceil(3.2 * options.mb) + 64);
  if ('reason' in tmpfs) return { skipped: tmpfs.reason };
  let root: SpillRoot | undefined;
  try {
    const spillRootPath = join(tmpfs.path, 'spill');
    await mkdir(spillRootPath, { mode: 0o700 });
    root = await SpillRoot.open(spillRootPath);
    const copy: MadeCheckpoint = { ...made, path: join(tmpfs.path, 'ratio.spwc') };
    await copyFile(made.path, copy.path);
    const at = (f: number, text: string) => progress(0.3 + f * 0.5, `tmpfs: ${text}`);
    return await measureRatios(
      copy,
      tmpfs.path,
      root,
      spillRootPath,
      {},
      options.runs,
      options.signal,
      at,
    );
  } finally {
    await root?.close().catch(() => undefined);
    await tmpfs.unmount();
  }
}

/** The tmpfs end-to-end figures: the bench's usual shape, and Flink-sized entries. */
export type TmpfsEndToEnd = EndToEndFigures & {
  /** The same payload, 32 channels, in entries of at most 32 KiB (Flink's network buffers). */
  flinkSizedEntries: EndToEndFigures;
};

/**
 * The end-to-end pairs again with checkpoint, spill root and outputs on a tmpfs: on the disk
 * phase's checkpoint (entries up to 256 KiB), then on one of the same size in entries of at
 * most 32 KiB, the size Flink writes them in.
 */
export async function onTmpfsEndToEnd(
  checkpoint: string,
  dir: string,
  options: BenchOptions,
): Promise<OrSkipped<TmpfsEndToEnd>> {
  // The checkpoint, then per side a spill copy and an output copy.
  const tmpfs = await mountTmpfs(join(dir, 'tmpfs-e2e'), Math.ceil(3.3 * options.e2eMb) + 64);
  if ('reason' in tmpfs) return { skipped: tmpfs.reason };
  try {
    const copy = join(tmpfs.path, 'e2e.spwc');
    await copyFile(checkpoint, copy);
    const usual = await measureEndToEnd(copy, tmpfs.path, options.e2eRuns, options.signal);
    await rm(copy);
    const small = await makeCheckpoint({
      out: join(tmpfs.path, 'e2e-32k.spwc'),
      mb: options.e2eMb,
      gates: 8,
      channels: 4,
      maxEntryBytes: 32 * 1024,
      seed: options.seed + 4,
    });
    const flinkSizedEntries = await measureEndToEnd(
      small.path,
      tmpfs.path,
      options.e2eRuns,
      options.signal,
    );
    return { ...usual, flinkSizedEntries };
  } finally {
    await tmpfs.unmount();
  }
}

/** Many one-byte channels against the file-creation floor, on a tmpfs. */
export async function onTmpfsChannels(
  dir: string,
  options: BenchOptions,
): Promise<OrSkipped<ChannelFigures>> {
  // A one-byte file takes a whole 4 KiB page on a tmpfs: 262,144 of them need 1 GiB.
  const files = options.channels[0] * options.channels[1];
  const tmpfs = await mountTmpfs(
    join(dir, 'tmpfs-channels'),
    Math.ceil((files * 5120) / MIB) + 256,
  );
  if ('reason' in tmpfs) return { skipped: tmpfs.reason };
  try {
    const [gates, perGate] = options.channels;
    return await measureChannels(tmpfs.path, gates, perGate, options.signal, options.channelPairs);
  } finally {
    await tmpfs.unmount();
  }
}
