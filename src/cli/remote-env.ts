/**
 * The CLI's remote-read settings: `--s3-endpoint` and the retry policy's environment knobs
 * (docs/cli.md). Tuning by environment keeps the documented command line as it is; tests use
 * it to make a stall detectable in a second instead of thirty.
 */
import { OPTION_RANGES } from '../services/option-ranges.ts';
import type { RemoteOptions } from '../services/locations/remote-options.ts';
import { isHttpUrl } from '../services/locations/schemes.ts';
import { UsageError } from './args.ts';

const KNOBS = {
  SPILLWAY_REMOTE_RETRIES: 'maxRetries',
  SPILLWAY_REMOTE_BACKOFF_MS: 'backoffMs',
  SPILLWAY_REMOTE_STALL_MS: 'stallTimeoutMs',
  SPILLWAY_REMOTE_DEADLINE_MS: 'deadlineMs',
} as const;

/**
 * The remote options of a command from its environment and `--s3-endpoint`.
 *
 * @example
 * ```ts
 * remoteOptionsFromEnv({ SPILLWAY_REMOTE_STALL_MS: '1000' }, 'http://127.0.0.1:9000');
 * // { s3: { endpoint: 'http://127.0.0.1:9000' }, stallTimeoutMs: 1000 }
 * ```
 */
export function remoteOptionsFromEnv(
  env: NodeJS.ProcessEnv,
  s3Endpoint: string | undefined,
): RemoteOptions {
  // The pinned SDK release supports Node 20; its notice that *later* releases will not is not
  // news for a user of this command, and would be the only line on stderr besides the result.
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const options: RemoteOptions = {};
  if (s3Endpoint !== undefined) {
    if (!isHttpUrl(s3Endpoint)) {
      throw new UsageError(`--s3-endpoint must be an http(s):// URL, got '${s3Endpoint}'`);
    }
    options.s3 = { endpoint: s3Endpoint };
  }
  for (const [name, key] of Object.entries(KNOBS)) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const n = Number(raw);
    const { min, max } = OPTION_RANGES[`remote.${key}`];
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new UsageError(`${name} must be an integer from ${min} to ${max}, got '${raw}'`);
    }
    options[key] = n;
  }
  return options;
}
