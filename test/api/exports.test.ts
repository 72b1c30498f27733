/**
 * The package entry is its surface (DESIGN §5: "keep it this small"): what a recovery needs,
 * the errors it can end with, the spill root's listing and sweep, and types. Generators and the
 * SPWC reader and writer are `spillway/testing`, the key-group maths `spillway/rescale`.
 */
import { describe, expect, it } from 'vitest';
import * as entry from '../../src/index.ts';
import * as testing from '../../src/testing.ts';
import * as rescale from '../../src/rescale.ts';

/** The entry's runtime names besides the error classes, each for a reason. */
const NAMED: Record<string, string> = {
  recoverChannelState: 'the library (DESIGN §5)',
  channelKey: "a channel's key, as reports and listings name it",
  listSpillRoot: "what a spill root holds, by owner and task (the CLI's `ls`)",
  sweepSpillRoot: "removes dead owners' spill dirs (the CLI's `sweep`)",
  suppressedOf: 'the later errors of a failure (G5), for errors from outside Spillway too',
  VERSION: 'the package version',
  isSpillwayError: 'narrows an unknown error to the union of our error classes (switch on code)',
  listFlinkCheckpoint: "a Flink checkpoint's operators and channel state (DESIGN §7, `flink ls`)",
  keyHash: 'the key hash of a key type the CLI does not know, for a Flink rescale (DESIGN §7)',
  readFlinkRecords: "a Flink checkpoint's in-flight elements, decoded (DESIGN §8, `flink records`)",
  recoverToDirectory:
    "the CLI's `recover --out` with its one-step publish (G10), for apps (DESIGN §8)",
  rewriteFlinkCheckpoint:
    'a Flink checkpoint without the elements named, which Flink restores (DESIGN §8, `flink rewrite`)',
};

/**
 * Names beyond the aim of 30, each with its reason: the errors of the Flink input and of the
 * remote reads' G11/G12 bounds are new failures a caller must be able to tell apart, and the
 * three names above that DESIGN §7 and the error union ask for.
 */
const BEYOND_30: Record<string, string> = {
  UnknownOperatorError: 'a Flink operator that matches none or several (exit 2, candidates listed)',
  RemoteTimeoutError: "a remote read past its hard deadline (G11), not a retry's failure",
  RemoteUnsupportedError: 'a server that answers encoded bytes or no size (G12): bad input',
  isSpillwayError: NAMED.isSpillwayError!,
  listFlinkCheckpoint: NAMED.listFlinkCheckpoint!,
  keyHash: NAMED.keyHash!,
  readFlinkRecords: NAMED.readFlinkRecords!,
  TypeSpecError: 'a `--type` spec that does not parse, naming the character (exit 2)',
  recoverToDirectory: NAMED.recoverToDirectory!,
  rewriteFlinkCheckpoint: NAMED.rewriteFlinkCheckpoint!,
  RewriteRefusedError:
    'a rewrite refused before anything is written: a selector or NEWDIR (exit 2)',
};

describe('package entry', () => {
  it('exports at most 30 runtime names, and a reason for each beyond: the library, its errors, the spill-root listing and sweep', () => {
    const names = Object.keys(entry).sort();
    const errors = names.filter((n) => /^[A-Z]\w*Error$/.test(n));
    const others = names.filter((n) => !/^[A-Z]\w*Error$/.test(n));
    console.log(
      `package entry: ${names.length} runtime exports (${errors.length} error classes, ${others.join(', ')})`,
    );
    for (const [name, reason] of Object.entries(BEYOND_30))
      console.log(`  beyond 30: ${name} — ${reason}`);
    for (const name of Object.keys(BEYOND_30)) expect(names).toContain(name);
    expect(names.length).toBeLessThanOrEqual(30 + Object.keys(BEYOND_30).length);
    expect(others).toEqual(Object.keys(NAMED).sort());
    for (const name of errors) {
      expect((entry as Record<string, unknown>)[name]).toBeTypeOf('function');
      expect(
        new ((entry as Record<string, unknown>)[name] as new (...a: never[]) => Error)(),
      ).toBeInstanceOf(entry.SpillwayError);
    }
  });

  it('has one function named recoverChannelState', () => {
    expect(entry.recoverChannelState.name).toBe('recoverChannelState');
    expect(Object.keys(testing)).not.toContain('recoverChannelState');
    expect(Object.keys(rescale)).not.toContain('recoverChannelState');
  });

  it('spillway/testing has the generators and the SPWC reader and writer; spillway/rescale the key-group maths', () => {
    expect(Object.keys(testing).sort()).toEqual(
      [
        'CheckpointWriter',
        'FLINK_METADATA_MAGIC',
        'detectCheckpointFormat',
        'makeCheckpoint',
        'makeRecordCheckpoint',
        'readCheckpoint',
        'readCheckpointEntries',
      ].sort(),
    );
    expect(Object.keys(rescale).sort()).toEqual([
      'KEY_HASH_SEED',
      'defaultMaxParallelism',
      'hashKeyBytes',
      'keyGroupForKeyHash',
      'murmurHash',
      'operatorIndexForKeyGroup',
    ]);
    for (const name of Object.keys(testing)) expect(Object.keys(entry)).not.toContain(name);
    for (const name of Object.keys(rescale)) expect(Object.keys(entry)).not.toContain(name);
  });
});
