/**
 * The URL passwords this process has seen. A message that quotes a URL cut short (at a space or
 * a quote inside the password) could otherwise print part of one, so redaction also replaces
 * every password remembered here, wherever it turns up in a text.
 */

/**
 * Passwords as written, percent-decoded and percent-encoded. Shorter ones would redact ordinary
 * words; the set is capped so it cannot grow without bound.
 */
const secrets = new Set<string>();
const MIN_SECRET = 4;
const MAX_SECRETS = 256;

/** `secret` (and its percent-encoded form) is never printed from now on. */
export function rememberSecret(secret: string): void {
  for (const form of [secret, encodeURIComponent(secret)]) {
    if (form.length >= MIN_SECRET && secrets.size < MAX_SECRETS) secrets.add(form);
  }
}

/** The user info of every URL in `location` (up to its last `@`) is a secret from now on. */
export function rememberSecrets(location: string): void {
  const at = location.lastIndexOf('@');
  const start = location.indexOf('://');
  if (at < 0 || start < 0 || at < start) return;
  const userInfo = location.slice(start + 3, at);
  const colon = userInfo.indexOf(':');
  const password = colon < 0 ? userInfo : userInfo.slice(colon + 1);
  rememberSecret(password);
  try {
    rememberSecret(decodeURIComponent(password));
  } catch {
    // Not valid percent-encoding: the raw form is remembered already.
  }
}

/** The passwords remembered so far, longest first (one that contains another goes whole). */
export function secretsSeen(): string[] {
  return [...secrets].sort((a, b) => b.length - a.length);
}
