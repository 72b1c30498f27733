/**
 * The `--type SPEC` language: names of Flink's built-in serializers, parsed into a tree the
 * value decoder compiles. A mistake is a {@link TypeSpecError} naming the 1-based character,
 * so a user sees where a long spec went wrong; nesting is bounded, so a 10,000-deep spec is a
 * one-line error, not a stack overflow.
 */
import { TypeSpecError } from '../../../errors.ts';

/** The basic types, as Flink's `BasicTypeInfo` names them, and the serializer each is. */
export const BASIC_TYPES = [
  'Long',
  'Integer',
  'Short',
  'Byte',
  'Boolean',
  'Float',
  'Double',
  'Char',
  'String',
] as const;
export type BasicTypeName = (typeof BASIC_TYPES)[number];

/** Java primitives that have a `…PrimitiveArraySerializer` (`long[]`, `byte[]`, …). */
export const PRIMITIVES = ['long', 'int', 'short', 'byte', 'boolean', 'float', 'double', 'char'];
export type PrimitiveName =
  'long' | 'int' | 'short' | 'byte' | 'boolean' | 'float' | 'double' | 'char';

/** A named field of a `Row` or `Pojo`. */
export interface FlinkField {
  readonly name: string;
  readonly type: FlinkType;
}

/**
 * A parsed type spec. `Pojo` fields are in Flink's order (`PojoTypeInfo` sorts them by name);
 * `Row` fields in the order given (a `RowSerializer` is positional).
 */
export type FlinkType =
  | { readonly kind: 'basic'; readonly name: BasicTypeName }
  | { readonly kind: 'primitiveArray'; readonly element: PrimitiveName }
  | { readonly kind: 'basicArray'; readonly element: BasicTypeName }
  | { readonly kind: 'tuple'; readonly fields: readonly FlinkType[] }
  | { readonly kind: 'row'; readonly fields: readonly FlinkField[] }
  | { readonly kind: 'pojo'; readonly fields: readonly FlinkField[] }
  | { readonly kind: 'list'; readonly element: FlinkType }
  | { readonly kind: 'map'; readonly key: FlinkType; readonly value: FlinkType };

/** Flink's `Tuple25` is the largest tuple. */
export const MAX_TUPLE_ARITY = 25;
/** How deep a spec may nest; far beyond any real record type. */
export const MAX_TYPE_DEPTH = 64;

const IDENT = /[A-Za-z_$][A-Za-z0-9_$]*/y;

/** A recursive-descent parser over the spec text; `at` is the 0-based cursor. */
class SpecParser {
  private at = 0;

  constructor(private readonly text: string) {}

  private fail(reason: string, at = this.at): never {
    throw new TypeSpecError(this.text, at + 1, reason);
  }

  private skipSpace(): void {
    while (this.at < this.text.length && /\s/.test(this.text[this.at]!)) this.at++;
  }

  private peek(): string | undefined {
    this.skipSpace();
    return this.text[this.at];
  }

  private expect(ch: string): void {
    const got = this.peek();
    if (got !== ch) {
      this.fail(
        got === undefined ? `expected '${ch}', the spec ended` : `expected '${ch}', found '${got}'`,
      );
    }
    this.at++;
  }

  private ident(what: string): { name: string; at: number } {
    this.skipSpace();
    IDENT.lastIndex = this.at;
    const m = IDENT.exec(this.text);
    if (m === null) {
      const got = this.text[this.at];
      this.fail(
        got === undefined ? `expected ${what}, the spec ended` : `expected ${what}, found '${got}'`,
      );
    }
    const at = this.at;
    this.at += m[0].length;
    return { name: m[0], at };
  }

  parseAll(): FlinkType {
    const type = this.type(0);
    if (this.peek() !== undefined) this.fail(`unexpected '${this.text[this.at]}' after the type`);
    return type;
  }

  private type(depth: number): FlinkType {
    if (depth > MAX_TYPE_DEPTH) this.fail(`types nest deeper than ${MAX_TYPE_DEPTH}`);
    const { name, at } = this.ident('a type');
    let type = this.named(name, at, depth);
    // `T[]`: an array of a basic type (Flink has serializers for those only).
    while (this.peek() === '[') {
      const bracket = this.at;
      this.at++;
      this.expect(']');
      type = this.arrayOf(type, name, bracket);
    }
    return type;
  }

  private arrayOf(element: FlinkType, name: string, at: number): FlinkType {
    if (element.kind === 'basic') return { kind: 'basicArray', element: element.name };
    return this.fail(
      `${name}[]…[]: only arrays of basic types and of primitives are supported`,
      at,
    );
  }

