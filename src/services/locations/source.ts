/**
 * Where a checkpoint's bytes come from: a local file, opened so that opening can never block
 * (G11) and checked to be a regular file through the descriptor it will be read from. A path
 * that is not a usable input is a {@link CheckpointPathError} (bad input), never a raw errno
 * from deep inside the reader.
 */
import { fsConstants as constants } from '../fs.ts';
import { CheckpointPathError, cleanUpOnFailure, errnoOf } from '../errors.ts';
import { fsSeam, type SeamFile } from '../fs.ts';
import type { HttpFetcherOptions } from './http-source.ts';
import { factsOf, isRemoteLocation, type SchemeFacts } from './schemes.ts';
import type { RemoteOptions } from './remote-options.ts';
import type { openResumable } from './resume.ts';
import type { ResumableOptions } from './range-fetcher.ts';

/**
 * Errnos of `open` that say "this path is not a checkpoint", not "the machine is failing".
 * EACCES is not among them: a file that exists but may not be read is the environment's
 * refusal, reported with its errno (exit 1), as the file system said it.
 */
const NOT_USABLE: Record<string, string> = {
  ENOENT: 'no such checkpoint file',
  ENOTDIR: 'no such checkpoint file (a part of the path is not a directory)',
  ELOOP: 'a symlink loop, not a checkpoint file',
  ENXIO: 'a socket or an unconnected device, not a checkpoint file',
  EISDIR: 'a directory, not a checkpoint file',
};

