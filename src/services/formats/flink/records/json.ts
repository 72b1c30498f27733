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
