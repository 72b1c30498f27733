/**
 * Which old subtasks' input-channel state Flink's restore hands a new subtask: the
 * `SubtaskStateMapper` of the edge. A keyed edge (`KeyGroupStreamPartitioner`) maps its
 * downstream side with `RANGE`: new subtask I reads exactly the old subtasks whose key-group
 * ranges overlap I's (`StateAssignmentOperation.reDistributeInputChannelStates`,
 * `InflightDataRescalingDescriptor`). Flink computes the overlap at the upper bound of the max
 * parallelism (32768), whatever the job's: "the actual maxParallelism cancels out".
 */
import { operatorIndexForKeyGroup } from '../../rescale/key-groups.ts';

/** `KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM`, the key groups RANGE counts in. */
const UPPER_BOUND_MAX_PARALLELISM = 1 << 15;

/**
 * `SubtaskStateMapper.RANGE.getOldSubtasks`: the old subtasks (ascending) whose input state
 * new subtask `newIndex` of `newParallelism` restores from `oldParallelism` old ones.
 *
 * @example
 * ```ts
 * rangeOldSubtasks(0, 3, 2); // [0, 1]
 * rangeOldSubtasks(1, 3, 2); // [1, 2]
 * rangeOldSubtasks(2, 3, 3); // [2]
 * ```
 */
export function rangeOldSubtasks(
  newIndex: number,
  oldParallelism: number,
  newParallelism: number,
): number[] {
  const m = UPPER_BOUND_MAX_PARALLELISM;
  // KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex, then the old subtask of
  // each end (computeOperatorIndexForKeyGroup).
  const startGroup = Math.floor((newIndex * m + newParallelism - 1) / newParallelism);
  const endGroup = Math.floor(((newIndex + 1) * m - 1) / newParallelism);
  const start = operatorIndexForKeyGroup(m, oldParallelism, startGroup);
  const end = operatorIndexForKeyGroup(m, oldParallelism, endGroup);
  return Array.from({ length: end - start + 1 }, (_, k) => start + k);
}