function kindOf(st: {
  isDirectory(): boolean;
  isFIFO(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
  isSocket(): boolean;
}): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * A local file judged before it is opened (a Flink handle's file, confined to its roots): the
 * real path the judgement saw and the identity of the file there. `real` undefined: it did not
 * exist then, so any file there now is refused.
 */
export interface PlannedFile {
  readonly real: string | undefined;
  readonly dev: number;
  readonly ino: number;
}

/** An open checkpoint file and its size. */
export interface OpenedCheckpoint {
  readonly file: SeamFile;
  readonly bytes: number;
}

/**
 * Opens `path` for reading without blocking — `O_NONBLOCK`, so a FIFO with no writer opens at
 * once instead of holding a thread forever — then checks through the descriptor that it is a
 * regular file. The caller owns the returned file and must close it; `bytes` is its size.
 *
 * @throws {@link CheckpointPathError} for a missing path, a dangling link, a symlink loop, a
 *   directory, a FIFO, a device or a socket; other errors (EIO, EMFILE) propagate as they are.
 * @example
 * ```ts
 * const { file, bytes } = await openCheckpointFile('job.spwc');
 * try { console.log(bytes); } finally { await file.close(); }
 * ```
 */
export async function openCheckpointFile(
  path: string,
  planned?: PlannedFile,
): Promise<OpenedCheckpoint> {
  let file: SeamFile;
  // A planned file is opened where the plan found it (its real path), never through a link
  // that turned up since (O_NOFOLLOW on the last component, its identity checked below).
  const flags = constants.O_RDONLY | constants.O_NONBLOCK | (planned ? constants.O_NOFOLLOW : 0);
  try {
    file = await fsSeam.open(planned?.real ?? path, flags);
  } catch (error) {
    const errno = errnoOf(error);
    if (planned !== undefined && errno === 'ELOOP') {
      throw new CheckpointPathError(path, 'became a symlink after it was planned: refused', {
        cause: error,
        errno,
      });
    }
    const reason = errno === undefined ? undefined : NOT_USABLE[errno];
    if (reason === undefined) throw error;
    const dangling =
      errno === 'ENOENT' &&
      (await fsSeam.lstat(path).then(
        (st) => st.isSymbolicLink(),
        () => false,
      ));
    throw new CheckpointPathError(
      path,
      dangling ? 'a dangling symlink, not a checkpoint file' : reason,
      {
        cause: error,
        errno,
      },
    );
  }
  try {
    const st = await file.stat();
    if (!st.isFile()) {
      throw new CheckpointPathError(path, `is ${kindOf(st)}, not a checkpoint file`);
    }
    if (planned !== undefined && (st.dev !== planned.dev || st.ino !== planned.ino)) {
      // A directory on the way swapped for a link, or the file replaced: not what was judged.
      throw new CheckpointPathError(
        path,
        'is not the file that was planned (it was replaced or moved since): refused',
      );
    }
    return { file, bytes: st.size };
  } catch (error) {
    await file.close().catch(() => undefined);
    throw error;
  }
}

/**
 * Checks that `path` is a usable checkpoint file (opens and closes it), so a command can
 * refuse bad input before it creates anything.
 *
 * @example
 * ```ts
 * await checkCheckpointFile(argv[0]); // CheckpointPathError → exit 2
 * ```
 */
export async function checkCheckpointFile(path: string): Promise<void> {
  await (await openCheckpointFile(path)).file.close();
}

/** What the checkpoint reader reads from: a local file, or a remote object read resumably. */
export interface CheckpointByteSource {
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * Runs `body` over an open source, then closes the source whatever happened. The first cause
 * wins (G5): a failed close replaces only a success; after a failure it goes to that error's
 * `.suppressed`. The SPWC reader and the Flink channel-state reader both end this way.
 *
 * @example
 * ```ts
 * const { file, bytes } = await openCheckpointSource(location);
 * const head = await closeAfter(file, async () => readHeader(file, bytes));
 * ```
 */
export async function closeAfter<T>(
  source: CheckpointByteSource,
  body: () => Promise<T>,
): Promise<T> {
  const result = await cleanUpOnFailure(body, () => source.close());
  await source.close();
  return result;
}

/** Options of {@link openCheckpointSource}: the remote options and the read's signal. */
export interface SourceOptions extends RemoteOptions {
  signal?: AbortSignal;
  /** See {@link ResumableOptions.probeEnd}. */
  probeEnd?: number;
  /** See {@link HttpFetcherOptions.redirects}. */
  redirects?: 'follow' | 'refuse';
  /** A local file's planned identity (see {@link PlannedFile}). */
  planned?: PlannedFile | undefined;
}

/**
 * Opens a checkpoint wherever it is: a local path (see {@link openCheckpointFile}), an
 * `http(s)://` URL or `s3://bucket/key` (see resume.ts). The first remote request is made
 * here, so a missing object or refused credentials fail before anything is spilled.
 *
 * @example
 * ```ts
 * const { file, bytes } = await openCheckpointSource('s3://b/cp.spwc', { s3: { endpoint } });
 * try { await file.read(buf, 0, buf.length, 0); } finally { await file.close(); }
 * ```
 */
export async function openCheckpointSource(
  location: string,
  options: SourceOptions = {},
): Promise<{ file: CheckpointByteSource; bytes: number }> {
  const reader = factsOf(location)?.reader ?? 'file';
  if (reader === 'file') return openCheckpointFile(location, options.planned);
  // The remote readers are loaded for the first remote location: importing the package and
  // every local recovery do without them.
  const fetcher = await REMOTE_READERS[reader](location, options);
  const file = await (await import('./resume.ts')).openResumable(fetcher, options);
  return { file, bytes: file.bytes };
}

/**
 * The remote readers, by the `reader` the scheme table gives a location: a new reader in the
 * table is a compile error here until it is registered (a new scheme is its row, its module and
 * this line).
 */
const REMOTE_READERS: Record<
  Exclude<SchemeFacts['reader'], 'file'>,
  (location: string, options: SourceOptions) => Promise<Parameters<typeof openResumable>[0]>
> = {
  http: async (location, options) =>
    (await import('./http-source.ts')).httpFetcher(location, {
      redirects: options.redirects ?? 'follow',
    }),
  s3: async (location, options) => (await import('./s3-source.ts')).s3Fetcher(location, options.s3),
};

/**
 * Checks that `location` is a usable checkpoint (opens and closes it; for a remote one, one
 * request whose body is dropped at once), so a command can refuse bad input before it creates
 * anything.
 *
 * @example
 * ```ts
 * await checkCheckpointSource(argv[0], { s3: { endpoint } }); // RemoteNotFoundError → exit 2
 * ```
 */
export async function checkCheckpointSource(
  location: string,
  options: SourceOptions = {},
): Promise<void> {
  // Remote: a ranged request for the file header only, so the probe costs one small answer and
  // never the start of the whole object's transfer.
  const probe = isRemoteLocation(location) ? { ...options, probeEnd: 7 } : options;
  await (await openCheckpointSource(location, probe)).file.close();
}
