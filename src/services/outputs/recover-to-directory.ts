/**
 * A recovery into a directory, as `spillway recover --out DIR` runs it and as an app embeds it:
 * the preflight (the checkpoint opened, a Flink `_metadata` read and planned once), the output
 * dir and its sinks, the recoveries (a subtask's input side, then its output side; every
 * subtask of `--all`; every new subtask of `--rescale P`), and the journaled one-step publish
 * (G10): an ending before its commit point leaves DIR exactly as found.
 *
 * Plain async code: the recoveries themselves are started through `start`, handed in by the
 * layer that owns the task machine (src/recover-to-directory.ts, the CLI).
 */
import { join } from 'node:path';
import type { ChannelConsumer, ChannelInfo } from '../channel.ts';
import {
  AbortedError,
  addSuppressed,
  errnoOf,
  OutputDirError,
  OutputExistsError,
} from '../errors.ts';
import { fsSeam } from '../fs.ts';
import { checkCheckpointSource, type SourceOptions } from '../locations/source.ts';
import type {
  FlinkReadPlan,
  FlinkSelection,
  PlannedFlinkSelection,
} from '../formats/flink/entry-source.ts';
import type { FlinkCheckpointMetadata } from '../formats/flink/metadata-types.ts';
import type { RecordReport } from '../spill/filtering-spill.ts';
import { addRecordReports, type RescaleFanOut } from '../spill/fan-out-spill.ts';
import { recoverFannedOut } from './rescale-fan-out.ts';
import { runAtMost, SIDES_AT_ONCE } from './run-at-most.ts';
import { ChannelFileSink } from './channel-files.ts';
import {
  CHANNEL_FILE_RE,
  channelFileName,
  operatorDirs,
  subtaskDir,
  type OutputSide,
} from './file-names.ts';
import { OutputDir } from './output-dir.ts';
import { namesOfSinks, type PublishNames } from './publish-names.ts';

/** What one recovery reports that a directory's report adds up. */
export interface SideReport {
  channels: number;
  bytesDelivered: number;
  spillFiles: number;
  spilledBytes: number;
  entries: number;
  /** One side: its recovery's time. The total: the whole run's, from start to publish. */
  durationMs: number;
  records?: RecordReport | undefined;
}

/** A started recovery, as far as a directory needs it. */
export interface SideRecovery {
  readonly done: Promise<SideReport>;
  progress(): { retries: number };
}

/** One recovery the directory asks `start` for. */
export interface SideRequest {
  /** Where each channel (or subpartition) goes: a file in the staging dir. */
  readonly channels: (info: ChannelInfo) => ChannelConsumer;
  /** A Flink checkpoint: the operator, subtask and side, planned (the metadata is not read again). */
  readonly flink?: PlannedFlinkSelection | undefined;
  /** `--rescale P`: the new subtask this recovery is for (the rest of the target is the caller's). */
  readonly rescaleSubtask?: number | undefined;
  /** `--rescale P`: every new subtask in this one recovery, its channels under virtual gates. */
  readonly rescaleFanOut?: RescaleFanOut | undefined;
  /** Which side it recovers, and into which directory under DIR (`''`: DIR itself). */
  readonly side: OutputSide;
  readonly dir: string;
  /** Where its files grow until the publish (a watcher lists them: `recover --inspect`). */
  readonly stagingDir: string;
}

/** Options of {@link recoverIntoDirectory}. */
export interface DirectoryOptions {
  checkpoint: string;
  /** The output dir (created if missing, with its missing parents). */
  out: string;
  /** Replace channel files DIR already holds (not with `all` or `rescaleAll`). */
  overwrite?: boolean | undefined;
  /** Aborting it cancels the recovery in progress, or the publish before its commit point. */
  signal?: AbortSignal | undefined;
  remote?: SourceOptions | undefined;
  /** A Flink checkpoint: the selection; `outputState` recovers both sides. */
  flink?: FlinkSelection | undefined;
  /** Flink: every operator and subtask with channel state, both sides, into `<operator>/subtask-<n>/`. */
  all?: boolean | undefined;
  /** Rescaling a Flink checkpoint: read every old subtask. */
  rescale?: boolean | undefined;
  /** `--rescale P` without I: every new subtask `0 … P-1` into `subtask-<i>/`. */
  rescaleAll?: number | undefined;
  /** `--rescale I/P`: the new subtask I (for the report). */
  rescaleSubtask?: number | undefined;
  /** Decisions about leftovers of earlier runs, one line each. */
  log?: ((line: string) => void) | undefined;
  /** What a person must hear (an interrupted publish restored or completed), one line each. */
  notice?: ((line: string) => void) | undefined;
  /**
   * Called before anything is created when the Flink subtask asked for has no input channel
   * but `subpartitions` of output state, and `flink.outputState` is off: the run would write
   * nothing. It may throw (the CLI hints `--output-state`); returning goes on.
   */
  onOnlyOutputState?: ((subpartitions: number) => void) | undefined;
}

