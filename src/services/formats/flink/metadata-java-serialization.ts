/**
 * Walks one Java-serialized object (`ObjectOutputStream.writeObject`) without interpreting it:
 * the `CheckpointProperties` trailer of `_metadata` v4+. Flink's `MetadataV4Serializer` reads it
 * with `new ObjectInputStream(dis).readObject()`, so a `_metadata` whose trailer is missing or cut
 * short does not load in Flink; walking the grammar (Java Object Serialization Specification,
 * §6.4) tells exactly where such a trailer ends or breaks, with no class loaded and no value kept.
 *
 * Covered: objects with default serialization and with `writeObject` annotations, enums,
 * strings, arrays, class descriptors (incl. proxies), back references, block data, null, reset.
 * An `Externalizable` class without block-data mode, or an exception marker, is refused (neither
 * can be walked without the class; CheckpointProperties has neither).
 */
import { CorruptCheckpointError } from '../../errors.ts';
import type { MetadataInput } from './metadata-input.ts';

const STREAM_MAGIC = 0xaced;
const STREAM_VERSION = 5;
const TC_NULL = 0x70;
const TC_REFERENCE = 0x71;
const TC_CLASSDESC = 0x72;
const TC_OBJECT = 0x73;
const TC_STRING = 0x74;
const TC_ARRAY = 0x75;
const TC_CLASS = 0x76;
const TC_BLOCKDATA = 0x77;
const TC_ENDBLOCKDATA = 0x78;
const TC_RESET = 0x79;
const TC_BLOCKDATALONG = 0x7a;
const TC_EXCEPTION = 0x7b;
const TC_LONGSTRING = 0x7c;
const TC_PROXYCLASSDESC = 0x7d;
const TC_ENUM = 0x7e;
const BASE_WIRE_HANDLE = 0x7e0000;

const SC_WRITE_METHOD = 0x01;
const SC_SERIALIZABLE = 0x02;
const SC_EXTERNALIZABLE = 0x04;
const SC_BLOCK_DATA = 0x08;

/** Java serialization nests one level per object field; Flink's trailer is 3 levels deep. */
const MAX_DEPTH = 64;

const PRIMITIVE_BYTES: Record<string, number> = { B: 1, C: 2, D: 8, F: 4, I: 4, J: 8, S: 2, Z: 1 };

interface ClassDesc {
  kind: 'class';
  name: string;
  flags: number;
  /** Field type codes in order ('B'…'Z', 'L', '['). */
  fields: string[];
  superDesc: ClassDesc | null;
}

/** What a back reference may point at: only class descriptors matter for the walk. */
type Handle = ClassDesc | { kind: 'other' };

/**
 * Walks one serialized object at the input's position, leaving the position just after it.
 *
 * @throws CorruptCheckpointError on a bad stream header, an unknown type code, a bad back
 *   reference, or a truncation anywhere inside.
 * @example
 * ```ts
 * await skipJavaSerializedObject(input, 'CheckpointProperties trailer');
 * ```
 */
export async function skipJavaSerializedObject(input: MetadataInput, what: string): Promise<void> {
  const at = input.position;
  const magic = await input.uint16(`${what} stream magic`);
  if (magic !== STREAM_MAGIC) {
    throw input.corrupt(
      at,
      `${what}: not a Java serialization stream (magic 0x${magic.toString(16)}, expected 0xaced)`,
    );
  }
  const version = await input.uint16(`${what} stream version`);
  if (version !== STREAM_VERSION) {
    throw input.corrupt(at + 2, `${what}: Java serialization stream version ${version}, not 5`);
  }
  const walker = new Walker(input, what);
  try {
    await walker.topLevelObject();
  } catch (error) {
    // Name the trailer in every reason, also for a string or count cut short inside it.
    if (error instanceof CorruptCheckpointError && !error.reason.startsWith(what)) {
      throw input.corrupt(error.offset, `${what}: ${error.reason}`);
    }
    throw error;
  }
}

class Walker {
  private handles: Handle[] = [];

  constructor(
    private readonly input: MetadataInput,
    private readonly what: string,
  ) {}

  private bad(at: number, reason: string): Error {
    return this.input.corrupt(at, `${this.what}: ${reason}`);
  }

