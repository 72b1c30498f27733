/**
 * The one table of where bytes may be: a local path, a `file:` URI, `http(s)://` and `s3://`.
 * Every other module asks here whether a location is remote, which reader opens it, whether a
 * Flink handle may name it, how it is printed, and whether a URL stays under a root — so a
 * scheme is listed once, and a URL is judged as it will be requested, never as its text reads.
 *
 * Why "as requested": `http://h/job/%2e%2e/x`, `.%2e`, `..\..\`, a TAB or LF inside `..` all
 * read as harmless text but the WHATWG URL parser (the one `fetch` uses) turns them into `..`
 * and resolves them. So a URL is parsed first, its segments are then checked once more under
 * every percent-decoding a server might apply (`..%2f..`), and only then compared with a root.
 */
import { fileURLToPath } from 'node:url';
import { rememberSecret, rememberSecrets } from './secrets.ts';

/** What kind of place a location names. */
export type LocationKind = 'local' | 'file' | 'http' | 'https' | 's3';

/** The facts of one kind, in one place. */
export interface SchemeFacts {
  /** Read over the network with ranged requests (resumable, deadline-bound). */
  readonly remote: boolean;
  /** Which reader opens it: the local file opener, Node's fetch, or the AWS SDK. */
  readonly reader: 'file' | 'http' | 's3';
  /** Whether a checkpoint may be written there (`recovery.checkpoint(id, { out })`). */
  readonly upload: 'local' | 's3' | 'none';
  /** Whether a Flink `_metadata` handle may name it (then confined to the roots). */
  readonly flinkHandle: boolean;
}

/** The table. A scheme not in it is not readable here. */
export const SCHEMES: Readonly<Record<LocationKind, SchemeFacts>> = {
  local: { remote: false, reader: 'file', upload: 'local', flinkHandle: true },
  file: { remote: false, reader: 'file', upload: 'local', flinkHandle: true },
  http: { remote: true, reader: 'http', upload: 'none', flinkHandle: true },
  https: { remote: true, reader: 'http', upload: 'none', flinkHandle: true },
  s3: { remote: true, reader: 's3', upload: 's3', flinkHandle: true },
};

/**
 * The kind of `location`, or `{ unknown: scheme }` for a URI of a scheme not in the table
 * (`hdfs://`, `gs://`). Only the scheme is case-insensitive.
 *
 * @example
 * ```ts
 * kindOf('HTTPS://h/x'); // 'https'
 * kindOf('/ckpt/job');   // 'local'
 * kindOf('hdfs://nn/x'); // { unknown: 'hdfs' }
 * ```
 */
export function kindOf(location: string): LocationKind | { unknown: string } {
  if (/^file:/i.test(location)) return 'file';
  const scheme = URI_SCHEME.exec(location)?.[1]?.toLowerCase();
  if (scheme === undefined) return 'local';
  return isRemoteKind(scheme) ? scheme : { unknown: scheme };
}

/** `scheme://` at the start of a location: any scheme, known or not. */
const URI_SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;

/** The kinds that are URLs with a host (every kind but a path and a `file:` URI). */
export type RemoteKind = Exclude<LocationKind, 'local' | 'file'>;

/** Whether `kind` is a remote row of the table. */
function isRemoteKind(kind: string): kind is RemoteKind {
  return kind !== 'local' && kind !== 'file' && Object.hasOwn(SCHEMES, kind);
}

/** The remote kinds, from the table. */
const REMOTE_KINDS = (Object.keys(SCHEMES) as LocationKind[]).filter((k) => SCHEMES[k].remote);

/**
 * Whether `location` starts with `scheme://` (any scheme, even one not in the table): a URI
 * rather than a local path.
 *
 * @example
 * ```ts
 * isUri('hdfs://nn/x'); // true
 * isUri('/tmp/x'); // false
 * ```
 */
export function isUri(location: string): boolean {
  return URI_SCHEME.test(location);
}