/** What one subtask (or, rescaling to P, one new subtask) put into the directory. */
export interface DirectoryUnit {
  /** Its directory under DIR (`''`: DIR itself). */
  dir: string;
  /** A Flink checkpoint: the operator's id (32 hex digits), and its uid where it has one. */
  operator?: string | undefined;
  uid?: string | undefined;
  /** The subtask (rescaling: the new subtask) the files are of. */
  subtask?: number | undefined;
  input?: SideReport | undefined;
  output?: SideReport | undefined;
}

/** What {@link recoverIntoDirectory} did. */
export interface DirectoryResult {
  /** Every recovery's counts added up; `durationMs` is the run's wall time (sides overlap). */
  total: SideReport;
  units: DirectoryUnit[];
  retries: number;
  /** Files published (paths relative to DIR). */
  files: number;
  /** Channel files DIR held before that this run replaced, and those it left alone. */
  replaced: string[];
  stale: string[];
}

/** A unit's recoveries, worked out before anything is created. */
interface PlannedUnit {
  readonly dir: string;
  readonly operator?: string;
  readonly uid?: string;
  readonly subtask?: number;
  readonly sides: readonly {
    side: OutputSide;
    flink?: PlannedFlinkSelection;
    rescaleSubtask?: number;
  }[];
}

/**
 * Recovers into `options.out` and publishes in one step. Bad input is refused before anything
 * is created; on any failure or abort before the commit point every sink, the staging dir and
 * any dir this run created are removed (DIR as it was) and the first cause is thrown, later ones
 * in its `.suppressed`.
 *
 * @example
 * ```ts
 * const result = await recoverIntoDirectory(
 *   { checkpoint: 'ckpt/job/chk-7', out: 'out', flink: { operator: 'map', subtask: 0 } },
 *   (request) => startRecovery({ checkpoint: 'ckpt/job/chk-7', ...request }),
 * );
 * ```
 */
export async function recoverIntoDirectory(
  options: DirectoryOptions,
  start: (request: SideRequest) => SideRecovery,
): Promise<DirectoryResult> {
  const started = performance.now();
  const nested = options.all === true || options.rescaleAll !== undefined;
  if (nested && options.overwrite === true) {
    throw new OutputDirError(
      options.out,
      'a tree of subtask dirs is only written into new names: --overwrite is for one subtask',
    );
  }
  const units = await preflight(options);
  const out = await OutputDir.open(options.out, {
    overwrite: options.overwrite === true,
    ...(options.log !== undefined ? { log: options.log } : {}),
    ...(options.notice !== undefined ? { notice: options.notice } : {}),
  });
  const sinks: { sink: ChannelFileSink; side: OutputSide; dir: string }[] = [];
  const results: DirectoryUnit[] = [];
  let retries = 0;
  let fannedTotal: SideReport | undefined;
  try {
    // After the open: it has rolled back (or completed) what a dead run left in DIR.
    if (nested) await refuseTakenNames(options.out, units);
    for (const unit of units) {
      results.push({
        dir: unit.dir,
        ...(unit.operator !== undefined ? { operator: unit.operator } : {}),
        ...(unit.uid !== undefined ? { uid: unit.uid } : {}),
        ...(unit.subtask !== undefined ? { subtask: unit.subtask } : {}),
      });
    }
    if (options.rescaleAll !== undefined) {
      // Every new subtask from one read of the channel state.
      const fanned = await recoverFannedOut(
        units.map((u) => ({ dir: u.dir, flink: u.sides[0]?.flink })),
        out.stagingDir,
        out.stagingDirMode,
        sinks as { sink: ChannelFileSink; side: 'input'; dir: string }[],
        start,
      );
      retries += fanned.retries;
      // The read's own counts are the total's: one read, not one per new subtask.
      fannedTotal = fanned.total;
      fanned.shares.forEach((share, i) => {
        results[i]!.input = { ...share, spillFiles: 0, spilledBytes: 0, entries: 0, durationMs: 0 };
      });
    } else {
      // Every side's sink in unit order first (the names' order), then the sides two at a
      // time: one side's fetch overlaps another's drain (alone, a side waits on its I/O).
      const jobs: (() => Promise<void>)[] = [];
      for (const [u, unit] of units.entries()) {
        const result = results[u]!;
        const staging = unit.dir === '' ? out.stagingDir : join(out.stagingDir, unit.dir);
        if (unit.dir !== '') {
          await fsSeam.mkdir(staging, { recursive: true, mode: out.stagingDirMode });
        }
        for (const { side, flink, rescaleSubtask } of unit.sides) {
          const sink = new ChannelFileSink(staging, {}, (info) => channelFileName(side, info));
          sinks.push({ sink, side, dir: unit.dir });
          const request: SideRequest = {
            channels: (info) => sink.consumer(info),
            flink,
            rescaleSubtask,
            side,
            dir: unit.dir,
            stagingDir: staging,
          };
          jobs.push(async () => {
            const recovery = start(request);
            const report = await recovery.done;
            await sink.finish();
            retries += recovery.progress().retries;
            result[side] = report;
          });
        }
      }
      await runAtMost(SIDES_AT_ONCE, jobs, () => {
        if (options.signal?.aborted === true) {
          throw new AbortedError('recovery into a directory cancelled', {
            cause: options.signal.reason,
          });
        }
      });
    }
    const names = namesOfSinks(sinks);
    // One step (G10): a signal before its commit point undoes every move and cancels the
    // run; after it, the run is complete and a late signal changes nothing.
    await out.publish(names, options.signal !== undefined ? { signal: options.signal } : {});
    return {
      total: {
        ...(fannedTotal ?? sumReports(results.flatMap((u) => [u.input, u.output]))),
        durationMs: Math.round(performance.now() - started),
      },
      units: results,
      retries,
      files: names.length,
      ...sortExisting(out.existing, names),
    };
  } catch (error) {
    for (const { sink } of sinks) {
      await sink.discard().catch((e) => addSuppressed(error as Error, e));
    }
    await out.discard().catch((e) => addSuppressed(error as Error, e));
    throw error;
  }
}

