/**
 * `rewriteFlinkCheckpoint`: a copy of a Flink checkpoint that a real Flink restores (`-s
 * NEWDIR`), minus the elements the caller drops (DESIGN §8 "Rewriting a checkpoint").
 *
 * - `_metadata` of the source's version, every non-channel byte carried over verbatim
 *   (metadata-writer.ts), new channel handles as Flink records them.
 * - Channel state rewritten into new files in NEWDIR (channel-state-writer.ts); inline
 *   channels stay inline. Files the source's keyed or operator state names *relatively* (its
 *   `chk-N` directory's own files) are copied into NEWDIR, so that their handles' bytes stay
 *   exactly as they were and NEWDIR does not depend on the source's `chk-N`; files named by
 *   absolute path (shared incremental state, file-merging segments) are referenced where
 *   they are, as Flink itself does for a restored checkpoint.
 * - The source is only read; NEWDIR is staged and renamed into place (staging.ts).
 */
import { dirname, resolve, sep } from 'node:path';
import { fsSeam } from '../../../fs.ts';
import {
  AbortedError,
  CorruptCheckpointError,
  RewriteRefusedError,
  addSuppressed,
  cleanUpOnFailure,
  ours,
} from '../../../errors.ts';
import { closeAfter, openCheckpointSource, type SourceOptions } from '../../../locations/source.ts';
import { redactLocation } from '../../../locations/redact.ts';
import { isRemoteLocation } from '../../../locations/schemes.ts';
import { MetadataInput } from '../metadata-input.ts';
import { parseMetadata, readFlinkMetadata } from '../metadata.ts';
import { METADATA_FILE_NAME } from '../metadata-file.ts';
import type { FlinkCheckpointMetadata, FlinkSubtaskState } from '../metadata-types.ts';
import { FlinkPaths, type FlinkPathOptions } from '../paths.ts';
import { writeFlinkMetadata, type SubtaskChannelHandles } from './metadata-writer.ts';
import { resolveDrops, positionText, type FlinkDropSelector } from './selectors.ts';
import { checkOut, commit, discard, stage, type Staging } from './staging.ts';
import { outputDropRanges, stitchedTails } from './output-ranges.ts';
import {
  rewriteSubtask,
  type FlinkDroppedElement,
  type RewriteContext,
} from './subtask-rewrite.ts';

export type { FlinkDropSelector, FlinkKeyDrop, FlinkRewriteElement } from './selectors.ts';
export type { FlinkDroppedElement } from './subtask-rewrite.ts';

/** Options of {@link rewriteFlinkCheckpoint}. */
export interface RewriteFlinkCheckpointOptions extends FlinkPathOptions {
  /** The source: a `chk-N` directory or its `_metadata` (local, `http(s)://`, `s3://`). */
  checkpoint: string;
  /** NEWDIR: a local directory that does not exist or is empty. */
  out: string;
  /** What to drop: positions, selector text, keys, predicates. Nothing: a plain copy. */
  drop?: readonly FlinkDropSelector[] | undefined;
  /**
   * Per input gate, its upstream operator (id, uid, name): a record cut at the end of an input
   * channel is then dropped on both sides. Default: the checkpoint's only operator with output
   * state, if there is exactly one (as `flink records`).
   */
  upstream?: Readonly<Record<number, string>> | undefined;
  /** A selector that matches nothing is not an error. */
  allowEmpty?: boolean | undefined;
  /** Work out what would be dropped and the new sizes; write nothing. */
  dryRun?: boolean | undefined;
  signal?: AbortSignal | undefined;
  remote?: SourceOptions | undefined;
  onProgress?: ((progress: FlinkRewriteProgress) => void) | undefined;
}

/** Progress of a rewrite (payload bytes of the source's channel state). */
export interface FlinkRewriteProgress {
  readonly bytesRead: number;
  readonly bytesDeclared: number;
  readonly dropped: number;
}

/** A subtask's channel state sizes before and after, as Flink counts them (lengths included). */
export interface FlinkRewriteSubtask {
  readonly operator: string;
  readonly subtask: number;
  readonly inputBytes: { readonly before: number; readonly after: number };
  readonly outputBytes: { readonly before: number; readonly after: number };
}

/** What {@link rewriteFlinkCheckpoint} did (or, dry, would do). */
export interface FlinkRewriteResult {
  /** NEWDIR, absolute (nothing there after a dry run). */
  readonly out: string;
  readonly version: number;
  readonly checkpointId: number;
  readonly dryRun: boolean;
  readonly dropped: readonly FlinkDroppedElement[];
  readonly subtasks: readonly FlinkRewriteSubtask[];
  /** Relative state files copied into NEWDIR. */
  readonly copiedFiles: readonly string[];
  /** Bytes of the new `_metadata`. */
  readonly metadataBytes: number;
  /** Bytes of new channel-state files. */
  readonly channelFileBytes: number;
}