  /** `readObject()` at the top: resets may come first, block data may not. */
  async topLevelObject(): Promise<void> {
    for (;;) {
      const at = this.input.position;
      const tc = await this.input.uint8('type code');
      if (tc === TC_RESET) {
        this.handles = [];
        continue;
      }
      if (tc === TC_BLOCKDATA || tc === TC_BLOCKDATALONG) {
        throw this.bad(at, 'block data where an object was expected');
      }
      await this.objectAfterCode(tc, at, 0);
      return;
    }
  }

  /** One `content` (object or block data) whose type code was just read; false at TC_ENDBLOCKDATA. */
  private async content(depth: number): Promise<boolean> {
    const at = this.input.position;
    const tc = await this.input.uint8('type code');
    if (tc === TC_ENDBLOCKDATA) return false;
    if (tc === TC_BLOCKDATA) {
      this.input.skip(await this.input.uint8('block data length'), 'block data');
      return true;
    }
    if (tc === TC_BLOCKDATALONG) {
      this.input.skip(await this.input.nonNegativeInt32('block data length'), 'block data');
      return true;
    }
    if (tc === TC_RESET) {
      this.handles = [];
      return true;
    }
    await this.objectAfterCode(tc, at, depth);
    return true;
  }

  /** Contents up to and including TC_ENDBLOCKDATA (class and object annotations). */
  private async annotation(depth: number): Promise<void> {
    while (await this.content(depth + 1)) {
      /* each content walked */
    }
  }

  private async object(depth: number): Promise<Handle | null> {
    const at = this.input.position;
    const tc = await this.input.uint8('type code');
    return this.objectAfterCode(tc, at, depth);
  }

  private async objectAfterCode(tc: number, at: number, depth: number): Promise<Handle | null> {
    if (depth > MAX_DEPTH) throw this.bad(at, `objects nested deeper than ${MAX_DEPTH}`);
    switch (tc) {
      case TC_NULL:
        return null;
      case TC_REFERENCE:
        return this.handleAt(at);
      case TC_CLASSDESC:
      case TC_PROXYCLASSDESC:
        return this.newClassDesc(tc, depth);
      case TC_STRING: {
        this.handles.push({ kind: 'other' });
        this.input.skip(await this.input.uint16('string length'), 'string');
        return { kind: 'other' };
      }
      case TC_LONGSTRING: {
        this.handles.push({ kind: 'other' });
        this.input.skip(await this.input.nonNegativeInt64('long string length'), 'long string');
        return { kind: 'other' };
      }
      case TC_CLASS: {
        await this.classDesc(depth + 1);
        this.handles.push({ kind: 'other' });
        return { kind: 'other' };
      }
      case TC_ENUM: {
        await this.classDesc(depth + 1);
        this.handles.push({ kind: 'other' });
        const nameAt = this.input.position;
        const name = await this.object(depth + 1);
        if (name === null || name.kind !== 'other') {
          throw this.bad(nameAt, 'an enum constant without a name');
        }
        return { kind: 'other' };
      }
      case TC_ARRAY:
        return this.array(at, depth);
      case TC_OBJECT:
        return this.newObject(at, depth);
      case TC_EXCEPTION:
        throw this.bad(at, 'the stream holds a serialization exception');
      default:
        throw this.bad(at, `unknown type code 0x${tc.toString(16)}`);
    }
  }

  /** A classDesc: new, null, or a back reference to one. */
  private async classDesc(depth: number): Promise<ClassDesc | null> {
    const at = this.input.position;
    const tc = await this.input.uint8('class descriptor type code');
    if (tc === TC_NULL) return null;
    if (tc === TC_CLASSDESC || tc === TC_PROXYCLASSDESC) return this.newClassDesc(tc, depth);
    if (tc === TC_REFERENCE) {
      const h = await this.handleAt(at);
      if (h.kind !== 'class')
        throw this.bad(at, 'a back reference to a non-class where a class was expected');
      return h;
    }
    throw this.bad(at, `unknown class descriptor type code 0x${tc.toString(16)}`);
  }

  private async handleAt(at: number): Promise<Handle> {
    const wire = await this.input.int32('back reference');
    const h = this.handles[wire - BASE_WIRE_HANDLE];
    if (h === undefined)
      throw this.bad(at, `back reference 0x${(wire >>> 0).toString(16)} to nothing`);
    return h;
  }

