/**
 * `--operator` resolution, shared by every Flink command: a uid is hashed to its operator id
 * exactly as Flink's StreamGraphHasherV2 does (murmur3 x64 128, seed 0, as Guava computes it), so
 * a uid works on Flink 1.x metadata, which names no operator; a unique id prefix works; a typo
 * gets "did you mean". Checked on Guava's published vectors and on the real checkpoints Flink
 * 1.20.5 and 2.3.0 wrote (2.3.0's metadata carries uids and ids: hashing one must give the other).
 */
import { describe, expect, it } from 'vitest';
import { readFlinkMetadata, resolveOperator } from '../../src/services/formats/flink/metadata.ts';
import { murmur3x64128, operatorIdOfUid } from '../../src/services/formats/flink/murmur3.ts';
import type { FlinkCheckpointMetadata } from '../../src/services/formats/flink/metadata-types.ts';
import { UnknownOperatorError } from '../../src/services/errors.ts';
import { listFlinkFixtures } from '../helpers/flink-expected.ts';

const fixtures = listFlinkFixtures();
const SLOW_JOIN = 'b04c65efe1b1b80162da73517c40e7de';

/** Guava's Murmur3Hash128Test#testKnownValues: (seed, h1, h2, ASCII input). */
const GUAVA: Array<[number, bigint, bigint, string]> = [
  [0, 0x629942693e10f867n, 0x92db0b82baeb5347n, 'hell'],
  [1, 0xa78ddff5adae8d10n, 0x128900ef20900135n, 'hello'],
  [2, 0x8a486b23f422e826n, 0xf962a2c58947765fn, 'hello '],
  [3, 0x2ea59f466f6bed8cn, 0xc610990acc428a17n, 'hello w'],
  [4, 0x79f6305a386c572cn, 0x46305aed3483b94en, 'hello wo'],
  [5, 0xc2219d213ec1f1b5n, 0xa1d8e2e0a52785bdn, 'hello wor'],
  [0, 0xe34bbc7bbc071b6cn, 0x7a433ca9c49a9347n, 'The quick brown fox jumps over the lazy dog'],
  [0, 0x658ca970ff85269an, 0x43fee3eaa68e5c3en, 'The quick brown fox jumps over the lazy cog'],
];

function caught(f: () => unknown): UnknownOperatorError {
  try {
    f();
  } catch (error) {
    expect(error).toBeInstanceOf(UnknownOperatorError);
    return error as UnknownOperatorError;
  }
  throw new Error('expected an UnknownOperatorError');
}

describe('murmur3 x64 128 equals Guava’s murmur3_128', () => {
  it.each(GUAVA)('seed %i gives Guava’s known value (h1, h2 little-endian)', (seed, h1, h2, s) => {
    const expected = Buffer.alloc(16);
    expected.writeBigUInt64LE(h1, 0);
    expected.writeBigUInt64LE(h2, 8);
    expect(Buffer.from(murmur3x64128(Buffer.from(s, 'ascii'), seed))).toEqual(expected);
  });

  it('every block-tail length 0..33 is hashed (a changed last byte changes the hash)', () => {
    const seen = new Set<string>();
    for (let n = 0; n <= 33; n++) {
      const data = Buffer.alloc(n, 7);
      seen.add(Buffer.from(murmur3x64128(data)).toString('hex'));
      if (n > 0) {
        data[n - 1] = 8;
        seen.add(Buffer.from(murmur3x64128(data)).toString('hex'));
      }
    }
    expect(seen.size).toBe(34 + 33);
  });
});

