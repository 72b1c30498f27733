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
    const where =
      e.side === 'input'
        ? `"side":"input","gate":${e.gate as number},"channel":${e.channel as number}`
        : `"side":"output","partition":${e.partition as number},"subpartition":${e.subpartition as number}`;
    const key = `${e.operator}/${e.subtask}/${where}`;
    let prefix = this.prefixes.get(key);
    if (prefix === undefined) {
      prefix = `{"operator":${JSON.stringify(e.operator)},"subtask":${e.subtask},${where},"index":`;
      this.prefixes.set(key, prefix);
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
}
