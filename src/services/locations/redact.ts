/**
 * Nothing secret is ever printed: a presigned URL's query string is a bearer credential (its
 * signature grants access until it expires), URL user info is a password, and the AWS
 * credential chain's secrets live in the environment. Every message, log line and inspector
 * field that names a remote checkpoint goes through here first.
 */
import { isRemoteLocation, remoteUrlsInText } from './schemes.ts';
import { rememberSecrets, secretsSeen } from './secrets.ts';

/** What replaces a query string or user info. */
export const REDACTED = '<redacted>';

/** Environment variables whose values are secrets wherever they turn up. */
const SECRET_ENV = ['AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_SECURITY_TOKEN'];

/**
 * `location` safe to print: a URL loses its user info and its query string (the names too: an
 * `X-Amz-Credential` names the access key); a local path is returned as it is.
 *
 * The user info runs to the **last** `@` of the location: a password typed raw may hold any
 * character (`'`, `/`, `?`, `#`, a space, `@` itself), so no other character can be trusted
 * to end it. A path or query that holds an `@` is redacted up to it too: too much hidden,
 * never too little.
 *
 * @example
 * ```ts
 * redactLocation('https://u:pw@h/cp.spwc?X-Amz-Signature=abc'); // 'https://<redacted>@h/cp.spwc?<redacted>'
 * redactLocation('s3://bucket/cp.spwc'); // 's3://bucket/cp.spwc'
 * ```
 */
export function redactLocation(location: string): string {
  if (!isRemoteLocation(location)) return location;
  rememberSecrets(location);
  return redactOneUrl(location);
}

/** One URL (the whole string) redacted: user info up to its last `@`, then query/fragment. */
function redactOneUrl(url: string): string {
  const start = url.indexOf('://') + 3;
  let rest = url.slice(start);
  const at = rest.lastIndexOf('@');
  if (at >= 0) rest = `${REDACTED}@${rest.slice(at + 1)}`;
  const q = rest.search(/[?#]/);
  if (q >= 0) rest = `${rest.slice(0, q)}?${REDACTED}`;
  return url.slice(0, start) + rest;
}

/**
 * `text` with every URL in it redacted (see {@link redactLocation}), every URL password seen
 * so far and the value of every secret AWS environment variable replaced: for error messages
 * that quote a URL or a server's answer.
 *
 * @example
 * ```ts
 * redactText('GET https://h/x?sig=1 failed'); // 'GET https://h/x?<redacted> failed'
 * ```
 */
export function redactText(text: string, env: NodeJS.ProcessEnv = process.env): string {
  let out = text;
  // Longest first: a secret that contains another is replaced whole.
  for (const secret of secretsSeen().sort((a, b) => b.length - a.length)) {
    out = out.split(secret).join(REDACTED);
  }
  // A URL in prose runs to the next white space (a quote may be part of a password).
  out = out.replace(remoteUrlsInText(), (url) => {
    // Closing punctuation of the sentence is kept as it was.
    const tail = /['")\],.;:]*$/.exec(url)![0];
    return redactOneUrl(url.slice(0, url.length - tail.length)) + tail;
  });
  for (const name of SECRET_ENV) {
    const value = env[name];
    // Short values would redact ordinary words; no real secret is that short.
    if (value !== undefined && value.length >= 8) out = out.split(value).join(REDACTED);
  }
  return out;
}
