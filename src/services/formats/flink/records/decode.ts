/**
 * Values as Flink's built-in serializers write them, read byte for byte (their `serialize`
 * methods in 1.20 and 2.x are the reference): a spec is compiled once into a tree of small
 * closures, so a record costs a few calls, no parsing. Every read is bounds-checked against
 * the element's end and every declared count against the bytes left, so a hostile value is a
 * {@link ValueShapeError} at its byte, never an allocation or an overrun.
 */
import type { BasicTypeName, FlinkType, PrimitiveName } from './type-spec.ts';

/** A value that cannot be what the type says; `at` is the byte (from the element's start). */
export class ValueShapeError extends Error {
  constructor(
    readonly at: number,
    reason: string,
  ) {
    super(reason);
  }
}

/** A read cursor over one element's bytes: `[pos, end)` of `buf`. */
export interface ValueCursor {
  buf: Buffer;
  pos: number;
  end: number;
}

/** A decoded value: JSON-shaped, with 64-bit integers as `bigint`. */
export type FlinkValue =
  null | boolean | number | bigint | string | FlinkValue[] | { [field: string]: FlinkValue };

/** Reads one value at `c.pos`, advancing it. */
export type ValueDecoder = (c: ValueCursor) => FlinkValue;

function need(c: ValueCursor, n: number, what: string): void {
  if (c.end - c.pos < n) {
    throw new ValueShapeError(c.pos, `${what} needs ${n} byte(s), ${c.end - c.pos} left`);
  }
}

/** A count (`writeInt`) that cannot claim more items than bytes left (each is ≥ `min` bytes). */
function count(c: ValueCursor, what: string, min: number): number {
  need(c, 4, `${what}'s length`);
  const n = c.buf.readInt32BE(c.pos);
  if (n < 0) throw new ValueShapeError(c.pos, `${what} has a negative length ${n}`);
  c.pos += 4;
  if (n * min > c.end - c.pos) {
    throw new ValueShapeError(
      c.pos - 4,
      `${what} declares ${n} item(s), more than the ${c.end - c.pos} byte(s) left hold`,
    );
  }
  return n;
}

/** `StringValue`'s variable-length int: 7 bits a byte, low bits first, high bit = more. */
function varint(c: ValueCursor, what: string): number {
  const start = c.pos;
  let value = 0;
  for (let shift = 0; ; shift += 7) {
    if (c.pos >= c.end) throw new ValueShapeError(start, `${what} runs past the element's end`);
    if (shift > 28) throw new ValueShapeError(start, `${what} is longer than 5 bytes`);
    const b = c.buf[c.pos++]!;
    value |= (b & 0x7f) << shift;
    if (b < 0x80) return value >>> 0;
  }
}

interface Latin1Slicer {
  latin1Slice(start: number, end: number): string;
}

/** `StringSerializer` (`StringValue.writeString`): length + 1 (0 = null), then each char. */
export function readString(c: ValueCursor): string | null {
  const at = c.pos;
  const first = varint(c, 'a string length');
  if (first === 0) return null;
  const len = first - 1;
  if (len > c.end - c.pos) {
    throw new ValueShapeError(
      at,
      `a string of ${len} char(s) cannot fit the ${c.end - c.pos} byte(s) left`,
    );
  }
  // Most strings are ASCII: one byte a char, read as one slice.
  const { buf } = c;
  let i = c.pos;
  const asciiEnd = c.pos + len;
  while (i < asciiEnd && buf[i]! < 0x80) i++;
  if (i === asciiEnd) {
    // Buffer's own latin1Slice: what toString('latin1') calls, without its argument checks
    // (2-3× faster on the short strings records hold).
    const s = (buf as unknown as Latin1Slicer).latin1Slice(c.pos, asciiEnd);
    c.pos = asciiEnd;
    return s;
  }
  const codes = new Uint16Array(len);
  for (let k = 0; k < len; k++) {
    const b = c.pos < c.end ? buf[c.pos]! : -1;
    if (b >= 0 && b < 0x80) {
      codes[k] = b;
      c.pos++;
    } else {
      // Java's `(char) c`: the low 16 bits of what the bytes encode.
      codes[k] = varint(c, `char ${k} of a string`) & 0xffff;
    }
  }
  let s = '';
  for (let k = 0; k < len; k += 8192) {
    s += String.fromCharCode(...codes.subarray(k, Math.min(len, k + 8192)));
  }
  return s;
}

