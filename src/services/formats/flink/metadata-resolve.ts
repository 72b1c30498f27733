/**
 * Finds the operator a user named on the command line: by its id as Flink prints it (32 hex
 * digits), else by uid, else by name (uid and name are in metadata v5+ only). An unknown or
 * ambiguous name is bad input listing the candidates, so the user can pick one.
 */
import { redactLocation } from '../../locations/redact.ts';
import { UnknownOperatorError } from '../../errors.ts';
import type { FlinkCheckpointMetadata, FlinkOperatorState } from './metadata-types.ts';

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
 * The operator `op` names in `meta`: an id (32 hex digits, any case), else a uid, else a name.
 *
 * @throws UnknownOperatorError (exit 2) when nothing matches (listing every operator) or when
 *   several operators share the uid or name (listing those).
 * @example
 * ```ts
 * const sink = resolveOperator(await readFlinkMetadata('chk-17'), 'my-sink-uid');
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
  throw new UnknownOperatorError(file, op, 'unknown', meta.operators.map(describeOperator));
}
