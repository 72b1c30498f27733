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
};

describe('package entry', () => {
  it('exports at most 30 runtime names: the library, its errors, the spill-root listing and sweep', () => {
    const names = Object.keys(entry).sort();
    const errors = names.filter((n) => /Error$/.test(n));
    const others = names.filter((n) => !/Error$/.test(n));
    console.log(
      `package entry: ${names.length} runtime exports (${errors.length} error classes, ${others.join(', ')})`,
    );
    expect(names.length).toBeLessThanOrEqual(30);
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
    expect(Object.keys(testing).sort()).toEqual([
      'CheckpointWriter',
      'makeCheckpoint',
      'makeRecordCheckpoint',
      'readCheckpoint',
    ]);
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