function basic(name: BasicTypeName): ValueDecoder {
  switch (name) {
    case 'Long':
      return (c) => {
        need(c, 8, 'a Long');
        const v = c.buf.readBigInt64BE(c.pos);
        c.pos += 8;
        return v;
      };
    case 'Integer':
      return (c) => {
        need(c, 4, 'an Integer');
        const v = c.buf.readInt32BE(c.pos);
        c.pos += 4;
        return v;
      };
    case 'Short':
      return (c) => {
        need(c, 2, 'a Short');
        const v = c.buf.readInt16BE(c.pos);
        c.pos += 2;
        return v;
      };
    case 'Byte':
      return (c) => {
        need(c, 1, 'a Byte');
        return c.buf.readInt8(c.pos++);
      };
    case 'Boolean':
      // DataInput.readBoolean: any non-zero byte is true.
      return (c) => {
        need(c, 1, 'a Boolean');
        return c.buf[c.pos++] !== 0;
      };
    case 'Float':
      return (c) => {
        need(c, 4, 'a Float');
        const v = c.buf.readFloatBE(c.pos);
        c.pos += 4;
        return v;
      };
    case 'Double':
      return (c) => {
        need(c, 8, 'a Double');
        const v = c.buf.readDoubleBE(c.pos);
        c.pos += 8;
        return v;
      };
    case 'Char':
      return (c) => {
        need(c, 2, 'a Char');
        const v = String.fromCharCode(c.buf.readUInt16BE(c.pos));
        c.pos += 2;
        return v;
      };
    case 'String':
      return readString;
  }
}

const PRIMITIVE_SIZES: Record<PrimitiveName, number> = {
  long: 8,
  int: 4,
  short: 2,
  byte: 1,
  boolean: 1,
  float: 4,
  double: 8,
  char: 2,
};

const BOXED: Record<PrimitiveName, BasicTypeName> = {
  long: 'Long',
  int: 'Integer',
  short: 'Short',
  byte: 'Byte',
  boolean: 'Boolean',
  float: 'Float',
  double: 'Double',
  char: 'Char',
};

/** `…PrimitiveArraySerializer`: `writeInt(length)`, then each element; `byte[]` as base64. */
function primitiveArray(element: PrimitiveName): ValueDecoder {
  const size = PRIMITIVE_SIZES[element];
  const what = `a ${element}[]`;
  if (element === 'byte') {
    return (c) => {
      const n = count(c, what, 1);
      const v = c.buf.toString('base64', c.pos, c.pos + n);
      c.pos += n;
      return v;
    };
  }
  if (element === 'char') {
    return (c) => {
      const n = count(c, what, 2);
      let s = '';
      for (let k = 0; k < n; k++) s += String.fromCharCode(c.buf.readUInt16BE(c.pos + 2 * k));
      c.pos += 2 * n;
      return s;
    };
  }
  const one = basic(BOXED[element]);
  return (c) => {
    const n = count(c, what, size);
    const out: FlinkValue[] = new Array<FlinkValue>(n);
    for (let k = 0; k < n; k++) out[k] = one(c);
    return out;
  };
}

/** `String[]`: `StringArraySerializer`; other boxed arrays: `GenericArraySerializer` (true = present). */
function basicArray(element: BasicTypeName): ValueDecoder {
  const what = `a ${element}[]`;
  if (element === 'String') {
    return (c) => {
      const n = count(c, what, 1);
      const out: FlinkValue[] = new Array<FlinkValue>(n);
      for (let k = 0; k < n; k++) out[k] = readString(c);
      return out;
    };
  }
  const one = basic(element);
  return (c) => {
    const n = count(c, what, 1);
    const out: FlinkValue[] = new Array<FlinkValue>(n);
    for (let k = 0; k < n; k++) {
      need(c, 1, `element ${k} of ${what}'s null flag`);
      out[k] = c.buf[c.pos++] !== 0 ? one(c) : null;
    }
    return out;
  };
}

/** Flink's `RowKind` byte values, as `Row.toString` shows them. */
const ROW_KINDS = ['+I', '-U', '+U', '-D'];

