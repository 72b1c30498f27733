/**
 * The work of `rewriteFlinkCheckpoint` (rewrite.ts): read the source's `_metadata`, resolve the
 * drops, stage NEWDIR, rewrite each subtask's channel state, write the new `_metadata` and
 * commit. A module of its own so that importing the package does not load it (nor Flink's
 * metadata reader and writer): rewrite.ts loads it on the first call.
 */
import { dirname, resolve, sep } from 'node:path';
import { fsSeam } from '../../../fs.ts';
import { CorruptCheckpointError, RewriteRefusedError, cleanUpOnFailure } from '../../../errors.ts';
import { closeAfter, openCheckpointSource, type SourceOptions } from '../../../locations/source.ts';
import { redactLocation } from '../../../locations/redact.ts';
import { isRemoteLocation } from '../../../locations/schemes.ts';
import { MetadataInput } from '../metadata-input.ts';
import { parseMetadata, readFlinkMetadata } from '../metadata.ts';
import { METADATA_FILE_NAME } from '../metadata-file.ts';
import type { FlinkCheckpointMetadata, FlinkSubtaskState } from '../metadata-types.ts';
import { FlinkPaths } from '../paths.ts';
import { writeFlinkMetadata, type SubtaskChannelHandles } from './metadata-writer.ts';
import { resolveDrops, positionText } from './selectors.ts';
import { checkOut, commit, discard, stage, type Staging } from './staging.ts';
import { outputDropRanges, stitchedTails } from './output-ranges.ts';
import { rewriteSubtask, type RewriteContext } from './subtask-rewrite.ts';
import type {
  FlinkRewriteResult,
  FlinkRewriteSubtask,
  RewriteFlinkCheckpointOptions,
} from './rewrite-types.ts';

export async function rewrite(
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
