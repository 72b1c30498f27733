/**
 * Nothing secret is ever printed: a presigned URL's query string is a bearer credential (its
 * signature grants access until it expires), URL user info is a password, and the AWS
 * credential chain's secrets live in the environment. Every message, log line and inspector
 * field that names a remote checkpoint goes through here first.
 */

/** What replaces a query string or user info. */
export const REDACTED = '<redacted>';

/** Environment variables whose values are secrets wherever they turn up. */
const SECRET_ENV = ['AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_SECURITY_TOKEN'];

/** Whether `location` names a remote checkpoint (`http://`, `https://`, `s3://`). */
export function isRemoteLocation(location: string): boolean {
  return /^(https?|s3):\/\//i.test(location);
}

/**
 * `location` safe to print: a URL loses its user info and its query string (the names too: an
 * `X-Amz-Credential` names the access key); a local path is returned as it is.
 *
 * @example
 * ```ts
 * redactLocation('https://u:pw@h/cp.spwc?X-Amz-Signature=abc'); // 'https://<redacted>@h/cp.spwc?<redacted>'
 * redactLocation('s3://bucket/cp.spwc'); // 's3://bucket/cp.spwc'
 * ```
 */
export function redactLocation(location: string): string {
  if (!isRemoteLocation(location)) return location;
  return redactUrls(location);
}

/**
 * `text` with every URL in it redacted (see {@link redactLocation}) and the value of every
 * secret AWS environment variable replaced: for error messages that quote a URL or a server's
 * answer.
 *
 * @example
 * ```ts
 * redactText('GET https://h/x?sig=1 failed'); // 'GET https://h/x?<redacted> failed'
 * ```
 */
export function redactText(text: string, env: NodeJS.ProcessEnv = process.env): string {
  let out = redactUrls(text);
  for (const name of SECRET_ENV) {
    const value = env[name];
    // Short values would redact ordinary words; no real secret is that short.
    if (value !== undefined && value.length >= 8) out = out.split(value).join(REDACTED);
  }
  return out;
}

function redactUrls(text: string): string {
  return text.replace(/\b(https?|s3):\/\/([^\s"'<>]*)/gi, (_m, scheme: string, rest: string) => {
    let r = rest;
    const q = r.search(/[?#]/);
    // An empty query is where an earlier redaction stopped the match (at its '<'): idempotent.
    if (q >= 0 && q < r.length - 1) r = `${r.slice(0, q)}?${REDACTED}`;
    const slash = r.indexOf('/');
    const authority = slash < 0 ? r : r.slice(0, slash);
    const at = authority.lastIndexOf('@');
    if (at >= 0) r = `${REDACTED}@${r.slice(at + 1)}`;
    return `${scheme}://${r}`;
  });
}