  private async newClassDesc(tc: number, depth: number): Promise<ClassDesc> {
    if (depth > MAX_DEPTH)
      throw this.bad(this.input.position, `class descriptors nested deeper than ${MAX_DEPTH}`);
    if (tc === TC_PROXYCLASSDESC) {
      const desc: ClassDesc = {
        kind: 'class',
        name: '<proxy>',
        flags: SC_SERIALIZABLE,
        fields: [],
        superDesc: null,
      };
      this.handles.push(desc);
      const countAt = this.input.position;
      const count = await this.input.int32('proxy interface count');
      this.input.checkCount(count, 2, 'proxy interface', countAt);
      for (let i = 0; i < count; i++) await this.input.utf('proxy interface name');
      await this.annotation(depth);
      desc.superDesc = await this.classDesc(depth + 1);
      return desc;
    }
    const name = await this.input.utf('class name');
    this.input.skipInt64('serialVersionUID');
    const desc: ClassDesc = { kind: 'class', name, flags: 0, fields: [], superDesc: null };
    this.handles.push(desc);
    desc.flags = await this.input.uint8('class flags');
    const countAt = this.input.position;
    const count = await this.input.uint16('field count');
    // Each field is at least a type code and an empty name.
    this.input.checkCount(count, 3, 'field', countAt);
    for (let i = 0; i < count; i++) {
      const codeAt = this.input.position;
      const code = String.fromCharCode(await this.input.uint8('field type code'));
      await this.input.utf('field name');
      if (code === 'L' || code === '[') {
        const typeAt = this.input.position;
        const type = await this.object(depth + 1);
        if (type === null || type.kind !== 'other')
          throw this.bad(typeAt, 'a field type that is not a string');
      } else if (PRIMITIVE_BYTES[code] === undefined) {
        throw this.bad(codeAt, `unknown field type code '${code}'`);
      }
      desc.fields.push(code);
    }
    await this.annotation(depth);
    desc.superDesc = await this.classDesc(depth + 1);
    return desc;
  }

  private async array(at: number, depth: number): Promise<Handle> {
    const desc = await this.classDesc(depth + 1);
    if (desc === null) throw this.bad(at, 'an array without a class');
    this.handles.push({ kind: 'other' });
    const sizeAt = this.input.position;
    const size = await this.input.int32('array length');
    const element = desc.name.charAt(1);
    const primitive = PRIMITIVE_BYTES[element];
    if (desc.name.charAt(0) !== '[')
      throw this.bad(at, `array class '${desc.name}' is not an array`);
    if (primitive !== undefined) {
      this.input.checkCount(size, primitive, 'array element', sizeAt);
      this.input.skip(size * primitive, 'array');
    } else {
      this.input.checkCount(size, 1, 'array element', sizeAt);
      for (let i = 0; i < size; i++) await this.object(depth + 1);
    }
    return { kind: 'other' };
  }

  private async newObject(at: number, depth: number): Promise<Handle> {
    const desc = await this.classDesc(depth + 1);
    if (desc === null) throw this.bad(at, 'an object without a class');
    this.handles.push({ kind: 'other' });
    // Class data goes from the topmost serializable superclass down.
    const chain: ClassDesc[] = [];
    for (let d: ClassDesc | null = desc; d !== null; d = d.superDesc) {
      if (chain.length > MAX_DEPTH) throw this.bad(at, 'a class hierarchy deeper than 64');
      chain.unshift(d);
    }
    for (const d of chain) {
      if ((d.flags & SC_EXTERNALIZABLE) !== 0) {
        if ((d.flags & SC_BLOCK_DATA) === 0) {
          throw this.bad(at, `externalizable class ${d.name} without block data cannot be walked`);
        }
        await this.annotation(depth);
        continue;
      }
      if ((d.flags & SC_SERIALIZABLE) === 0) continue;
      for (const code of d.fields) {
        const bytes = PRIMITIVE_BYTES[code];
        if (bytes !== undefined) this.input.skip(bytes, `field of ${d.name}`);
        else await this.object(depth + 1);
      }
      if ((d.flags & SC_WRITE_METHOD) !== 0) await this.annotation(depth);
    }
    return { kind: 'other' };
  }
}
