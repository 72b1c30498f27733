/**
 * The names a publish moves (src/services/outputs/publish-names.ts): the dirs a publish syncs
 * or creates come from the sinks' unit dirs without making every name, and are exactly the
 * dirs the names themselves lie in (G10: every dir of the tree, parents first).
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ChannelFileSink } from '../../src/services/outputs/channel-files.ts';
import {
  dirsOfNames,
  eachName,
  namesOfSinks,
  type PublishNames,
} from '../../src/services/outputs/publish-names.ts';
import { treeDirs } from '../../src/services/outputs/publish-tree.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const roots: string[] = [];
afterAll(async () => {
  for (const r of roots) await rm(r, { recursive: true, force: true });
});

/** Sinks in `dirs` (unit dirs, '' for DIR itself), each with `channels` finished channels. */
async function sinks(dirs: string[], channels: number, empty = new Set<string>()) {
  const root = await makeTempRoot();
  roots.push(root);
  const out = [];
  for (const [k, dir] of dirs.entries()) {
    await mkdir(join(root, `s${k}`));
    const sink = new ChannelFileSink(join(root, `s${k}`));
    const n = empty.has(dir) ? 0 : channels;
    for (let c = 0; c < n; c++) await sink.consumer({ gate: 0, channel: c }).onFinished();
    await sink.finish();
    out.push({ sink, dir });
  }
  return out;
}

/** The same names without the shortcut: every name made and looked at. */
function walked(names: PublishNames): PublishNames {
  return { length: names.length, nameAt: (k) => names.nameAt(k) };
}

describe('G10 the dirs of a publish', () => {
  it.each([
    ['flat (one subtask into DIR)', [''], []],
    [
      'recover --all (operator/subtask dirs)',
      ['op-a/subtask-0', 'op-a/subtask-1', 'op-b/subtask-0'],
      [],
    ],
    ['--rescale P (subtask dirs)', ['subtask-0', 'subtask-1', 'subtask-2'], []],
    [
      'a unit that finished no channel among others',
      ['op-a/subtask-0', 'op-y/subtask-1', 'op-z/subtask-3'],
      ['op-y/subtask-1'],
    ],
  ])('%s: known from the sinks, equal to the dirs the names lie in', async (_what, dirs, empty) => {
    const names = namesOfSinks(await sinks(dirs, 3, new Set(empty)));
    expect(names.dirs).toBeDefined();
    expect(dirsOfNames(names)).toEqual(treeDirs(eachName(names)));
    expect(dirsOfNames(walked(names))).toEqual(dirsOfNames(names));
  });

  it('G10 parents come before their children', async () => {
    const names = namesOfSinks(await sinks(['b/subtask-1', 'a/subtask-0', 'b/subtask-0'], 1));
    expect(dirsOfNames(names)).toEqual(['a', 'b', 'a/subtask-0', 'b/subtask-0', 'b/subtask-1']);
  });
});
