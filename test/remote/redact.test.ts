/**
 * Nothing secret is ever printed: a presigned URL's query string, URL user info and the AWS
 * secret environment variables are redacted in messages and in what the inspector sends.
 */
import { describe, expect, it } from 'vitest';
import { redactLocation, redactText } from '../../src/services/locations/redact.ts';
import { sanitize, sanitizeError } from '../../inspector/sanitize.ts';
import { RemoteNotFoundError } from '../../src/services/errors.ts';
import { httpFetcher } from '../../src/services/locations/http-source.ts';

const PRESIGNED =
  'https://bucket.s3.amazonaws.com/jobs/cp.spwc?X-Amz-Algorithm=AWS4-HMAC-SHA256' +
  '&X-Amz-Credential=AKIAEXAMPLE%2F20260101&X-Amz-Signature=0123456789abcdef';

describe('redaction (nothing secret printed)', () => {
  it('a presigned URL loses its whole query string; a path and s3:// stay readable', () => {
    expect(redactLocation(PRESIGNED)).toBe(
      'https://bucket.s3.amazonaws.com/jobs/cp.spwc?<redacted>',
    );
    expect(redactLocation('s3://ckpt/jobs/cp.spwc')).toBe('s3://ckpt/jobs/cp.spwc');
    expect(redactLocation('/tmp/a?b.spwc')).toBe('/tmp/a?b.spwc');
  });

  it('redacting twice changes nothing (a message may pass through twice)', () => {
    const once = redactText(`failed: ${PRESIGNED} and https://u:p@h/x`);
    expect(redactText(once)).toBe(once);
  });

  it('user info in a URL is redacted, the host is kept', () => {
    expect(redactLocation('https://alice:hunter22@store.example/cp.spwc')).toBe(
      'https://<redacted>@store.example/cp.spwc',
    );
  });

  it('every URL inside a message and the values of secret AWS variables are redacted', () => {
    const env = {
      AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG',
      AWS_SESSION_TOKEN: 'FQoGZXIvYXdzEXAMPLE',
    };
    const text = `GET ${PRESIGNED} failed; key wJalrXUtnFEMI/K7MDENG token FQoGZXIvYXdzEXAMPLE`;
    const out = redactText(text, env);
    expect(out).not.toMatch(/X-Amz|wJalr|FQoGZ/);
    expect(out).toContain('https://bucket.s3.amazonaws.com/jobs/cp.spwc?<redacted>');
  });

  it('errors of a remote source name the location redacted', () => {
    expect(httpFetcher(PRESIGNED).location).toBe(
      'https://bucket.s3.amazonaws.com/jobs/cp.spwc?<redacted>',
    );
  });

  it('the inspector never sends a presigned query string: strings and error messages are redacted', () => {
    const data = sanitize({ checkpoint: PRESIGNED, nested: [{ url: PRESIGNED }] }) as {
      checkpoint: string;
      nested: { url: string }[];
    };
    expect(JSON.stringify(data)).not.toContain('X-Amz');
    expect(data.checkpoint).toBe('https://bucket.s3.amazonaws.com/jobs/cp.spwc?<redacted>');
    const error = sanitizeError(
      new RemoteNotFoundError(PRESIGNED, 'no such checkpoint (HTTP 404)'),
    );
    expect(JSON.stringify(error)).not.toContain('X-Amz');
  });
});