/** `kind://`, the prefix of a location of that kind (for messages and defaults). */
export function prefixOf(kind: RemoteKind): string {
  return `${kind}://`;
}

/**
 * Whether `text` is an `http(s)://` URL with a host: what an endpoint (`--s3-endpoint`,
 * `remote.s3.endpoint`) must be.
 *
 * @example
 * ```ts
 * isHttpUrl('http://127.0.0.1:9000'); // true
 * isHttpUrl('s3://b'); // false
 * ```
 */
export function isHttpUrl(text: string): boolean {
  return /^https?:\/\/[^/]/i.test(text);
}

/**
 * A URL in prose, from a remote scheme of the table to the next white space (a quote may be
 * part of a password): what {@link redactText} looks for. Global, so `replace` finds each.
 */
export function remoteUrlsInText(): RegExp {
  return new RegExp(`\\b(?:${REMOTE_KINDS.join('|')}):\\/\\/\\S*`, 'gi');
}

/**
 * An object store's `kind://bucket/key` split (the key percent-decoded), or undefined for a
 * location of another kind or without a bucket or a key.
 *
 * @example
 * ```ts
 * bucketAndKey('s3://b/job/cp%201.spwc', 's3'); // { bucket: 'b', key: 'job/cp 1.spwc' }
 * ```
 */