/**
 * Checks the input before anything is created: an SPWC checkpoint is opened (and closed); a
 * Flink `_metadata` is read once and every recovery of the run planned from it (operator,
 * subtask, every delegate file located and confined).
 */
async function preflight(options: DirectoryOptions): Promise<PlannedUnit[]> {
  const { flink, remote, signal } = options;
  if (flink === undefined) {
    await checkCheckpointSource(options.checkpoint, remote);
    if (options.rescaleAll !== undefined) {
      return Array.from({ length: options.rescaleAll }, (_, i) => ({
        dir: subtaskDir(i),
        sides: [{ side: 'input' as const, rescaleSubtask: i }],
      }));
    }
    return [{ dir: '', sides: [{ side: 'input' }] }];
  }
  // Flink's metadata and channel-state readers are loaded for a Flink checkpoint only, as
  // formats/entries.ts loads them for a recovery: importing the package does not load them.
  const { readFlinkMetadata } = await import('../formats/flink/metadata.ts');
  const { planFlinkSelection } = await import('../formats/flink/entry-source.ts');
  const metadata = await readFlinkMetadata(options.checkpoint, {
    ...(signal !== undefined ? { signal } : {}),
    ...(remote !== undefined ? { remote } : {}),
  });
  if (options.all === true) return planAll(metadata, flink);
  const rescaling = options.rescale === true || options.rescaleAll !== undefined;
  const plan = (outputState: boolean): Promise<FlinkReadPlan> =>
    planFlinkSelection(metadata, { ...flink, outputState }, { allSubtasks: rescaling });
  const input = await plan(false);
  const who = {
    operator: input.operator.id,
    ...(input.operator.uid !== undefined ? { uid: input.operator.uid } : {}),
  };
  if (options.rescaleAll !== undefined) {
    return Array.from({ length: options.rescaleAll }, (_, i) => ({
      dir: subtaskDir(i),
      ...who,
      subtask: i,
      sides: [
        {
          side: 'input' as const,
          flink: { ...flink, outputState: false, plan: input },
          rescaleSubtask: i,
        },
      ],
    }));
  }
  const sides: PlannedUnit['sides'][number][] = [
    { side: 'input', flink: { ...flink, outputState: false, plan: input } },
  ];
  if (flink.outputState !== true && !rescaling && input.channels === 0) {
    const output = await plan(true);
    if (output.channels > 0) options.onOnlyOutputState?.(output.channels);
  }
  if (flink.outputState === true) {
    sides.push({ side: 'output', flink: { ...flink, outputState: true, plan: await plan(true) } });
  }
  // Rescaling, the subtask is the new one; the old subtasks are all read.
  const subtask = options.rescaleSubtask ?? flink.subtask;
  return [{ dir: '', ...who, subtask, sides }];
}

