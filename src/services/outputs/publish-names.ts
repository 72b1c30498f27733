/**
 * The names a publish moves, made when they are needed rather than held as a list: at 262,144
 * channels a list of their names, held through the publish, was ~19 MB at the run's peak of
 * memory.
 */
import type { ChannelInfo } from '../channel.ts';
import type { ChannelFileSink } from './channel-files.ts';
import { channelFileName } from './file-names.ts';
import { treeDirs } from './publish-tree.ts';

/** What `OutputDir.publish` moves; each name is asked for twice (to link, then to unlink). */
export interface PublishNames {
  readonly length: number;
  /** The `k`th file name, relative to DIR (`sub/name` in a tree). */
  nameAt(k: number): string;
  /**
   * The dirs (relative to DIR) the names lie in, when known without making every name: at
   * 262,144 channels making each name once more only to find there are none was ~47 MB of
   * garbage.
   */
  readonly dirs?: readonly string[];
}

/**
 * The dirs `names` lie in and their parents, parents first ({@link treeDirs}); none when every
 * name is flat.
 *
 * @example
 * ```ts
 * dirsOfNames(namesOfSinks(sinks)); // ['op', 'op/subtask-0', 'op/subtask-1']
 * ```
 */
export function dirsOfNames(names: PublishNames): string[] {
  // A dir `d` is what treeDirs finds in a name `d/…`.
  return names.dirs !== undefined
    ? treeDirs(names.dirs.map((d) => `${d}/`))
    : treeDirs(eachName(names));
}

/**
 * `channels` as names: a string is a file name already (a Flink output subpartition's file),
 * a channel is named as an input channel's file.
 */
export function publishNamesOf(
  channels: readonly (ChannelInfo | string)[] | PublishNames,
): PublishNames {
  if (!Array.isArray(channels)) return channels as PublishNames;
  const list = channels as readonly (ChannelInfo | string)[];
  return {
    length: list.length,
    nameAt: (k) => {
      const c = list[k]!;
      return typeof c === 'string' ? c : channelFileName('input', c);
    },
  };
}

/** Every name of `names`, in order. */
export function* eachName(names: PublishNames): Generator<string> {
  for (let k = 0; k < names.length; k++) yield names.nameAt(k);
}

/**
 * Every sink's finished channels' file names, each after its unit's dir, in order: made when
 * the publish asks for one, never held as a list.
 */
export function namesOfSinks(
  sinks: readonly { sink: ChannelFileSink; dir: string }[],
): PublishNames {
  const starts: number[] = [];
  let length = 0;
  for (const { sink } of sinks) {
    starts.push(length);
    length += sink.finishedCount;
  }
  // Only the dirs names lie in: a unit that finished no channel has none there.
  const dirs = [
    ...new Set(sinks.filter((s) => s.dir !== '' && s.sink.finishedCount > 0).map((s) => s.dir)),
  ];
  return {
    length,
    dirs,
    nameAt: (k) => {
      // The last sink starting at or before k (one with no channels starts where the next does).
      let lo = 0;
      let hi = sinks.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid]! <= k) lo = mid;
        else hi = mid - 1;
      }
      const { sink, dir } = sinks[lo]!;
      return (dir === '' ? '' : `${dir}/`) + sink.fileNameAt(k - starts[lo]!);
    },
  };
}
