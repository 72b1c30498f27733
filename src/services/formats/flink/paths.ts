/**
 * Where a Flink checkpoint's channel-state files may be read from (DESIGN §7 "Where files may
 * be"). A `_metadata` names absolute paths and URIs written by the job that took it; reading
 * them as they stand would let a hostile or merely copied checkpoint make Spillway read any
 * file of the machine. So every path a handle names is confined: under the job's checkpoint
 * directory (the parent of the `_metadata`'s directory: Flink's `<job>/{chk-N,shared,
 * taskowned}`), under a root the caller allowed, or under the target of a relocation the
 * caller gave. Symlinks are judged by where they really lead.
 */
import { basename, dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { CheckpointPathError, errnoOf } from '../../errors.ts';
import { fsSeam } from '../../fs.ts';
import type { PlannedFile } from '../../locations/source.ts';
import { redactLocation } from '../../locations/redact.ts';
import {
  factsOf,
  isRemoteLocation,
  kindOf,
  localPathOf,
  remoteParent,
  remoteWithin,
} from '../../locations/schemes.ts';
import type { FlinkStreamHandle } from './metadata-types.ts';

/** One `--relocate FROM=TO`: a path prefix as written in the checkpoint, and where it is now. */
export interface FlinkRelocation {
  readonly from: string;
  readonly to: string;
}

/**
 * How a Flink checkpoint's file paths are confined and mapped.
 *
 * @example
 * ```ts
 * const options: FlinkPathOptions = {
 *   allowPaths: ['/mnt/flink-shared'],
 *   relocate: [{ from: 's3://bucket/flink/', to: '/data/flink/' }],
 * };
 * ```
 */
export interface FlinkPathOptions {
  /** Roots outside the job's checkpoint directory whose files may be read (`--allow-path`). */
  allowPaths?: readonly string[] | undefined;
  /** Path-prefix mappings applied before anything else (`--relocate FROM=TO`). */
  relocate?: readonly FlinkRelocation[] | undefined;
}

/**
 * Where one delegate stream's bytes are: a physical file (local path or URL), the byte range
 * of it that is the stream, and how to name it in messages.
 */
export interface DelegateLocation {
  /** What to open: a local path or an `http(s)://` / `s3://` URL. */
  readonly location: string;
  /** Byte offset in `location` where the stream starts (inline bytes, a file-merging segment). */
  readonly start: number;
  /** The stream's declared length in bytes. */
  readonly length: number;
  /** The file for error messages (redacted). */
  readonly shown: string;
  /**
   * Whether a remote server may redirect the read elsewhere: never for a file a handle names
   * (confined to its roots), as the user's own `_metadata` URL may.
   */
  readonly redirects: 'follow' | 'refuse';
  /** A local file's real path and identity as planned: the open must find the same file. */
  readonly planned?: PlannedFile | undefined;
  /** Identity of the stream: handles with the same key share one delegate (read once). */
  readonly key: string;
}

/**
 * Parses `FROM=TO` (the last `=` that is not inside a URL's query splits them: `FROM` may not
 * hold `=`). Throws a `TypeError` for a malformed mapping.
 *
 * @example
 * ```ts
 * parseRelocation('s3://bucket/flink/=/data/flink/'); // { from: 's3://bucket/flink/', to: '/data/flink/' }
 * ```
 */
export function parseRelocation(text: string): FlinkRelocation {
  const at = text.indexOf('=');
  if (at <= 0 || at === text.length - 1) {
    throw new TypeError(`a relocation must be FROM=TO with both sides non-empty, got '${text}'`);
  }
  return { from: text.slice(0, at), to: text.slice(at + 1) };
}

/**
 * A remote location's raw text must not hold what the URL parser would quietly drop or turn
 * into a way up (a control character, a backslash, a dot segment under any percent-decoding):
 * the parsed URL is what `fetch` requests, but the AWS SDK sends an `s3://` key as written, so
 * both readings must agree before either is judged.
 */
function rawPathSuspicious(location: string): boolean {
  if (/[\u0000-\u001f\u007f\\]/.test(location)) return true;
  const afterAuthority = location.replace(/^[a-z0-9+.-]+:\/\/[^/?#]*/i, '').replace(/[?#].*$/s, '');
  return afterAuthority.split('/').some((segment) => {
    let s = segment;
    for (let round = 0; round < 3; round++) {
      if (s === '.' || s === '..' || s.includes('/')) return true;
      if (!s.includes('%')) return false;
      try {
        s = decodeURIComponent(s);
      } catch {
        return true;
      }
    }
    return true;
  });
}

/** Whether the local `path` is `root` or below it (both normalized). */
function isWithin(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/**
 * Confines and maps the paths of one checkpoint's stream handles. Build one per `_metadata`,
 * then {@link FlinkPaths.locate} each handle's delegate.
 *
 * @example
 * ```ts
 * const paths = new FlinkPaths('/ckpt/job/chk-3/_metadata', { allowPaths: ['/mnt/shared'] });
 * const where = await paths.locate(handle.delegate);
 * ```
 */
export class FlinkPaths {
  /** The `_metadata`'s own directory (relative handles resolve against it). */
  readonly checkpointDir: string;
  /** The job's checkpoint directory: the parent of {@link checkpointDir}. */
  readonly jobDir: string;
  private readonly remote: boolean;
  private readonly relocate: readonly FlinkRelocation[];
  private readonly allowPaths: readonly string[];
  /** Real paths of the local roots (symlinks resolved), computed once. */
  private realRoots: Promise<string[]> | undefined;
  /**
   * Real paths asked for so far: every handle of a shared file names the same file and the
   * same roots, and a realpath per handle was most of a plan's time.
   */
  private readonly reals = new Map<string, Promise<string>>();
  /** Identities of the real paths planned so far (a shared file's handles ask once). */
  private readonly stats = new Map<string, Promise<{ dev: number; ino: number } | undefined>>();

  constructor(
    readonly metadataLocation: string,
    options: FlinkPathOptions = {},
  ) {
    this.remote = isRemoteLocation(metadataLocation);
    this.checkpointDir = this.remote
      ? remoteParent(metadataLocation, 1)
      : dirname(resolve(metadataLocation));
    this.jobDir = this.remote ? remoteParent(metadataLocation, 2) : dirname(this.checkpointDir);
    // Longest prefix first: the most specific mapping wins.
    this.relocate = [...(options.relocate ?? [])]
      .map((r) => ({ from: localPathOf(r.from), to: r.to }))
      .sort((a, b) => b.from.length - a.from.length);
    this.allowPaths = (options.allowPaths ?? []).map((p) =>
      isRemoteLocation(p) ? p : resolve(localPathOf(p)),
    );
  }

  /**
   * Where `handle`'s bytes are, checked against the confinement rules (a local file is also
   * checked to exist and to lie, symlinks resolved, under an allowed root).
   *
   * @throws {@link CheckpointPathError} naming the path and the flag that would allow it.
   */
  async locate(handle: FlinkStreamHandle): Promise<DelegateLocation> {
    switch (handle.kind) {
      case 'inline':
        return {
          location: handle.file,
          start: handle.start,
          length: handle.length,
          shown: redactLocation(handle.file),
          // Each inline blob is its own stream (its own header, offsets from its start).
          key: `inline:${handle.start}:${handle.file}`,
          redirects: 'follow',
        };
      case 'relative':
        return this.relativeFile(handle.relativePath, handle.size);
      case 'file':
        return this.absoluteFile(handle.path, 0, handle.size);
      case 'segment':
        return this.absoluteFile(handle.path, handle.start, handle.length);
    }
  }

  private async relativeFile(relativePath: string, size: number): Promise<DelegateLocation> {
    const shownName = `${redactLocation(this.checkpointDir)}/${relativePath}`;
    const refuse = (): never => {
      throw new CheckpointPathError(
        shownName,
        `relative channel-state path '${relativePath}' leaves the checkpoint's directory ` +
          `${redactLocation(this.checkpointDir)}: refused`,
      );
    };
    if (
      relativePath === '' ||
      relativePath.includes('\0') ||
      /^[a-z][a-z0-9+.-]*:/i.test(relativePath)
    )
      refuse();
    if (this.remote) {
      // Judged as it will be requested: the parsed URL under the checkpoint's directory.
      const location = `${this.checkpointDir}/${relativePath}`;
      if (
        relativePath.startsWith('/') ||
        /[?#]/.test(relativePath) ||
        rawPathSuspicious(location) ||
        !remoteWithin(location, this.checkpointDir)
      )
        refuse();
      return {
        location,
        start: 0,
        length: size,
        shown: redactLocation(location),
        key: `whole:${location}`,
        redirects: 'refuse',
      };
    }
    if (isAbsolute(relativePath)) refuse();
    const path = resolve(this.checkpointDir, relativePath);
    if (!isWithin(path, this.checkpointDir) || path === this.checkpointDir) refuse();
    const planned = await this.checkReal(path, [this.checkpointDir], () => {
      throw new CheckpointPathError(
        path,
        `a symlink that leads out of the checkpoint's directory ${this.checkpointDir}: refused`,
      );
    });
    return {
      location: path,
      start: 0,
      length: size,
      shown: path,
      key: `whole:${path}`,
      redirects: 'refuse',
      planned,
    };
  }

  /**
   * The flags that would let `path` be read, spelled out: a checkpoint copied from elsewhere
   * names paths under its old job dir, whose last segment (the job id) is this job dir's too, so
   * `--relocate OLD=NEW` maps it; otherwise `--allow-path` of the file's own dir.
   */
  private flagsFor(path: string): string {
    const dir = isRemoteLocation(path) ? redactLocation(remoteParent(path, 1)) : dirname(path);
    const allow = `allow it with --allow-path ${dir} (options.flink.allowPaths)`;
    const job = basename(this.jobDir);
    const at = path.indexOf(`/${job}/`);
    if (job !== '' && at >= 0) {
      const from = redactLocation(path.slice(0, at + job.length + 1));
      const to = this.remote ? redactLocation(this.jobDir) : this.jobDir;
      return `the checkpoint was moved? map its old job dir with --relocate ${from}=${to} (options.flink.relocate), or ${allow}`;
    }
    return `${allow}, or map it with --relocate FROM=TO (options.flink.relocate)`;
  }

  private async absoluteFile(
    written: string,
    start: number,
    length: number,
  ): Promise<DelegateLocation> {
    let path = localPathOf(written);
    let root: string | undefined;
    for (const r of this.relocate) {
      if (path === r.from || path.startsWith(r.from.endsWith('/') ? r.from : `${r.from}/`)) {
        const rest = path.slice(r.from.length).replace(/^\/+/, '');
        const to = localPathOf(r.to);
        path = rest === '' ? to : `${to.replace(/\/+$/, '')}/${rest}`;
        root = isRemoteLocation(to) ? to : resolve(to);
        break;
      }
    }
    const shown = redactLocation(written);
    const flags = this.flagsFor(path);
    const kind = kindOf(path);
    if (typeof kind !== 'string' || !factsOf(path)!.flinkHandle) {
      const scheme = typeof kind === 'string' ? kind : kind.unknown;
      throw new CheckpointPathError(
        shown,
        `channel state on ${scheme}:// cannot be read here; copy it and map it with --relocate FROM=TO`,
      );
    }
    if (written.includes('\0') || path.includes('\0')) {
      throw new CheckpointPathError(shown, `a channel-state path with a NUL character: refused`);
    }
    if (isRemoteLocation(path)) {
      if (rawPathSuspicious(path)) {
        throw new CheckpointPathError(
          shown,
          `a remote path with '.' or '..' segments (in any encoding), a backslash or a control character: refused`,
        );
      }
      const roots = [...(root !== undefined ? [root] : []), ...this.allowPaths];
      if (this.remote) roots.push(this.jobDir);
      // Judged as it will be requested: parsed, normalised, same scheme, host and port.
      if (!roots.some((r) => isRemoteLocation(r) && remoteWithin(path, r))) {
        throw new CheckpointPathError(
          shown,
          `outside the job's checkpoint directory ${redactLocation(this.jobDir)}; ${flags}`,
        );
      }
      return {
        location: path,
        start,
        length,
        shown,
        key: `${start}:${length}:${path}`,
        redirects: 'refuse',
      };
    }
    if (!isAbsolute(path)) {
      throw new CheckpointPathError(shown, `channel-state path is not absolute: refused`);
    }
    path = resolve(path);
    const roots = [
      ...(root !== undefined ? [root] : []),
      ...this.allowPaths.filter((p) => !isRemoteLocation(p)),
    ];
    if (!this.remote) roots.push(this.jobDir);
    if (!roots.some((r) => isWithin(path, r))) {
      throw new CheckpointPathError(
        path,
        `outside the job's checkpoint directory ${this.remote ? redactLocation(this.jobDir) : this.jobDir}; ${flags}`,
      );
    }
    const planned = await this.checkReal(path, roots, () => {
      throw new CheckpointPathError(
        path,
        `a symlink that leads outside the job's checkpoint directory and every allowed root; ${flags}`,
      );
    });
    return {
      location: path,
      start,
      length,
      shown: path,
      key: `${start}:${length}:${path}`,
      redirects: 'refuse',
      planned,
    };
  }

  /**
   * The real path of `path` (every symlink resolved) must lie under the real path of one of
   * `roots`. Returns what the open must find there: the real path and its file's identity, so
   * a link or a replacement put in between the plan and the open is refused (a TOCTOU). A
   * missing file is left to the open, which names it as missing (and refuses one that appears).
   */
  private async checkReal(
    path: string,
    roots: string[],
    escape: () => never,
  ): Promise<PlannedFile> {
    let real: string;
    try {
      real = await this.realpath(path);
    } catch (error) {
      const errno = errnoOf(error);
      if (errno === 'ENOENT' || errno === 'ENOTDIR') return { real: undefined, dev: -1, ino: -1 };
      if (errno === 'ELOOP')
        throw new CheckpointPathError(path, 'a symlink loop, not a channel-state file', {
          cause: error,
          errno,
        });
      throw error;
    }
    const realRoots = await Promise.all(roots.map((r) => this.realpath(r).catch(() => r)));
    if (!realRoots.some((r) => isWithin(real, r))) escape();
    let stat = this.stats.get(real);
    if (stat === undefined) {
      stat = fsSeam.stat(real).then(
        (st) => ({ dev: st.dev, ino: st.ino }),
        (error: unknown) => {
          const errno = errnoOf(error);
          if (errno === 'ENOENT' || errno === 'ENOTDIR') return undefined;
          throw error;
        },
      );
      stat.catch(() => undefined);
      this.stats.set(real, stat);
    }
    const st = await stat;
    return st === undefined
      ? { real: undefined, dev: -1, ino: -1 }
      : { real, dev: st.dev, ino: st.ino };
  }

  /** `fsSeam.realpath(path)`, asked once per path for this checkpoint (its answer reused). */
  private realpath(path: string): Promise<string> {
    let real = this.reals.get(path);
    if (real === undefined) {
      real = fsSeam.realpath(path);
      // Awaited by every caller; this only keeps a rejection cached for a later one unhandled-free.
      real.catch(() => undefined);
      this.reals.set(path, real);
    }
    return real;
  }
}
