/**
 * What `spillway recover` says about each subtask it wrote: in `--json`, the operator and
 * subtask and each side's own counts (input channels apart from output subpartitions); in
 * text, who was recovered. The totals stay where they were (recover.ts).
 */
import type { DirectoryReport } from '../recover-to-directory.ts';
import type { DirectoryUnit, SideReport } from '../services/outputs/recover-to-directory.ts';

/** One side's counts as `--json` prints them. */
function sideJson(r: SideReport) {
  return {
    channels: r.channels,
    bytes: r.bytesDelivered,
    ...(r.records !== undefined ? { records: r.records } : {}),
  };
}

/** A subtask's fields: who it is, then each side it has. */
function unitJson(u: DirectoryUnit) {
  return {
    ...(u.operator !== undefined ? { operator: u.operator } : {}),
    ...(u.uid !== undefined ? { uid: u.uid } : {}),
    ...(u.subtask !== undefined ? { subtask: u.subtask } : {}),
    ...(u.input !== undefined ? { input: sideJson(u.input) } : {}),
    ...(u.output !== undefined ? { output: sideJson(u.output) } : {}),
  };
}

/**
 * The `--json` fields beyond the totals: a Flink subtask's `operator`, `subtask`, `input` and
 * `output`; a tree's (`--all`, `--rescale P`) `subtasks`, one per directory.
 *
 * @example
 * ```ts
 * unitFields(report); // { operator: 'b04c…', subtask: 1, input: { channels: 4, bytes: 9120 } }
 * ```
 */
export function unitFields({ units }: DirectoryReport): Record<string, unknown> {
  const [only] = units;
  if (units.length === 1 && only!.dir === '')
    return only!.operator === undefined ? {} : unitJson(only!);
  return { subtasks: units.map((u) => ({ dir: u.dir, ...unitJson(u) })) };
}

/**
 * The text report's word on who was recovered: ` (operator ID subtask N)` for one Flink
 * subtask, ` (N subtasks)` for a tree, nothing for SPWC.
 *
 * @example
 * ```ts
 * whoText(report); // ' (operator slow-join subtask 1)'
 * ```
 */
export function whoText({ units }: DirectoryReport): string {
  const [only] = units;
  if (units.length === 1 && only!.dir === '') {
    return only!.operator === undefined
      ? ''
      : ` (operator ${only!.uid ?? only!.operator} subtask ${only!.subtask ?? 0})`;
  }
  return ` (${units.length} subtask dirs)`;
}
