/**
 * The checkpoint half of the test kit: the repository's own test vectors and each channel's
 * bytes as a checkpoint itself holds them.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readCheckpoint } from '../../src/services/checkpoint/reader.ts';
import { channelKey } from '../../src/services/channel.ts';

/** test/fixtures/vectors/: made by test/fixtures/make-vectors.ts, described in its README. */
export const VECTORS_DIR = fileURLToPath(new URL('../fixtures/vectors/', import.meta.url));

/** The path of one of the repository's test vectors, e.g. `vector('tiny.spwc')`. */
export function vector(name: string): string {
  return join(VECTORS_DIR, name);
}

/**
 * Every channel's bytes in a checkpoint file, concatenated in file order, keyed by
 * `channelKey` (a channel of only zero-length entries maps to an empty buffer). Computed from
 * the file by the reader alone, independently of any recovery.
 */
export async function channelBytes(path: string): Promise<Map<string, Buffer>> {
  const parts = new Map<string, Buffer[]>();
  let current: Buffer[] = [];
  await readCheckpoint(path, {
    onEntry(gate, channel) {
      const key = channelKey({ gate, channel });
      current = parts.get(key) ?? [];
      parts.set(key, current);
    },
    // The reader reuses its buffer: copy.
    onPayload: (chunk) => void current.push(Buffer.from(chunk)),
  });
  return new Map([...parts].map(([k, v]) => [k, Buffer.concat(v)]));
}