describe('a uid hashes to the operator id Flink gave it, on real checkpoints', () => {
  const v6 = fixtures.filter((f) => f.metadataVersion >= 5);
  it('there are real fixtures with uids in their metadata', () => {
    expect(v6.length).toBeGreaterThan(0);
  });
  for (const f of v6) {
    it(`${f.name}: every operator's uid hashes to its id`, async () => {
      const meta = await readFlinkMetadata(f.checkpoint);
      const withUid = meta.operators.filter((o) => o.uid !== undefined);
      expect(withUid.length).toBe(meta.operators.length);
      for (const o of withUid) expect(operatorIdOfUid(o.uid!), o.uid).toBe(o.id);
    });
  }

  for (const f of fixtures.filter((x) => x.metadataVersion < 5)) {
    it(`${f.name} (metadata v${f.metadataVersion}, no names): --operator slow-join finds the keyed operator by its hash`, async () => {
      const meta = await readFlinkMetadata(f.checkpoint);
      expect(meta.operators.every((o) => o.uid === undefined && o.name === undefined)).toBe(true);
      expect(resolveOperator(meta, 'slow-join').id).toBe(SLOW_JOIN);
      expect(f.keyedOperator).toBe(SLOW_JOIN);
      // A typo cannot be matched to a name the metadata does not hold: the error says which id
      // the uid would have had, so the user sees that it was tried as a uid.
      const e = caught(() => resolveOperator(meta, 'slow-jion'));
      expect(e.kind).toBe('unknown');
      expect(e.message).toContain(`'slow-jion' (as a uid: id ${operatorIdOfUid('slow-jion')});`);
    });
  }
});

describe('--operator by prefix and near misses', () => {
  const op = (id: string, uid?: string, name?: string) => ({
    id,
    ...(uid !== undefined ? { uid } : {}),
    ...(name !== undefined ? { name } : {}),
    parallelism: 1,
    maxParallelism: 128,
    finished: false,
    subtasks: [],
  });
  const meta: FlinkCheckpointMetadata = {
    location: '/ckpt/chk-1/_metadata',
    version: 6,
    checkpointId: 1,
    operators: [
      op('b04c65efe1b1b80162da73517c40e7de', 'slow-join', 'slow-join'),
      op('b04d0000000000000000000000000001', 'other', 'Map'),
      op('2e588ce1c86a9d46e2e85186773ce4fd', 'sink', 'Sink: sink'),
    ],
  };

  it('a unique prefix of 4+ hex digits (any case) names its operator', () => {
    expect(resolveOperator(meta, '2e58').id).toBe('2e588ce1c86a9d46e2e85186773ce4fd');
    expect(resolveOperator(meta, 'B04C6').id).toBe(SLOW_JOIN);
  });

  it('a prefix two ids share is ambiguous and lists both; a 3-digit prefix is not a prefix', () => {
    const short = caught(() => resolveOperator(meta, 'b04'));
    expect(short.kind).toBe('unknown');
    expect(short.candidates).toHaveLength(3);
    expect(caught(() => resolveOperator(meta, 'b04c65ef0')).kind).toBe('unknown');
    const shared = caught(() =>
      resolveOperator(
        { ...meta, operators: [...meta.operators, op('b04c0000000000000000000000000002')] },
        'b04c',
      ),
    );
    expect(shared.kind).toBe('ambiguous');
    expect(shared.candidates).toEqual([
      `${SLOW_JOIN} (name slow-join, uid slow-join)`,
      'b04c0000000000000000000000000002',
    ]);
  });

  it('a typo of a uid or name gets "did you mean", and the operators are still listed', () => {
    const e = caught(() => resolveOperator(meta, 'slow-jion'));
    expect(e.message).toMatch(
      /^\/ckpt\/chk-1\/_metadata: unknown operator 'slow-jion' \(did you mean 'slow-join'\?\); operators: b04c65ef/,
    );
    expect(caught(() => resolveOperator(meta, 'snik')).message).toContain("(did you mean 'sink'?)");
    // Nothing close: no guess, and no uid hint on metadata that names its operators.
    expect(caught(() => resolveOperator(meta, 'zzzzzzzz')).message).toContain(
      "unknown operator 'zzzzzzzz'; operators:",
    );
  });
});