/**
 * `RowSerializer` (1.11+ and 2.x): a bit mask, most significant bit first — two bits of
 * `RowKind`, then one per field (set = null) — then each non-null field. A row kind other than
 * insert is kept as `$kind`.
 */
function row(fields: readonly { name: string; decode: ValueDecoder }[]): ValueDecoder {
  const bits = 2 + fields.length;
  const maskBytes = Math.ceil(bits / 8);
  return (c) => {
    need(c, maskBytes, `a Row's ${maskBytes}-byte null mask`);
    const at = c.pos;
    c.pos += maskBytes;
    const bit = (i: number): boolean => (c.buf[at + (i >> 3)]! & (0x80 >> (i & 7))) !== 0;
    const out: { [field: string]: FlinkValue } = {};
    const kind = (bit(0) ? 1 : 0) + (bit(1) ? 2 : 0);
    if (kind !== 0) out.$kind = ROW_KINDS[kind]!;
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i]!;
      out[f.name] = bit(2 + i) ? null : f.decode(c);
    }
    return out;
  };
}

/**
 * `PojoSerializer`: a flag byte (1 null, 2 this class; 4 and 8 name a subclass, which needs
 * the subclass's own serializer), then per field in name order a null flag (true = null) and
 * the value.
 */
function pojo(fields: readonly { name: string; decode: ValueDecoder }[]): ValueDecoder {
  return (c) => {
    need(c, 1, "a POJO's flag byte");
    const at = c.pos;
    const flag = c.buf[c.pos++]!;
    if (flag === 1) return null;
    if (flag === 4 || flag === 8) {
      throw new ValueShapeError(
        at,
        `POJO flag ${flag}: a subclass, written by a serializer the spec does not name`,
      );
    }
    if (flag !== 2) throw new ValueShapeError(at, `unknown POJO flag ${flag} (1 null, 2 a value)`);
    const out: { [field: string]: FlinkValue } = {};
    for (const f of fields) {
      need(c, 1, `POJO field ${f.name}'s null flag`);
      out[f.name] = c.buf[c.pos++] !== 0 ? null : f.decode(c);
    }
    return out;
  };
}

/**
 * The decoder of a parsed type spec.
 *
 * @example
 * ```ts
 * const decode = compileDecoder(parseTypeSpec('Tuple<Long,String>'));
 * decode({ buf, pos: 0, end: buf.length }); // [42n, 'é']
 * ```
 */
export function compileDecoder(type: FlinkType): ValueDecoder {
  switch (type.kind) {
    case 'basic':
      return basic(type.name);
    case 'primitiveArray':
      return primitiveArray(type.element);
    case 'basicArray':
      return basicArray(type.element);
    case 'tuple': {
      // TupleSerializer: each field in order, no null handling (a Tuple's fields are non-null).
      const fields = type.fields.map(compileDecoder);
      return (c) => {
        const out: FlinkValue[] = new Array<FlinkValue>(fields.length);
        for (let i = 0; i < fields.length; i++) out[i] = fields[i]!(c);
        return out;
      };
    }
    case 'row':
      return row(type.fields.map((f) => ({ name: f.name, decode: compileDecoder(f.type) })));
    case 'pojo':
      return pojo(type.fields.map((f) => ({ name: f.name, decode: compileDecoder(f.type) })));
    case 'list': {
      // ListSerializer: writeInt(size), then each element (no null flag).
      const element = compileDecoder(type.element);
      return (c) => {
        const n = count(c, 'a List', 1);
        const out: FlinkValue[] = new Array<FlinkValue>(n);
        for (let k = 0; k < n; k++) out[k] = element(c);
        return out;
      };
    }
    case 'map': {
      // MapSerializer: writeInt(size), then per entry the key, a null flag (true = null), the value.
      const key = compileDecoder(type.key);
      const value = compileDecoder(type.value);
      return (c) => {
        const n = count(c, 'a Map', 2);
        const out: FlinkValue[] = new Array<FlinkValue>(n);
        for (let k = 0; k < n; k++) {
          const kv = key(c);
          need(c, 1, `a Map value's null flag`);
          out[k] = [kv, c.buf[c.pos++] !== 0 ? null : value(c)];
        }
        return out;
      };
    }
  }
}