/**
 * Writes NEWDIR: the checkpoint at `checkpoint` with the elements `drop` names removed, in a
 * form Flink restores (`flink run -s NEWDIR …`). NEWDIR appears whole or not at all.
 *
 * @throws RewriteRefusedError (bad selector, no match, partial record, unusable NEWDIR),
 *   UnknownOperatorError, CorruptCheckpointError, CheckpointPathError, AbortedError.
 * @example
 * ```ts
 * const result = await rewriteFlinkCheckpoint({
 *   checkpoint: '/ckpt/6f1e…/chk-12',
 *   out: '/ckpt/fixed',
 *   drop: ['slow-join/1/input/0/1/42'],
 * });
 * console.log(result.dropped); // [{ position: 'b04c…/1/input/0/1/42', kind: 'record', bytes: 25 }]
 * ```
 */
export async function rewriteFlinkCheckpoint(
  options: RewriteFlinkCheckpointOptions,
): Promise<FlinkRewriteResult> {
  const { signal } = options;
  const throwIfAborted = (): void => {
    if (signal?.aborted === true) {
      throw new AbortedError('flink rewrite aborted', { cause: signal.reason });
    }
  };
  try {
    return await rewrite(options, throwIfAborted);
  } catch (error) {
    // An abort surfaces as an AbortedError whatever the read in progress threw; every other
    // failure as a Spillway error (a raw ENOSPC becomes an IoError), the first cause kept.
    if (signal?.aborted === true && !(error instanceof AbortedError)) {
      const aborted = new AbortedError('flink rewrite aborted', { cause: signal.reason });
      addSuppressed(aborted, error);
      throw aborted;
    }
    throw ours(error);
  }
}

async function rewrite(
  options: RewriteFlinkCheckpointOptions,
  throwIfAborted: () => void,
): Promise<FlinkRewriteResult> {
  const { signal, remote } = options;
  throwIfAborted();
  const located = await readFlinkMetadata(options.checkpoint, {
    ...(signal !== undefined ? { signal } : {}),
    ...(remote !== undefined ? { remote } : {}),
  });
  const local = !isRemoteLocation(located.location);
  const out = await checkOut(options.out, local ? dirname(resolve(located.location)) : undefined);
  // The bytes carried over and the model of them come from one read of the file.
  const sourceBytes = await readWhole(located.location, { ...remote, signal });
  const metadata = await parseBytes(sourceBytes, located.location, signal);
  const drops = resolveDrops(metadata, options.drop ?? []);
  const dryRun = options.dryRun === true;
  throwIfAborted();
  const staging = dryRun ? undefined : await stage(out);
  return cleanUpOnFailure(
    async () => {
      const result = await build(options, metadata, sourceBytes, drops, staging, throwIfAborted);
      throwIfAborted();
      if (staging !== undefined) await commit(staging);
      return { ...result, out, dryRun };
    },
    async () => {
      if (staging !== undefined) await discard(staging);
    },
  );
}

async function build(
  options: RewriteFlinkCheckpointOptions,
  metadata: FlinkCheckpointMetadata,
  sourceBytes: Buffer,
  drops: ReturnType<typeof resolveDrops>,
  staging: Staging | undefined,
  throwIfAborted: () => void,
): Promise<Omit<FlinkRewriteResult, 'out' | 'dryRun'>> {
  const paths = new FlinkPaths(metadata.location, options);
  let bytesRead = 0;
  let bytesDeclared = 0;
  for (const op of metadata.operators) {
    for (const s of op.subtasks) {
      for (const h of [...s.inputChannels, ...s.outputSubpartitions]) {
        bytesDeclared += Math.max(0, h.stateSize - 4 * h.offsets.length);
      }
    }
  }
  const outputRanges = await outputDropRanges(metadata.location, drops, options);
  // Cut records named at an input tail: their head halves join the output ranges.
  const stitched = await stitchedTails(metadata.location, drops, options);
  for (const [id, heads] of stitched.heads) {
    outputRanges.set(
      id,
      [...heads, ...(outputRanges.get(id) ?? [])].sort((a, b) => a.start - b.start),
    );
  }
  const ctx: RewriteContext = {
    drops,
    paths,
    outputRanges,
    stitchedTails: stitched.tails,
    signal: options.signal,
    remote: options.remote,
    matchedPositions: new Set(),
    matchedKeys: new Set(),
    matchedPredicates: new Set(),
    dropped: [],
    onEntry: (n) => {
      bytesRead += n;
      options.onProgress?.({ bytesRead, bytesDeclared, dropped: ctx.dropped.length });
    },
  };
  const handles = new Map<FlinkSubtaskState, SubtaskChannelHandles>();
  const subtasks: FlinkRewriteSubtask[] = [];
  let channelFileBytes = 0;
  for (const operator of metadata.operators) {
    for (const subtask of operator.subtasks) {
      if (subtask.finished) continue;
      throwIfAborted();
      const r = await rewriteSubtask(ctx, operator, subtask, staging?.dir);
      handles.set(subtask, r);
      channelFileBytes += r.written;
      if (subtask.inputChannels.length + subtask.outputSubpartitions.length > 0) {
        subtasks.push({
          operator: operator.id,
          subtask: subtask.index,
          inputBytes: { before: r.before.input, after: r.after.input },
          outputBytes: { before: r.before.output, after: r.after.output },
        });
      }
    }
  }
  checkMatched(options, drops, ctx);
  const bytes = writeFlinkMetadata(sourceBytes, metadata, (_, subtask) => handles.get(subtask)!);
  const copiedFiles = metadata.stateFiles ?? [];
  if (staging !== undefined) {
    for (const file of copiedFiles) {
      throwIfAborted();
      await copyStateFile(paths, file, staging.dir, options);
    }
    await writeFileSynced(resolve(staging.dir, METADATA_FILE_NAME), bytes);
  }
  return {
    version: metadata.version,
    checkpointId: metadata.checkpointId,
    dropped: ctx.dropped,
    subtasks,
    copiedFiles,
    metadataBytes: bytes.length,
    channelFileBytes,
  };
}

