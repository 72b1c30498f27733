/**
 * The names of the files a recovery into a directory writes: the one place each is built.
 * An input channel is `gate-<g>-channel-<c>.bin`, a Flink result subpartition (output state)
 * `partition-<p>-subpartition-<s>.bin`; `recover --all` puts each subtask's files under
 * `<operator>/subtask-<n>/`, `--rescale P` under `subtask-<i>/`.
 */
import { channelKey, type ChannelInfo } from '../channel.ts';

/** Which side of a subtask a file holds: input channels, or result subpartitions. */
export type OutputSide = 'input' | 'output';

/**
 * The file name of one channel (input) or subpartition (output; `gate` is the partition,
 * `channel` the subpartition), without a directory.
 *
 * @example
 * ```ts
 * channelFileName('input', { gate: 0, channel: 3 }); // 'gate-0-channel-3.bin'
 * channelFileName('output', { gate: 1, channel: 2 }); // 'partition-1-subpartition-2.bin'
 * ```
 */
export function channelFileName(side: OutputSide, info: ChannelInfo): string {
  return side === 'input'
    ? `${channelKey(info)}.bin`
    : `partition-${info.gate}-subpartition-${info.channel}.bin`;
}

/**
 * What an existing channel file in an output dir looks like (either side's name): built from
 * {@link channelFileName} itself, each number standing for any, so the names are spelled once.
 */
export const CHANNEL_FILE_RE = new RegExp(
  `^(?:${(['input', 'output'] as const)
    .map((side) =>
      channelFileName(side, { gate: 0, channel: 0 })
        .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
        .replace(/0/g, '\\d+'),
    )
    .join('|')})$`,
);

/**
 * The directory of one new subtask of a rescaled restore (`--rescale P`), relative to `--out`.
 *
 * @example
 * ```ts
 * subtaskDir(2); // 'subtask-2'
 * ```
 */
export function subtaskDir(subtask: number): string {
  return `subtask-${subtask}`;
}

/** An operator uid usable as a directory name as it is: nothing a path could read otherwise. */
const PLAIN_NAME_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/**
 * The directory `recover --all` writes an operator's subtasks under: its uid where the
 * metadata has one that is a plain file name and no other operator's directory, else its id
 * (32 hex digits, always unique). Decided for all operators at once, so two uids never share
 * a directory and a uid never takes another operator's id.
 *
 * @example
 * ```ts
 * operatorDirs([{ id: 'b04c…', uid: 'slow-join' }, { id: '0a1b…' }]); // ['slow-join', '0a1b…']
 * ```
 */
export function operatorDirs(operators: readonly { id: string; uid?: string }[]): string[] {
  const ids = new Set(operators.map((o) => o.id));
  const uses = new Map<string, number>();
  for (const { uid } of operators) if (uid !== undefined) uses.set(uid, (uses.get(uid) ?? 0) + 1);
  return operators.map(({ id, uid }) =>
    uid !== undefined && PLAIN_NAME_RE.test(uid) && uses.get(uid) === 1 && !ids.has(uid) ? uid : id,
  );
}
