/**
 * Turns whatever an actor holds into plain JSON before it leaves the process: the page and
 * Stately's inspector see data, never a file handle, a buffer or a service. It runs inside the
 * `inspect` callback, synchronously, so a mutable object is captured as it is *now* (Stately's
 * own pipeline serializes later and shows a later value).
 */
import { FetchedChannelState } from '../src/services/spill/fetched-state.ts';
import { Drainer } from '../src/services/spill/drainer.ts';
import { SpillReader } from '../src/services/spill/spill-reader.ts';
import { redactText } from '../src/services/locations/redact.ts';

/** Keys that hold services, refs or callbacks: never shown. */
const OMITTED_KEYS = new Set([
  'services',
  'ending',
  'parent',
  'closeable',
  'reply',
  'signal',
  'hooks',
]);
const MAX_DEPTH = 5;
const MAX_ITEMS = 50;
const MAX_STRING = 400;

/**
 * A plain-JSON copy of `value`: known Spillway objects become short summaries
 * (`FetchedChannelState` → `{ files, refCount, closed }`, `Drainer` → `{ phase }`), errors
 * become `{ name, message }`, buffers become their size, functions and services are dropped,
 * any other class instance becomes `'[ClassName]'`.
 *
 * @example
 * ```ts
 * sanitize({ state, drainer, cause: new Error('disk full') });
 * // → { state: { files: 3, refCount: 2, closed: false }, drainer: { phase: 'draining' },
 * //     cause: { name: 'Error', message: 'disk full' } }
 * ```
 */
export function sanitize(value: unknown, depth = 0): unknown {
  switch (typeof value) {
    case 'string':
      // A presigned URL's query string is a credential: redacted before it leaves the process.
      return redactText(value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}…` : value);
    case 'number':
      return Number.isFinite(value) ? value : String(value);
    case 'boolean':
      return value;
    case 'bigint':
      return value.toString();
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (value === null) return null;
  const obj = value as object;
  if (obj instanceof Error) return sanitizeError(obj);
  if (ArrayBuffer.isView(obj)) return `<${obj.byteLength} bytes>`;
  if (obj instanceof ArrayBuffer) return `<${obj.byteLength} bytes>`;
  if (obj instanceof FetchedChannelState) {
    return { files: obj.files.length, refCount: obj.refCount, closed: obj.isClosed };
  }
  if (obj instanceof Drainer) return { phase: obj.phase };
  if (obj instanceof SpillReader) return '[SpillReader]';
  if (obj instanceof Date) return obj.toISOString();
  if (obj instanceof Map) return `[Map ${obj.size}]`;
  if (obj instanceof Set) return `[Set ${obj.size}]`;
  if (obj instanceof Promise) return undefined;
  if (isActorRef(obj)) return { actor: obj.id };
  if (depth >= MAX_DEPTH) return '[…]';
  if (Array.isArray(obj)) {
    const out = obj.slice(0, MAX_ITEMS).map((v) => sanitize(v, depth + 1) ?? null);
    if (obj.length > MAX_ITEMS) out.push(`… ${obj.length - MAX_ITEMS} more`);
    return out;
  }
  const proto = Object.getPrototypeOf(obj);
  if (proto !== Object.prototype && proto !== null) {
    return `[${(obj.constructor as { name?: string } | undefined)?.name || 'object'}]`;
  }
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const [key, v] of Object.entries(obj)) {
    if (OMITTED_KEYS.has(key)) continue;
    if (++n > MAX_ITEMS) {
      out['…'] = 'more keys';
      break;
    }
    const s = sanitize(v, depth + 1);
    if (s !== undefined) out[key] = s;
  }
  return out;
}

/** `{ name, message }`, plus the error code and how many later errors it carries. */
export function sanitizeError(error: Error): Record<string, unknown> {
  const out: Record<string, unknown> = {
    name: error.name,
    message: sanitize(error.message),
  };
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === 'string') out.code = code;
  const suppressed = (error as { suppressed?: unknown }).suppressed;
  if (Array.isArray(suppressed) && suppressed.length > 0) out.suppressed = suppressed.length;
  return out;
}

/** An event without its `type` (which the record carries), sanitized; undefined if empty. */
export function sanitizeEventData(event: { type: string }): unknown {
  const { type: _type, ...rest } = event as Record<string, unknown>;
  const data = sanitize(rest) as Record<string, unknown>;
  return Object.keys(data).length > 0 ? data : undefined;
}

function isActorRef(obj: object): obj is { id: string } {
  const o = obj as Record<string, unknown>;
  return typeof o.sessionId === 'string' && typeof o.send === 'function';
}
