/**
 * What a run finds of dead runs in an output dir (G10, G7): their staging dirs, judged by the
 * sweep's rules from their owner markers, are rolled back (journal `publishing`: the user's
 * files come back) or completed (`committed`), then removed. A live one is never touched.
 */
import { join } from 'node:path';
import type { FileSystem } from '../fs.ts';
import { judge, type Verdict } from '../spill-root/liveness.ts';
import { readMarker } from '../spill-root/sweep.ts';
import { CHANNEL_FILE_RE } from './file-names.ts';
import { removeDirs, stagedFiles } from './publish-tree.ts';
import {
  COMMITTED,
  forEachLimited,
  PUBLISH_IN_FLIGHT,
  PUBLISHING,
  REPLACED,
  syncDir,
} from './publish-journal.ts';

const myUid = typeof process.getuid === 'function' ? process.getuid() : undefined;

/**
 * The verdict on another run's staging dir (or a new output's holder: fresh-output.ts) by the
 * sweep's rules, from its `owner.json`, never from its name alone: only another boot is proof
 * enough without a marker. `undefined` for what is not a dir of ours (left alone); a live or
 * undecidable one is logged as kept.
 *
 * @example
 * ```ts
 * const verdict = await judgeStaging(fs, path, STAGING_RE.exec(name)!, log);
 * if (verdict !== undefined && !verdict.alive) await fs.rm(path);
 * ```
 */
export async function judgeStaging(
  fs: FileSystem,
  path: string,
  match: RegExpExecArray,
  log: (line: string) => void,
): Promise<Verdict | undefined> {
  const st = await fs.lstat(path).catch(() => undefined);
  if (st === undefined) return undefined;
  if (!st.isDirectory() || (myUid !== undefined && st.uid !== myUid)) {
    log(`spillway recover: left ${path} alone: not a staging dir of ours`);
    return undefined;
  }
  const marker = await readMarker(path, fs);
  let verdict: Verdict;
  if (typeof marker !== 'string') verdict = judge(marker, false);
  else {
    const byName = judge(
      { bootId: match[1]!, pid: Number(match[2]), startTicks: Number(match[3]) },
      true,
    );
    verdict =
      !byName.alive && byName.reason.startsWith('boot id')
        ? byName
        : { alive: true, reason: `${marker}; only another boot proves it dead` };
  }
  if (verdict.alive) log(`spillway recover: kept ${path}: ${verdict.reason}`);
  return verdict;
}

/**
 * Settles a staging dir of another run ({@link judgeStaging}): a dead one is rolled back
 * (journal `publishing`) or completed (`committed`), then removed; live, foreign and
 * undecidable ones are kept.
 */
export async function settleIfDead(
  fs: FileSystem,
  dir: string,
  name: string,
  match: RegExpExecArray,
  log: (line: string) => void,
  notice: (line: string) => void,
): Promise<void> {
  const path = join(dir, name);
  const verdict = await judgeStaging(fs, path, match, log);
  if (verdict === undefined || verdict.alive) return;
  const entries = await fs.readdir(path);
  if (entries.includes(COMMITTED)) {
    notice(
      `spillway recover: completed the publish of a run that ended past its commit point (${verdict.reason})`,
    );
  } else if (entries.includes(PUBLISHING)) {
    const kept = await rollBack(fs, dir, path, entries);
    if (kept > 0) {
      notice(
        `spillway recover: ${path}: ${kept} replaced file(s) could not go back (their names are taken); kept there`,
      );
      return;
    }
    notice(
      `spillway recover: restored ${dir} as it was before an interrupted publish (${verdict.reason})`,
    );
  }
  await fs.rm(path);
  log(`spillway recover: removed ${path}, left by a dead recovery: ${verdict.reason}`);
}

/**
 * Undoes the moves of a publish that never reached its commit point; returns how many replaced
 * files could not go back (then the staging dir is kept: it holds them).
 */
async function rollBack(
  fs: FileSystem,
  dir: string,
  staging: string,
  entries: string[],
): Promise<number> {
  const staged = await stagedFiles(fs, staging, entries);
  await forEachLimited(staged.length, PUBLISH_IN_FLIGHT, async (k) => {
    const name = staged[k]!;
    const [ours, there] = await Promise.all([
      fs.lstat(join(staging, name)),
      fs.lstat(join(dir, name)).catch(() => undefined),
    ]);
    // Only the very file this run linked there (same inode), never anyone else's; a staged
    // entry that is not a regular file is not one this run made.
    if (
      ours.isFile() &&
      there?.isFile() === true &&
      there.ino === ours.ino &&
      there.dev === ours.dev
    ) {
      await fs.unlink(join(dir, name));
    }
  });
  // Only a channel file's name goes back, and only a regular file: a forged `.replaced-.bashrc`
  // or a symlink planted in a staging dir is never restored into DIR (it stays there).
  const asides: string[] = [];
  for (const entry of entries) {
    if (!entry.startsWith(REPLACED) || !CHANNEL_FILE_RE.test(entry.slice(REPLACED.length)))
      continue;
    const st = await fs.lstat(join(staging, entry)).catch(() => undefined);
    if (st?.isFile() === true) asides.push(entry);
  }
  let kept = 0;
  await forEachLimited(asides.length, PUBLISH_IN_FLIGHT, async (k) => {
    const name = asides[k]!.slice(REPLACED.length);
    const taken = await fs.lstat(join(dir, name)).then(
      () => true,
      () => false,
    );
    if (taken) kept++;
    else await fs.rename(join(staging, asides[k]!), join(dir, name));
  });
  await removeDirs(fs, dir, await journalDirs(fs, join(staging, PUBLISHING)));
  await syncDir(fs, dir);
  return kept;
}

/** The dirs a publish's journal says it creates in DIR (none in a journal of a flat publish). */
async function journalDirs(fs: FileSystem, journal: string): Promise<string[]> {
  try {
    const { dirs } = JSON.parse((await fs.readFile(journal)).toString()) as { dirs?: unknown };
    // Only paths inside DIR: a journal is never a way to name a dir elsewhere.
    const inside = (d: unknown): d is string =>
      typeof d === 'string' &&
      d !== '' &&
      d.split('/').every((p) => p !== '' && p !== '.' && p !== '..');
    return Array.isArray(dirs) ? dirs.filter(inside) : [];
  } catch {
    return [];
  }
}