export function bucketAndKey(
  location: string,
  kind: RemoteKind,
): { bucket: string; key: string } | undefined {
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]+)\/([^?#]+)$/i.exec(location);
  if (m === null || m[1]!.toLowerCase() !== kind) return undefined;
  return { bucket: m[2]!, key: decodeURIComponent(m[3]!) };
}

/**
 * A `file:` URI (`file:/a`, `file:///a`, `file://localhost/a`) as a local path; anything else
 * (a path, another scheme, a `file:` URI the parser refuses) as it is.
 *
 * @example
 * ```ts
 * localPathOf('file:/ckpt/job'); // '/ckpt/job'
 * localPathOf('s3://b/k'); // 's3://b/k'
 * ```
 */
export function localPathOf(location: string): string {
  if (kindOf(location) !== 'file') return location;
  try {
    return fileURLToPath(new URL(location.replace(/^file:\/(?!\/)/i, 'file:///')));
  } catch {
    return location;
  }
}

/** The facts of `location`'s kind, or undefined for a scheme not in the table. */
export function factsOf(location: string): SchemeFacts | undefined {
  const kind = kindOf(location);
  return typeof kind === 'string' ? SCHEMES[kind] : undefined;
}

/**
 * Whether `location` names a remote checkpoint (`http://`, `https://`, `s3://`).
 *
 * @example
 * ```ts
 * isRemoteLocation('s3://b/k'); // true
 * isRemoteLocation('/tmp/cp.spwc'); // false
 * ```
 */
export function isRemoteLocation(location: string): boolean {
  return factsOf(location)?.remote === true;
}

/** A remote URL as it will be requested. */
export interface RemoteUrl {
  readonly kind: RemoteKind;
  /** `scheme://host[:port]`, the host lower-cased (its only case-insensitive part but the scheme). */
  readonly origin: string;
  /** The user info as written in the URL (percent-encoded), `''` when there is none. */
  readonly userInfo: string;
  /** Path segments after normalisation (`.`/`..` resolved as the URL parser does). */
  readonly segments: readonly string[];
  /** The URL to request: no user info, the parser's serialisation. */
  readonly href: string;
  /** The user name and password, percent-decoded, when the URL has user info. */
  readonly credentials?: { readonly user: string; readonly password: string };
}

/** Why a URL cannot be requested, or may not be. */
export class UnusableUrl extends Error {}

/**
 * Parses a remote location as `fetch` (WHATWG URL) will request it. The password is remembered
 * (see {@link redactText}) before anything can fail, so no later message can print it.
 *
 * @throws {@link UnusableUrl} for a URL the parser refuses or whose user info is not valid
 *   percent-encoding (the message never quotes it).
 * @example
 * ```ts
 * parseRemote('http://Alice:PassWord9@H:80/a/%2e%2e/b').segments; // ['b']
 * ```
 */
export function parseRemote(location: string): RemoteUrl {
  rememberSecrets(location);
  let url: URL;
  try {
    url = new URL(location);
  } catch {
    throw new UnusableUrl('not a URL the HTTP client can request');
  }
  const kind = url.protocol.slice(0, -1).toLowerCase();
  if (!isRemoteKind(kind)) {
    throw new UnusableUrl(`not an http(s):// or s3:// URL`);
  }
  let credentials: RemoteUrl['credentials'];
  const userInfo = url.username + (url.password !== '' ? `:${url.password}` : '');
  if (url.username !== '' || url.password !== '') {
    try {
      credentials = {
        user: decodeURIComponent(url.username),
        password: decodeURIComponent(url.password),
      };
    } catch {
      throw new UnusableUrl('the user info of the URL is not valid percent-encoding');
    }
    rememberSecret(credentials.password);
    url.username = '';
    url.password = '';
  }
  const segments = url.pathname.split('/').slice(1);
  return {
    kind,
    origin: `${kind}://${url.host.toLowerCase()}`,
    userInfo,
    segments,
    href: url.href,
    ...(credentials !== undefined ? { credentials } : {}),
  };
}

/**
 * Whether a path segment could mean something other than a plain name to the server that gets
 * it: a dot segment under any percent-decoding (`..%2f`, `%252e%252e`), an encoded slash or
 * backslash, a control character or NUL.
 */
function suspiciousSegment(segment: string): boolean {
  let s = segment;
  for (let round = 0; round < 3; round++) {
    if (s === '.' || s === '..' || /[/\\\u0000-\u001f\u007f]/.test(s)) return true;
    if (!s.includes('%')) return false;
    try {
      s = decodeURIComponent(s);
    } catch {
      return true;
    }
  }
  return true;
}

/**
 * Whether the remote `location`, as it will be requested, lies under the remote `root`: the
 * same scheme, host and port, the root's path segments as a prefix, and no segment that a
 * server could take for a way up. User info takes no part (it names no place).
 *
 * @example
 * ```ts
 * remoteWithin('http://h/job/chk-1/f', 'http://h/job'); // true
 * remoteWithin('http://h/job/%2e%2e/secret', 'http://h/job'); // false
 * ```
 */
export function remoteWithin(location: string, root: string): boolean {
  let target: RemoteUrl;
  let base: RemoteUrl;
  try {
    target = parseRemote(location);
    base = parseRemote(root);
  } catch {
    return false;
  }
  if (target.origin !== base.origin) return false;
  if (target.segments.some(suspiciousSegment)) return false;
  // A root's trailing slash (or none) means the same directory.
  const rootSegments = base.segments.filter((s, i, all) => !(s === '' && i === all.length - 1));
  if (target.segments.length < rootSegments.length) return false;
  return rootSegments.every((s, i) => target.segments[i] === s);
}

/**
 * The directory above a remote location as a URL to build on: user info kept as written
 * (case and all), query and fragment dropped, path normalised. `up` = 1 gives the parent.
 *
 * @example
 * ```ts
 * remoteParent('http://A:B@h/job/chk-1/_metadata?sig=1', 2); // 'http://A:B@h/job'
 * ```
 */
export function remoteParent(location: string, up: number): string {
  const url = parseRemote(location);
  const segments = url.segments.slice(0, Math.max(0, url.segments.length - up));
  const userInfo = url.userInfo === '' ? '' : `${url.userInfo}@`;
  const host = url.origin.slice(url.kind.length + 3);
  return `${url.kind}://${userInfo}${host}${segments.length > 0 ? '/' : ''}${segments.join('/')}`;
}
