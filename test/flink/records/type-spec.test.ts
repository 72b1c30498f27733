/**
 * The `--type` language: every form DESIGN §8 names parses (Pojo fields in Flink's order, by
 * name); every mistake is a TypeSpecError whose character position points at it; nesting
 * 10,000 deep is that error too, not a stack overflow.
 */
import { describe, expect, it } from 'vitest';
import { TypeSpecError } from '../../../src/index.ts';
import {
  formatTypeSpec,
  parseTypeSpec,
} from '../../../src/services/formats/flink/records/type-spec.ts';

function errorOf(spec: string): TypeSpecError {
  try {
    parseTypeSpec(spec);
  } catch (e) {
    expect(e).toBeInstanceOf(TypeSpecError);
    return e as TypeSpecError;
  }
  throw new Error(`'${spec}' parsed`);
}

describe('type specs', () => {
  it('parses the basic types, arrays, Tuple, Row, Pojo (fields sorted as Flink sorts them), List, Map, nested', () => {
    for (const spec of [
      'Long',
      'Integer',
      'Short',
      'Byte',
      'Boolean',
      'Float',
      'Double',
      'Char',
      'String',
      'byte[]',
      'long[]',
      'String[]',
      'Integer[]',
      'Tuple<Long, Integer, String>',
      'Row<id Long, tags List<String>>',
      'Map<String, Tuple<Double, byte[]>>',
    ]) {
      expect(() => parseTypeSpec(spec), spec).not.toThrow();
    }
    expect(formatTypeSpec(parseTypeSpec('Pojo<zeta Long, alpha String, Beta Integer>'))).toBe(
      'Pojo<Beta Integer, alpha String, zeta Long>',
    );
    expect(formatTypeSpec(parseTypeSpec('Tuple3<Long,Integer,String>'))).toBe(
      'Tuple<Long, Integer, String>',
    );
    const t25 = `Tuple<${Array(25).fill('Byte').join(',')}>`;
    expect(parseTypeSpec(t25)).toMatchObject({ kind: 'tuple' });
  });

  it('a syntax error names the character where the spec went wrong', () => {
    const cases: [string, number, RegExp][] = [
      ['Tuple<Long,>', 12, /expected a type, found '>'/],
      ['Tuple<Long, Strin>', 13, /unknown type 'Strin'/],
      ['Row<Long>', 9, /expected a type, found '>'/],
      ['List<Long', 10, /expected '>', the spec ended/],
      ['Map<Long String>', 10, /expected ','/],
      ['long', 1, /Java primitive/],
      ['Tuple3<Long,Long>', 1, /Tuple3 has 2 field/],
      ['Pojo<a Long, a String>', 14, /field 'a' given twice/],
      ['Long Long', 6, /unexpected 'L'/],
      ['', 1, /empty/],
      ['Tuple<Long>[]', 12, /only arrays of basic types/],
    ];
    for (const [spec, at, reason] of cases) {
      const e = errorOf(spec);
      expect(e.position, spec).toBe(at);
      expect(e.message, spec).toMatch(reason);
      expect(e.message).toContain(`at character ${at}`);
      expect(e.code).toBe('ERR_SPILLWAY_TYPE_SPEC');
    }
    expect(errorOf(`Tuple<${Array(26).fill('Byte').join(',')}>`).message).toMatch(/at most 25/);
  });

  it('nesting 10,000 deep is one TypeSpecError, not a stack overflow', () => {
    const deep = `${'List<'.repeat(10_000)}Long${'>'.repeat(10_000)}`;
    const e = errorOf(deep);
    expect(e.message).toMatch(/nest deeper than 64/);
    expect(e.message.length).toBeLessThan(400);
  });
});
