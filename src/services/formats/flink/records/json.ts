/**
 * JSON text for decoded values and elements: a `bigint` (a Java long) is written as its exact
 * digits — `JSON.stringify` refuses bigints and a float would lose digits past 2^53 — and a
 * float that JSON has no number for (NaN, ±Infinity) as a string.
 */

/**
 * One value as JSON text, bigints exact.
 *
 * @example
 * ```ts
 * toJson({ key: 9007199254740993n, v: [1.5, 'é', null] }); // '{"key":9007199254740993,"v":[1.5,"é",null]}'
 * ```
 */
export function toJson(value: unknown): string {
  switch (typeof value) {
    case 'bigint':
      return value.toString();
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : JSON.stringify(String(value));
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'undefined':
    case 'function':
    case 'symbol':
      return 'null';
    default:
      break;
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (value instanceof Uint8Array)
    return JSON.stringify(
      Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64'),
    );
  const parts: string[] = [];
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined) continue;
    parts.push(`${JSON.stringify(k)}:${toJson(v)}`);
  }
  return `{${parts.join(',')}}`;
}

/** The element fields after `bytes`, in the order a line shows them. */
const TAIL_FIELDS = [
  'timestamp',
  'key',
  'keyGroup',
  'value',
  'end',
  'length',
  'status',
  'backlog',
  'markedTime',
  'markerOperator',
  'markerSubtask',
  'watermarkSubpartition',
  'stitched',
] as const;

/**
 * Writes elements as JSON Lines, fast: the position's text is made once per channel, and a
 * value known to be base64 (a record read without a type, a partial piece) is written as it
 * is — base64 has nothing JSON must escape. Everything else goes through {@link toJson}.
 *
 * @example
 * ```ts
 * const lines = new ElementLines(type === undefined);
 * for await (const e of readFlinkRecords(options)) out.write(lines.line(e));
 * ```
 */
export class ElementLines {
  private readonly prefixes = new Map<string, string>();
  /** The channel of the last line and its prefix: elements come in runs of one channel. */
  private last:
    { operator: string; subtask: number; side: string; a: number; b: number } | undefined;
  private lastPrefix = '';

  /** `untyped`: record values are base64 (no type and no decode hook). */
  constructor(private readonly untyped: boolean) {}

  line(e: {
    operator: string;
    subtask: number;
    side: 'input' | 'output';
    index: number;
    kind: string;
    bytes: number;
    [field: string]: unknown;
  }): string {
    const prefix = this.prefix(e);
    if (e.kind === 'record' && this.untyped) {
      // The common line, its fields in TAIL_FIELDS order (a record has no others); the value
      // is base64, written as it is.
      let s = `${prefix}${e.index},"kind":"record","bytes":${e.bytes}`;
      if (e.timestamp !== undefined) s += `,"timestamp":${toJson(e.timestamp)}`;
      if (e.key !== undefined) s += `,"key":${toJson(e.key)}`;
      if (e.keyGroup !== undefined) s += `,"keyGroup":${e.keyGroup as number}`;
      if (e.value !== undefined) s += `,"value":"${e.value as string}"`;
      if (e.stitched !== undefined) s += `,"stitched":${toJson(e.stitched)}`;
      return `${s}}\n`;
    }
    let s = `${prefix}${e.index},"kind":"${e.kind}","bytes":${e.bytes}`;
    for (const field of TAIL_FIELDS) {
      const v = e[field];
      if (v === undefined) continue;
      const raw =
        field === 'value' && typeof v === 'string' && (e.kind === 'partial' || this.untyped);
      s += raw ? `,"${field}":"${v}"` : `,"${field}":${toJson(v)}`;
    }
    return `${s}}\n`;
  }

  /** The line's start up to `"index":`, made once per channel. */
  private prefix(e: {
    operator: string;
    subtask: number;
    side: 'input' | 'output';
    [field: string]: unknown;
  }): string {
    const input = e.side === 'input';
    const a = (input ? e.gate : e.partition) as number;
    const b = (input ? e.channel : e.subpartition) as number;
    const last = this.last;
    if (
      last !== undefined &&
      last.a === a &&
      last.b === b &&
      last.side === e.side &&
      last.subtask === e.subtask &&
      last.operator === e.operator
    ) {
      return this.lastPrefix;
    }
    const where = input
      ? `"side":"input","gate":${a},"channel":${b}`
      : `"side":"output","partition":${a},"subpartition":${b}`;
    const key = `${e.operator}/${e.subtask}/${where}`;
    let prefix = this.prefixes.get(key);
    if (prefix === undefined) {
      prefix = `{"operator":${JSON.stringify(e.operator)},"subtask":${e.subtask},${where},"index":`;
      this.prefixes.set(key, prefix);
    }
    this.last = { operator: e.operator, subtask: e.subtask, side: e.side, a, b };
    this.lastPrefix = prefix;
    return prefix;
  }
}