  private named(name: string, at: number, depth: number): FlinkType {
    if ((BASIC_TYPES as readonly string[]).includes(name)) {
      return { kind: 'basic', name: name as BasicTypeName };
    }
    if (PRIMITIVES.includes(name)) {
      // A primitive stands alone only as an array's element: `long[]`, `byte[]`.
      if (this.peek() !== '[') {
        this.fail(
          `'${name}' is a Java primitive: write '${name}[]' for its array, or a boxed type (${BASIC_TYPES.join(' ')})`,
          at,
        );
      }
      this.at++;
      this.expect(']');
      return { kind: 'primitiveArray', element: name as PrimitiveName };
    }
    const tuple = /^Tuple(\d*)$/.exec(name);
    if (tuple !== null)
      return this.tuple(tuple[1] === '' ? undefined : Number(tuple[1]), at, depth);
    if (name === 'Row' || name === 'Pojo') return this.fields(name, depth);
    if (name === 'List') {
      this.expect('<');
      const element = this.type(depth + 1);
      this.expect('>');
      return { kind: 'list', element };
    }
    if (name === 'Map') {
      this.expect('<');
      const key = this.type(depth + 1);
      this.expect(',');
      const value = this.type(depth + 1);
      this.expect('>');
      return { kind: 'map', key, value };
    }
    return this.fail(
      `unknown type '${name}' (known: ${BASIC_TYPES.join(' ')}, byte[] and T[], Tuple<…>, Row<name T, …>, Pojo<name T, …>, List<T>, Map<K,V>)`,
      at,
    );
  }

  private tuple(arity: number | undefined, at: number, depth: number): FlinkType {
    this.expect('<');
    const fields: FlinkType[] = [this.type(depth + 1)];
    while (this.peek() === ',') {
      this.at++;
      if (fields.length === MAX_TUPLE_ARITY)
        this.fail(`a Tuple has at most ${MAX_TUPLE_ARITY} fields`);
      fields.push(this.type(depth + 1));
    }
    this.expect('>');
    if (arity !== undefined && arity !== fields.length) {
      this.fail(`Tuple${arity} has ${fields.length} field(s)`, at);
    }
    return { kind: 'tuple', fields };
  }

  private fields(kind: 'Row' | 'Pojo', depth: number): FlinkType {
    this.expect('<');
    const fields: FlinkField[] = [];
    const seen = new Set<string>();
    for (;;) {
      const name = this.ident(`a field name (${kind}<name Type, …>)`);
      if (seen.has(name.name)) this.fail(`field '${name.name}' given twice`, name.at);
      seen.add(name.name);
      fields.push({ name: name.name, type: this.type(depth + 1) });
      if (this.peek() !== ',') break;
      this.at++;
    }
    this.expect('>');
    if (kind === 'Row') return { kind: 'row', fields };
    // PojoTypeInfo orders the fields by name (String.compareTo: UTF-16 code units, as here).
    const sorted = [...fields].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { kind: 'pojo', fields: sorted };
  }
}

/**
 * Parses a type spec such as `Tuple<Long, Integer, String>`, `Row<id Long, tags List<String>>`
 * or `Pojo<name String, score Double>`.
 *
 * @throws TypeSpecError naming the 1-based character where the spec went wrong.
 * @example
 * ```ts
 * parseTypeSpec('Tuple<Long,String>'); // { kind: 'tuple', fields: [{ kind: 'basic', name: 'Long' }, …] }
 * parseTypeSpec('Tuple<Long,>');       // throws: … at character 12: expected a type, found '>'
 * ```
 */
export function parseTypeSpec(text: string): FlinkType {
  if (text.trim() === '') throw new TypeSpecError(text, 1, 'the type spec is empty');
  return new SpecParser(text).parseAll();
}

/**
 * The spec text of a parsed type (Pojo fields in Flink's order): what a message shows.
 *
 * @example
 * ```ts
 * formatTypeSpec(parseTypeSpec('Pojo<b Long, a String>')); // 'Pojo<a String, b Long>'
 * ```
 */
export function formatTypeSpec(type: FlinkType): string {
  switch (type.kind) {
    case 'basic':
      return type.name;
    case 'primitiveArray':
    case 'basicArray':
      return `${type.element}[]`;
    case 'tuple':
      return `Tuple<${type.fields.map(formatTypeSpec).join(', ')}>`;
    case 'row':
    case 'pojo':
      return `${type.kind === 'row' ? 'Row' : 'Pojo'}<${type.fields
        .map((f) => `${f.name} ${formatTypeSpec(f.type)}`)
        .join(', ')}>`;
    case 'list':
      return `List<${formatTypeSpec(type.element)}>`;
    case 'map':
      return `Map<${formatTypeSpec(type.key)}, ${formatTypeSpec(type.value)}>`;
  }
}
