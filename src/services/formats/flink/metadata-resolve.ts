/**
 * Finds the operator a user named with `--operator` (every command that takes one resolves it
 * here): by its id as Flink prints it (32 hex digits), else by uid, else by name (uid and name
 * are in metadata v5+ only), else by a uid hashed to its id exactly as Flink does (so a uid works
 * on Flink 1.x metadata, which names nothing), else by a unique prefix of an id. An unknown or
 * ambiguous name is bad input listing the candidates, with a "did you mean" when one is close.
 */
import { redactLocation } from '../../locations/redact.ts';
import { UnknownOperatorError } from '../../errors.ts';
import { didYouMean } from '../../did-you-mean.ts';
import { operatorIdOfUid } from './murmur3.ts';
import type { FlinkCheckpointMetadata, FlinkOperatorState } from './metadata-types.ts';

/** Shorter hex prefixes are refused: a 1–3 digit "prefix" is more likely a typo than an id. */
export const MIN_ID_PREFIX = 4;

/**
 * How an operator is shown in lists and errors: `id` and, when known, `(name, uid …)`.
 *
 * @example
 * ```ts
 * describeOperator({ id: 'ab…', name: 'Map', uid: 'map-1', … }); // 'ab… (name Map, uid map-1)'
 * ```
 */
export function describeOperator(op: FlinkOperatorState): string {
  const parts = [
    ...(op.name !== undefined ? [`name ${op.name}`] : []),
    ...(op.uid !== undefined ? [`uid ${op.uid}`] : []),
  ];
  return parts.length === 0 ? op.id : `${op.id} (${parts.join(', ')})`;
}

/**
 * The operator `op` names in `meta`, tried in this order: an id (32 hex digits, any case), a
 * uid, a name, a uid hashed as Flink's `StreamGraphHasherV2` hashes a user-set uid (murmur3 x64
 * 128, seed 0, over its UTF-8 bytes), a unique id prefix of at least {@link MIN_ID_PREFIX} hex
 * digits.
 *
 * @throws UnknownOperatorError (exit 2) when nothing matches (listing every operator, with a
 *   "did you mean" for a near miss of an id, uid or name) or when several operators share the
 *   uid, name or prefix (listing those).
 * @example
 * ```ts
 * const meta = await readFlinkMetadata('chk-17'); // Flink 1.20: metadata v4, no uids in it
 * resolveOperator(meta, 'slow-join').id; // 'b04c65efe1b1b80162da73517c40e7de', its hash
 * resolveOperator(meta, 'b04c').id; // the same, by prefix
 * ```
 */
export function resolveOperator(meta: FlinkCheckpointMetadata, op: string): FlinkOperatorState {
  const file = redactLocation(meta.location);
  if (/^[0-9a-f]{32}$/i.test(op)) {
    const byId = meta.operators.find((o) => o.id === op.toLowerCase());
    if (byId !== undefined) return byId;
  }
  for (const key of ['uid', 'name'] as const) {
    const matches = meta.operators.filter((o) => o[key] === op);
    if (matches.length === 1) return matches[0]!;
    if (matches.length > 1) {
      throw new UnknownOperatorError(file, op, 'ambiguous', matches.map(describeOperator));
    }
  }
  const hashed = operatorIdOfUid(op);
  const byUid = meta.operators.find((o) => o.id === hashed);
  if (byUid !== undefined) return byUid;
  if (op.length >= MIN_ID_PREFIX && /^[0-9a-f]+$/i.test(op)) {
    const matches = meta.operators.filter((o) => o.id.startsWith(op.toLowerCase()));
    if (matches.length === 1) return matches[0]!;
    if (matches.length > 1) {
      throw new UnknownOperatorError(file, op, 'ambiguous', matches.map(describeOperator));
    }
  }
  const known = meta.operators.flatMap((o) => [
    o.id,
    ...(o.uid !== undefined ? [o.uid] : []),
    ...(o.name !== undefined ? [o.name] : []),
  ]);
  // Without names in the metadata (v3/v4) a typo in a uid cannot be matched to anything; saying
  // which id it would have had tells the user the uid was tried.
  const hint =
    didYouMean(op, known) ||
    (meta.operators.every((o) => o.uid === undefined) ? ` (as a uid: id ${hashed})` : '');
  throw new UnknownOperatorError(
    file,
    op,
    'unknown',
    meta.operators.map(describeOperator),
    undefined,
    hint,
  );
}