/** Every selector must have matched something, unless `allowEmpty`. */
function checkMatched(
  options: RewriteFlinkCheckpointOptions,
  drops: ReturnType<typeof resolveDrops>,
  ctx: RewriteContext,
): void {
  if (options.allowEmpty === true) return;
  for (const indexes of drops.positions.values()) {
    for (const [index, text] of indexes) {
      if (!ctx.matchedPositions.has(text)) {
        throw new RewriteRefusedError(
          'no-match',
          `${text}: the channel has no element ${index} (pass --allow-empty to write anyway)`,
        );
      }
    }
  }
  drops.keys.forEach((k, i) => {
    if (!ctx.matchedKeys.has(i)) {
      throw new RewriteRefusedError(
        'no-match',
        `no record in the input channel state has the key ${k.values.map(String).join(', ')} ` +
          `(pass --allow-empty to write anyway)`,
      );
    }
  });
  drops.predicates.forEach((_, i) => {
    if (!ctx.matchedPredicates.has(i)) {
      throw new RewriteRefusedError('no-match', `drop predicate ${i} matched no element`);
    }
  });
}

/** The whole of a (small) file: `_metadata`. */
async function readWhole(location: string, options: SourceOptions): Promise<Buffer> {
  const { file, bytes } = await openCheckpointSource(location, options);
  return closeAfter(file, async () => {
    const buf = Buffer.allocUnsafe(bytes);
    let got = 0;
    while (got < bytes) {
      const n = await file.read(buf, got, bytes - got, got);
      if (n === 0) {
        throw new CorruptCheckpointError(
          redactLocation(location),
          got,
          'the file shrank while read',
        );
      }
      got += n;
    }
    return buf;
  });
}

/** Parses `_metadata` from bytes already read. */
async function parseBytes(
  bytes: Buffer,
  location: string,
  signal: AbortSignal | undefined,
): Promise<FlinkCheckpointMetadata> {
  const source = {
    read: (buf: Buffer, offset: number, length: number, position: number): Promise<number> =>
      Promise.resolve(bytes.copy(buf, offset, position, Math.min(bytes.length, position + length))),
    close: (): Promise<void> => Promise.resolve(),
  };
  const input = new MetadataInput(source, bytes.length, redactLocation(location), signal);
  return parseMetadata(input, location);
}

/** Copies a relative state file of the source into the staging dir, under the same name. */
async function copyStateFile(
  paths: FlinkPaths,
  relativePath: string,
  dir: string,
  options: RewriteFlinkCheckpointOptions,
): Promise<void> {
  const where = await paths.locate({ kind: 'relative', relativePath, size: -1 });
  const target = resolve(dir, relativePath);
  if (!target.startsWith(dir + sep)) {
    throw new RewriteRefusedError(
      'unsupported',
      `state file '${relativePath}' is not a plain name`,
    );
  }
  const { file, bytes } = await openCheckpointSource(where.location, {
    ...options.remote,
    signal: options.signal,
  });
  await closeAfter(file, async () => {
    const out = await fsSeam.open(target, 'wx', 0o644);
    try {
      const buf = Buffer.allocUnsafe(Math.min(Math.max(bytes, 1), 1024 * 1024));
      for (let at = 0; at < bytes;) {
        const n = await file.read(buf, 0, Math.min(buf.length, bytes - at), at);
        if (n === 0)
          throw new CorruptCheckpointError(where.shown, at, 'the file shrank while read');
        await out.write(buf.subarray(0, n));
        at += n;
      }
      await out.sync();
    } finally {
      await out.close();
    }
  });
}

async function writeFileSynced(path: string, bytes: Buffer): Promise<void> {
  const out = await fsSeam.open(path, 'wx', 0o644);
  try {
    await out.write(bytes);
    await out.sync();
  } finally {
    await out.close();
  }
}

export { positionText };