/** `--all`: every operator and subtask with a channel handle, each side that has one. */
async function planAll(
  metadata: FlinkCheckpointMetadata,
  flink: FlinkSelection,
): Promise<PlannedUnit[]> {
  const { planFlinkSelection } = await import('../formats/flink/entry-source.ts');
  const dirs = operatorDirs(metadata.operators);
  const units: PlannedUnit[] = [];
  for (const [k, operator] of metadata.operators.entries()) {
    const subtasks = [...operator.subtasks].sort((a, b) => a.index - b.index);
    for (const subtask of subtasks) {
      const sides: PlannedUnit['sides'][number][] = [];
      for (const side of ['input', 'output'] as const) {
        const handles = side === 'input' ? subtask.inputChannels : subtask.outputSubpartitions;
        if (handles.length === 0) continue;
        // By id: a uid or name could be ambiguous, the id never is.
        const selection = {
          ...flink,
          operator: operator.id,
          subtask: subtask.index,
          outputState: side === 'output',
        };
        sides.push({
          side,
          flink: { ...selection, plan: await planFlinkSelection(metadata, selection) },
        });
      }
      if (sides.length === 0) continue;
      units.push({
        dir: `${dirs[k]!}/${subtaskDir(subtask.index)}`,
        operator: operator.id,
        ...(operator.uid !== undefined ? { uid: operator.uid } : {}),
        subtask: subtask.index,
        sides,
      });
    }
  }
  return units;
}

/**
 * A tree's directories in DIR must be directories (never a link: nothing is written through
 * one) and hold no channel file yet: refused before anything is recovered.
 */
async function refuseTakenNames(out: string, units: readonly PlannedUnit[]): Promise<void> {
  const seen = new Set<string>();
  for (const { dir } of units) {
    const parts = dir.split('/');
    for (let depth = 1; depth <= parts.length; depth++) {
      const rel = parts.slice(0, depth).join('/');
      if (seen.has(rel)) continue;
      seen.add(rel);
      const st = await fsSeam.lstat(join(out, rel)).catch((error: unknown) => {
        if (errnoOf(error) === 'ENOENT' || errnoOf(error) === 'ENOTDIR') return undefined;
        throw error;
      });
      if (st === undefined) break;
      if (!st.isDirectory()) {
        throw new OutputDirError(
          out,
          `${rel} is not a directory; refused (nothing is written through a link)`,
        );
      }
      if (depth < parts.length) continue;
      const taken = (await fsSeam.readdir(join(out, rel))).filter((n) => CHANNEL_FILE_RE.test(n));
      if (taken.length > 0) throw new OutputExistsError(out, `${rel}/${taken.sort()[0]!}`);
    }
  }
}

/** Which of the files DIR held before were replaced by this run, and which it left alone. */
function sortExisting(
  existing: readonly string[],
  published: PublishNames,
): { replaced: string[]; stale: string[] } {
  // A set only when DIR held channel files: at 262,144 names it is ~20 MiB a fresh DIR never
  // needs, and a scan per file took minutes at 20,000.
  const names = new Set<string>();
  if (existing.length > 0)
    for (let k = 0; k < published.length; k++) names.add(published.nameAt(k));
  return {
    replaced: existing.filter((name) => names.has(name)),
    stale: existing.filter((name) => !names.has(name)),
  };
}

/** The recoveries' counts added up (a missing side counts nothing). */
function sumReports(reports: readonly (SideReport | undefined)[]): SideReport {
  const total: SideReport = {
    channels: 0,
    bytesDelivered: 0,
    spillFiles: 0,
    spilledBytes: 0,
    entries: 0,
    durationMs: 0, // the caller's: the run's wall time
  };
  for (const r of reports) {
    if (r === undefined) continue;
    total.channels += r.channels;
    total.bytesDelivered += r.bytesDelivered;
    total.spillFiles += r.spillFiles;
    total.spilledBytes += r.spilledBytes;
    total.entries += r.entries;
    if (r.records !== undefined) {
      total.records = addRecordReports([
        total.records ?? { read: 0, kept: 0, dropped: 0 },
        r.records,
      ]);
    }
  }
  return total;
}
