/**
 * DESIGN §8 `flink records` lines: each element is one JSON object, its fields in one order
 * (position, index, kind, bytes, then timestamp, key, keyGroup, value, end, … stitched), 64-bit
 * integers exact, an untyped value's base64 as it is — whether the line is a plain record's
 * (the common line, made without the general loop) or any other element's.
 */
import { describe, expect, it } from 'vitest';
import { ElementLines } from '../../../src/services/formats/flink/records/json.ts';

const input = { operator: 'slow-join', subtask: 2, side: 'input' as const, gate: 1, channel: 0 };
const output = {
  operator: 'to-record-a',
  subtask: 0,
  side: 'output' as const,
  partition: 0,
  subpartition: 3,
};

describe('DESIGN §8 flink records lines', () => {
  it('a record line holds its fields in the contract order, 64-bit integers exact', () => {
    const lines = new ElementLines(true);
    const line = lines.line({
      ...input,
      index: 4,
      kind: 'record',
      bytes: 20,
      timestamp: -9223372036854775808n,
      key: 9007199254740993n,
      keyGroup: 77,
      value: 'AAEC/w==',
      stitched: { subtask: 0, partition: 0, subpartition: 2, bytes: 5 },
    });
    expect(line).toBe(
      '{"operator":"slow-join","subtask":2,"side":"input","gate":1,"channel":0,"index":4,' +
        '"kind":"record","bytes":20,"timestamp":-9223372036854775808,"key":9007199254740993,' +
        '"keyGroup":77,"value":"AAEC/w==",' +
        '"stitched":{"subtask":0,"partition":0,"subpartition":2,"bytes":5}}\n',
    );
  });

  it('lines of channels that alternate keep each its own position', () => {
    const lines = new ElementLines(true);
    const got = [input, output, input, { ...input, channel: 1 }, output].map((p, i) =>
      JSON.parse(lines.line({ ...p, index: i, kind: 'record', bytes: 1, value: '' })),
    );
    expect(got.map((g) => [g.side, g.gate ?? g.partition, g.channel ?? g.subpartition])).toEqual([
      ['input', 1, 0],
      ['output', 0, 3],
      ['input', 1, 0],
      ['input', 1, 1],
      ['output', 0, 3],
    ]);
    expect(got.map((g) => g.operator)).toEqual([
      'slow-join',
      'to-record-a',
      'slow-join',
      'slow-join',
      'to-record-a',
    ]);
  });

  it('other elements and typed values go through the general order', () => {
    const typed = new ElementLines(false);
    expect(
      typed.line({ ...input, index: 0, kind: 'record', bytes: 9, value: { f0: 1n, f1: 'é' } }),
    ).toBe(
      '{"operator":"slow-join","subtask":2,"side":"input","gate":1,"channel":0,"index":0,' +
        '"kind":"record","bytes":9,"value":{"f0":1,"f1":"é"}}\n',
    );
    const untyped = new ElementLines(true);
    expect(
      untyped.line({ ...output, index: 0, kind: 'partial', bytes: 3, end: 'head', value: 'AAA=' }),
    ).toBe(
      '{"operator":"to-record-a","subtask":0,"side":"output","partition":0,"subpartition":3,' +
        '"index":0,"kind":"partial","bytes":3,"value":"AAA=","end":"head"}\n',
    );
    expect(untyped.line({ ...input, index: 1, kind: 'watermark', bytes: 9, timestamp: 7n })).toBe(
      '{"operator":"slow-join","subtask":2,"side":"input","gate":1,"channel":0,"index":1,' +
        '"kind":"watermark","bytes":9,"timestamp":7}\n',
    );
  });
});
