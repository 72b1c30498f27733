/**
 * Key groups exactly as Flink computes them (DESIGN.md §3): hand-computed vectors, the
 * repository's copy of the shared hash/key vectors, and a property check against the
 * independent BigInt implementation in test/helpers/rescale-reference.ts.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  KEY_HASH_SEED,
  defaultMaxParallelism,
  hashKeyBytes,
  keyGroupForKeyHash,
  murmurHash,
  operatorForKeyHash,
  operatorIndexForKeyGroup,
} from '../../../src/services/rescale/key-groups.ts';
import {
  refArraysHashCode,
  refDefaultMaxParallelism,
  refMurmurHash,
} from '../../helpers/rescale-reference.ts';

describe('Arrays.hashCode(byte[]) by hand', () => {
  it('empty key hashes to the seed 1; [1] to 31·1+1 = 32; [-1] (0xff, signed) to 31-1 = 30', () => {
    expect(hashKeyBytes(KEY_HASH_SEED, Buffer.alloc(0))).toBe(1);
    expect(hashKeyBytes(KEY_HASH_SEED, Buffer.from([1]))).toBe(32);
    expect(hashKeyBytes(KEY_HASH_SEED, Buffer.from([0xff]))).toBe(30);
  });

  it('"ab" = 31·(31·1 + 97) + 98 = 4066; eight zero bytes = 31^8 mod 2^32 as a signed int', () => {
    expect(hashKeyBytes(KEY_HASH_SEED, Buffer.from('ab'))).toBe(4066);
    // 31^8 = 852891037441; mod 2^32 = 2487512833; as int32: 2487512833 - 2^32 = -1807454463.
    expect(hashKeyBytes(KEY_HASH_SEED, Buffer.alloc(8))).toBe(-1807454463);
  });

  it('a key hashed in pieces equals the key hashed whole (keys cut across entries)', () => {
    const key = Buffer.from('abcdefgh');
    const split = hashKeyBytes(hashKeyBytes(KEY_HASH_SEED, key, 0, 3), key, 3, 8);
    expect(split).toBe(hashKeyBytes(KEY_HASH_SEED, key));
  });
});

describe('murmurHash(int): the shared hash vectors (a copy kept in this repository)', () => {
  const vectors: [number, number][] = [
    [0, 593689054],
    [1, 68075478],
    [2, 1085422463],
    [-1, 1982413648],
    [42, 1134849565],
    [2147483647, 1653689534],
  ];
  for (const [input, output] of vectors) {
    it(`murmurHash(${input}) = ${output}`, () => {
      expect(murmurHash(input)).toBe(output);
      expect(refMurmurHash(input)).toBe(output);
    });
  }
});

describe('key vectors: Arrays.hashCode → murmur → key group at M = 128 → operator at P = 2', () => {
  const vectors: [string, Buffer, number, number, number, number][] = [
    ['empty key', Buffer.alloc(0), 1, 68075478, 86, 1],
    ['eight zero bytes', Buffer.alloc(8), -1807454463, 1701448232, 40, 0],
    ['"abcdefgh"', Buffer.from('abcdefgh'), -547780731, 1318104826, 122, 1],
  ];
  for (const [name, key, hash, murmur, group, operator] of vectors) {
    it(`${name} → ${hash} → ${murmur} → ${group} → ${operator}`, () => {
      const h = hashKeyBytes(KEY_HASH_SEED, key);
      expect(h).toBe(hash);
      expect(murmurHash(h)).toBe(murmur);
      expect(keyGroupForKeyHash(h, 128)).toBe(group);
      expect(operatorIndexForKeyGroup(128, 2, group)).toBe(operator);
      expect(operatorForKeyHash(h, 2, 128)).toBe(operator);
    });
  }
});

describe("default max parallelism (Flink's rule)", () => {
  const vectors: [number, number][] = [
    [1, 128],
    [2, 128],
    [100, 256],
    [200, 512],
    [30000, 32768],
  ];
  for (const [p, m] of vectors) {
    it(`P = ${p} → M = ${m}`, () => {
      expect(defaultMaxParallelism(p)).toBe(m);
      expect(refDefaultMaxParallelism(p)).toBe(m);
    });
  }
});

describe('against the independent implementation', () => {
  test.prop([fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })])(
    'murmurHash agrees with the BigInt reference for every int',
    (code) => {
      expect(murmurHash(code)).toBe(refMurmurHash(code));
    },
  );

  test.prop([fc.uint8Array({ maxLength: 64 })])(
    'Arrays.hashCode agrees with the BigInt reference for any bytes',
    (bytes) => {
      expect(hashKeyBytes(KEY_HASH_SEED, bytes)).toBe(refArraysHashCode(bytes));
    },
  );

  test.prop([fc.integer({ min: 1, max: 32768 })])(
    'defaultMaxParallelism agrees with the loop reference',
    (p) => {
      expect(defaultMaxParallelism(p)).toBe(refDefaultMaxParallelism(p));
    },
  );

  test.prop([
    fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    fc
      .integer({ min: 1, max: 32768 })
      .chain((m) => fc.tuple(fc.constant(m), fc.integer({ min: 1, max: m }))),
  ])('the operator of a key hash is in 0..P-1 and follows keyGroup·P/M', (hash, [m, p]) => {
    const group = refMurmurHash(hash) % m;
    const operator = operatorForKeyHash(hash, p, m);
    expect(operator).toBe(Math.floor((group * p) / m));
    expect(operator).toBeGreaterThanOrEqual(0);
    expect(operator).toBeLessThan(p);
  });
});
