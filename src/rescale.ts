/**
 * `spillway/rescale`: Flink's key-group maths, as a rescaled recovery uses it to tell which
 * records stay with a subtask — the key hash (murmur, Flink's seed), the key group of a hash,
 * the operator index of a key group, the default max parallelism. `recoverChannelState`'s
 * `rescale` option needs none of it; these are for checking a rescale by hand.
 *
 * @example
 * ```ts
 * import { defaultMaxParallelism, hashKeyBytes, keyGroupForKeyHash, operatorIndexForKeyGroup } from 'spillway/rescale';
 *
 * const max = defaultMaxParallelism(4);
 * const group = keyGroupForKeyHash(hashKeyBytes(Buffer.from('user-17')), max);
 * console.log(operatorIndexForKeyGroup(max, 4, group)); // the subtask that keeps the record
 * ```
 *
 * @packageDocumentation
 */
export {
  defaultMaxParallelism,
  hashKeyBytes,
  keyGroupForKeyHash,
  murmurHash,
  operatorIndexForKeyGroup,
  KEY_HASH_SEED,
  type RescaleTarget,
} from './services/rescale/key-groups.ts';
