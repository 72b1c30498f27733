/**
 * What `flink rewrite` drops: element positions as `flink records` prints them
 * (`OP/SUBTASK/input/GATE/CHANNEL/INDEX`, `OP/SUBTASK/output/PARTITION/SUBPARTITION/INDEX`),
 * records by key, or (library) any predicate over elements. Positions are resolved against
 * the checkpoint before a byte of channel state is read, so an unknown operator, subtask or
 * channel is refused with nothing written.
 */
import { RewriteRefusedError } from '../../../errors.ts';
import type { FlinkKey } from '../entry-source.ts';
import { resolveOperator } from '../metadata-resolve.ts';
import type { FlinkCheckpointMetadata } from '../metadata-types.ts';
import { StreamElementTag } from '../stream-element.ts';
import type { FlinkElementKind } from './frames.ts';
import type { FlinkElementPosition } from '../records/elements.ts';

/**
 * An element's position: the type `flink records` prints (`readFlinkRecords` yields elements
 * that carry it, so an element read there can be handed here as a selector).
 */
export type { FlinkElementPosition };

/** The (gate, channel) or (partition, subpartition) of a position. */
function channelOf(p: FlinkElementPosition): { gate: number; channel: number } {
  return p.side === 'input'
    ? { gate: p.gate, channel: p.channel }
    : { gate: p.partition, channel: p.subpartition };
}

/** One element as a predicate sees it. */
export interface FlinkRewriteElement {
  /** The operator's id (32 hex digits). */
  readonly operator: string;
  readonly subtask: number;
  readonly side: 'input' | 'output';
  readonly gate: number;
  readonly channel: number;
  readonly index: number;
  readonly kind: Exclude<FlinkElementKind, 'partial'>;
  /** The StreamElement's bytes (tag first), without the 4-byte frame length; borrowed. */
  readonly bytes: Buffer;
}

/** Records whose key (the value's first field, read as `key` says) is one of `values`. */
export interface FlinkKeyDrop {
  readonly key: FlinkKey;
  /** `long`: bigint; `int`: number; `{ bytes: K }`: the first K bytes. */
  readonly values: readonly (bigint | number | Uint8Array)[];
}

/** One thing to drop: a position (object or selector text), keys, or a predicate. */
export type FlinkDropSelector =
  string | FlinkElementPosition | FlinkKeyDrop | ((element: FlinkRewriteElement) => boolean);

/**
 * Parses selector text; the operator part may itself hold '/' (it is everything before the
 * last five fields).
 *
 * @example
 * ```ts
 * parseSelector('slow-join/1/input/0/1/42');
 * // { operator: 'slow-join', subtask: 1, side: 'input', gate: 0, channel: 1, index: 42 }
 * ```
 */
export function parseSelector(text: string): FlinkElementPosition {
  const parts = text.split('/');
  const bad = (why: string): RewriteRefusedError =>
    new RewriteRefusedError(
      'selector',
      `bad selector '${text}': ${why} (expected OP/SUBTASK/input/GATE/CHANNEL/INDEX or ` +
        `OP/SUBTASK/output/PARTITION/SUBPARTITION/INDEX)`,
    );
  if (parts.length < 6) throw bad('too few fields');
  const tail = parts.slice(-5);
  const operator = parts.slice(0, -5).join('/');
  if (operator === '') throw bad('no operator');
  const side = tail[1];
  if (side !== 'input' && side !== 'output') throw bad(`'${side}' is neither input nor output`);
  const n = (s: string, what: string): number => {
    if (!/^\d{1,15}$/.test(s)) throw bad(`${what} '${s}' is not a non-negative integer`);
    return Number(s);
  };
  const subtask = n(tail[0]!, 'subtask');
  const index = n(tail[4]!, 'index');
  if (side === 'input') {
    const gate = n(tail[2]!, 'gate');
    return { operator, subtask, side, gate, channel: n(tail[3]!, 'channel'), index };
  }
  const partition = n(tail[2]!, 'partition');
  return { operator, subtask, side, partition, subpartition: n(tail[3]!, 'subpartition'), index };
}

/** Selector text of a resolved position (the operator as its id). */
export function positionText(p: FlinkElementPosition): string {
  const { gate, channel } = channelOf(p);
  return `${p.operator}/${p.subtask}/${p.side}/${gate}/${channel}/${p.index}`;
}

/** A channel's identity in the maps below. */
export function channelId(
  operatorId: string,
  subtask: number,
  side: string,
  gate: number,
  channel: number,
): string {
  return `${operatorId}/${subtask}/${side}/${gate}/${channel}`;
}

/** The drops resolved against one checkpoint. */
export interface ResolvedDrops {
  /** Per channel id: the indexes to drop, each with the selector text it came from. */
  readonly positions: Map<string, Map<number, string>>;
  readonly keys: readonly FlinkKeyDrop[];
  readonly predicates: readonly ((element: FlinkRewriteElement) => boolean)[];
}

/**
 * Resolves every selector: operators by id/uid/name/prefix, subtask and channel (input) or
 * subpartition (output) checked to have channel state in the checkpoint.
 *
 * @throws RewriteRefusedError, UnknownOperatorError
 */
export function resolveDrops(
  metadata: FlinkCheckpointMetadata,
  selectors: readonly FlinkDropSelector[],
): ResolvedDrops {
  const positions = new Map<string, Map<number, string>>();
  const keys: FlinkKeyDrop[] = [];
  const predicates: ((element: FlinkRewriteElement) => boolean)[] = [];
  for (const selector of selectors) {
    if (typeof selector === 'function') {
      predicates.push(selector);
      continue;
    }
    if (typeof selector === 'object' && 'values' in selector) {
      keys.push(selector);
      continue;
    }
    const p = typeof selector === 'string' ? parseSelector(selector) : selector;
    const text = typeof selector === 'string' ? selector : positionText(selector);
    const operator = resolveOperator(metadata, p.operator);
    const { gate, channel } = channelOf(p);
    const subtask = operator.subtasks.find((s) => s.index === p.subtask);
    const handles = p.side === 'input' ? subtask?.inputChannels : subtask?.outputSubpartitions;
    const handle = handles?.find((h) => h.gate === gate && h.channel === channel);
    if (handle === undefined) {
      throw new RewriteRefusedError(
        'no-match',
        `${text}: operator ${operator.id} subtask ${p.subtask} has no state for ` +
          (p.side === 'input'
            ? `input gate ${gate} channel ${channel}`
            : `output partition ${gate} subpartition ${channel}`),
      );
    }
    const id = channelId(operator.id, p.subtask, p.side, gate, channel);
    let indexes = positions.get(id);
    if (indexes === undefined) positions.set(id, (indexes = new Map()));
    indexes.set(p.index, text);
  }
  return { positions, keys, predicates };
}

/** Whether the record `element` (tag 0 or 1) has one of `drop`'s keys. */
export function recordHasKey(element: Buffer, drop: FlinkKeyDrop): boolean {
  const at = element[0] === StreamElementTag.RECORD_WITH_TIMESTAMP ? 9 : 1;
  const { key } = drop;
  const need = key === 'long' ? 8 : key === 'int' ? 4 : key.bytes;
  if (element.length - at < need) return false;
  if (key === 'long') {
    const v = element.readBigInt64BE(at);
    return drop.values.some((x) => typeof x === 'bigint' && x === v);
  }
  if (key === 'int') {
    const v = element.readInt32BE(at);
    return drop.values.some((x) => typeof x === 'number' && x === v);
  }
  const head = element.subarray(at, at + need);
  return drop.values.some((x) => x instanceof Uint8Array && Buffer.from(x).equals(head));
}
