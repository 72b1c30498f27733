/**
 * The checkpoint half of the test kit: the repository's own test vectors, small real
 * checkpoints made by the project's generator, the limits that spread them over many spill
 * files, and each channel's bytes as the checkpoint itself holds them.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { makeCheckpoint, type MadeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import {
  readCheckpoint,
  type ReadCheckpointOptions,
} from '../../src/services/formats/spwc/reader.ts';
import { channelKey } from '../../src/services/channel.ts';
import type { SpillLimits } from '../../src/services/spill/limits.ts';
import { removeDir, tempDir } from './temp.ts';

/** test/fixtures/vectors/: made by test/fixtures/make-vectors.ts, described in its README. */
export const VECTORS_DIR = fileURLToPath(new URL('../fixtures/vectors/', import.meta.url));

/** The path of one of the repository's test vectors, e.g. `vector('tiny.spwc')`. */
export function vector(name: string): string {
  return join(VECTORS_DIR, name);
}

/**
 * Small bounds so a checkpoint of 128–512 KiB spreads over several spill files of several
 * segments each, and several read chunks and buffers per file: every lazy open and rotation
 * happens.
 */
export const SMALL_LIMITS: SpillLimits = {
  maxSpillFileBytes: 64 * 1024,
  maxSegmentBytes: 16 * 1024,
  bufferBytes: 4 * 1024,
  readChunkBytes: 16 * 1024,
};

export interface SmallCheckpointOptions {
  /** Payload in KiB, default 128. */
  kib?: number;
  /** Generator seed, default 7. */
  seed?: number;
  /** Default 1 gate. */
  gates?: number;
  /** Channels per gate, default 3. */
  channels?: number;
  /** Largest entry payload, default 6 KiB. */
  maxEntryBytes?: number;
  /** File name inside `dir`, default `in.spwc`. */
  name?: string;
}

/** A deterministic checkpoint made by the project's generator in `dir` (default 128 KiB, 1×3). */
export function makeSmallCheckpoint(
  dir: string,
  options: SmallCheckpointOptions = {},
): Promise<MadeCheckpoint> {
  return makeCheckpoint({
    out: join(dir, options.name ?? 'in.spwc'),
    mb: (options.kib ?? 128) / 1024,
    seed: options.seed ?? 7,
    gates: options.gates ?? 1,
    channels: options.channels ?? 3,
    maxEntryBytes: options.maxEntryBytes ?? 6 * 1024,
  });
}

/** What {@link suiteCheckpoint} made: the checkpoint and the temp dir it lives in. */
export interface SuiteCheckpoint {
  readonly made: MadeCheckpoint;
  readonly path: string;
  readonly dir: string;
}

/**
 * One checkpoint for every test of a file: `make(dir)` runs in `beforeAll`, in a temp dir of its
 * own that `afterAll` removes. Read the fields inside tests and hooks, not at collection time.
 */
export function suiteCheckpoint(make: (dir: string) => Promise<MadeCheckpoint>): SuiteCheckpoint {
  let dir = '';
  let made: MadeCheckpoint | undefined;
  beforeAll(async () => {
    dir = await tempDir();
    made = await make(dir);
  });
  afterAll(async () => {
    if (dir !== '') await removeDir(dir);
  });
  return {
    get made() {
      return made!;
    },
    get path() {
      return made!.path;
    },
    get dir() {
      return dir;
    },
  };
}

/**
 * Every channel's bytes in a checkpoint file, concatenated in file order, keyed by
 * `channelKey` (a channel of only zero-length entries maps to an empty buffer). Computed from
 * the file by the reader alone, independently of any recovery. `options` reach the reader (a
 * remote checkpoint's endpoint and retry policy, a signal).
 */
export async function channelBytes(
  path: string,
  options?: ReadCheckpointOptions,
): Promise<Map<string, Buffer>> {
  const parts = new Map<string, Buffer[]>();
  let current: Buffer[] = [];
  await readCheckpoint(
    path,
    {
      onEntry(gate, channel) {
        const key = channelKey({ gate, channel });
        current = parts.get(key) ?? [];
        parts.set(key, current);
      },
      // The reader reuses its buffer: copy.
      onPayload: (chunk) => void current.push(Buffer.from(chunk)),
    },
    options,
  );
  return new Map([...parts].map(([k, v]) => [k, Buffer.concat(v)]));
}
