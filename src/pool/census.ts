/**
 * The disk census of a pool: walks the spill root, counts what live tasks hold there, and
 * records as leaked every file no live task owns (G1 across a long-lived process).
 */
import { join } from 'node:path';
import { errnoOf } from '../services/errors.ts';
import { fsSeam, listFiles } from '../services/fs.ts';
import type { SpillRoot } from '../services/spill-root/spill-root.ts';
import { parseTaskDirName, taskDirPrefix, type LoopState } from './loop.ts';
import type { Note, PoolMetrics } from './metrics.ts';

/** A snapshot of the spill root. */
export interface SpillSample {
  liveTasks: number;
  files: number;
  bytes: number;
  grants: number;
  /** Leaked paths newly found by this sample. */
  leaked: string[];
}

/** The figures of the pool's metrics that the census keeps. */
export type CensusFigures = Pick<
  PoolMetrics,
  | 'samples'
  | 'liveFiles'
  | 'liveBytes'
  | 'peakLiveFiles'
  | 'peakLiveBytes'
  | 'outstandingGrants'
  | 'leakedFiles'
>;

/** What the census reads of the pool, each time it needs it. */
export interface PoolView {
  /** The loops running now, by task id. */
  readonly live: ReadonlyMap<string, LoopState>;
  /** The number the next loop to start will get. */
  nextLoop(): number;
  /** Whether a run is in progress: outside one, nothing in the spill root is live. */
  running(): boolean;
}

/**
 * The names in `ownerDir` of task `id`'s dirs (normally none once its `done` settled).
 *
 * @example
 * ```ts
 * await taskDirsOf(spill.ownerDir, 'ab12.0.7'); // ['task-ab12.0.7-3f9c1e'] while it runs
 * ```
 */
export async function taskDirsOf(ownerDir: string, id: string): Promise<string[]> {
  const prefix = taskDirPrefix(id);
  return (await readdirOrEmpty(ownerDir)).filter((name) => name.startsWith(prefix));
}

/**
 * Walks one pool's owner dir in its spill root. Each leaked path is counted once however many
 * walks find it.
 */
export class Census {
  private readonly leaked = new Set<string>();
  private sampling: Promise<SpillSample> | undefined;

  /**
   * @param prefix The pool's task id prefix: only its own task dirs can be live.
   * @param figures Where the census writes what it finds (the pool's metrics).
   */
  constructor(
    private readonly spill: SpillRoot,
    private readonly prefix: string,
    private readonly pool: PoolView,
    private readonly figures: CensusFigures,
    private readonly note: Note,
  ) {}

  /**
   * Counts the files and bytes of live tasks and the grants they hold, and records as leaked
   * every file whose task had already ended when the walk began. Concurrent calls share one
   * walk.
   */
  sample(): Promise<SpillSample> {
    this.sampling ??= this.walk().finally(() => (this.sampling = undefined));
    return this.sampling;
  }

  /** Settles once the walk in progress (if any) has ended, whatever it found. */
  async idle(): Promise<void> {
    await this.sampling?.catch(() => undefined);
  }

  /** Records every file under `path` (or `path` itself if empty) as leaked; returns new ones. */
  async leak(path: string): Promise<string[]> {
    const files = await listFiles(path);
    const entries = files.length > 0 ? files.map((f) => f.path) : [path];
    const fresh = entries.filter((p) => !this.leaked.has(p));
    for (const p of fresh) this.leaked.add(p);
    this.figures.leakedFiles += fresh.length;
    return fresh;
  }

  /** The dirs of ended task `id` that are still there, each recorded as leaked. */
  async leftBehind(id: string): Promise<string[]> {
    const left: string[] = [];
    for (const name of await taskDirsOf(this.spill.ownerDir, id)) {
      const found = await this.leak(join(this.spill.ownerDir, name));
      if (found.length > 0) left.push(name);
    }
    return left;
  }

  /** With a private root, `<root>/spillway/` holds this process's owner dir and nothing else. */
  async checkSpillwayDir(): Promise<void> {
    const dir = join(this.spill.root, 'spillway');
    for (const name of await readdirOrEmpty(dir)) {
      const path = join(dir, name);
      if (path === this.spill.ownerDir) continue;
      for (const p of await this.leak(path)) this.note(`leaked beside the owner dir: ${p}`);
    }
  }

  private async walk(): Promise<SpillSample> {
    // Which tasks count as live is fixed before the walk, so a task ending mid-walk is never
    // mistaken for a leak, and a dir whose task had ended before the walk always is.
    const liveBefore = new Set(this.pool.live.keys());
    const startedBefore = this.pool.nextLoop();
    let grants = 0;
    for (const s of this.pool.live.values()) {
      grants += s.recovery?.actor.getSnapshot().context.state?.refCount ?? 0;
    }
    let files = 0;
    let bytes = 0;
    const leaked: string[] = [];
    for (const name of await readdirOrEmpty(this.spill.ownerDir)) {
      if (name === 'owner.json' || name.startsWith('.owner.json.tmp-')) continue;
      const path = join(this.spill.ownerDir, name);
      const task = parseTaskDirName(name);
      const liveTask =
        task !== undefined &&
        task.prefix === this.prefix &&
        (liveBefore.has(task.id) || task.loop >= startedBefore) &&
        this.pool.running();
      if (liveTask) {
        for (const f of await listFiles(path)) {
          files++;
          bytes += f.size;
        }
      } else {
        const fresh = await this.leak(path);
        for (const p of fresh) this.note(`leaked: ${p}`);
        leaked.push(...fresh);
      }
    }
    const m = this.figures;
    m.samples++;
    m.liveFiles = files;
    m.liveBytes = bytes;
    m.outstandingGrants = grants;
    m.peakLiveFiles = Math.max(m.peakLiveFiles, files);
    m.peakLiveBytes = Math.max(m.peakLiveBytes, bytes);
    return { liveTasks: liveBefore.size, files, bytes, grants, leaked };
  }
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await fsSeam.readdir(dir);
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return [];
    throw e;
  }
}
