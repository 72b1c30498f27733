/**
 * The private world `spillway demo` and `spillway soak` run in: a fresh temp dir that is both
 * the spill root and the home of a generated checkpoint, a {@link TaskManager} on it, and a
 * teardown that proves the spill root was left empty before removing the whole dir.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InspectionEvent } from 'xstate';
import { makeCheckpoint, type MadeCheckpoint } from '../services/formats/spwc/generator.ts';
import { makeRecordCheckpoint } from '../services/formats/spwc/record-generator.ts';
import { fsSeam } from '../services/fs.ts';
import { SpillRoot } from '../services/spill-root/spill-root.ts';
import { addSuppressed } from '../services/errors.ts';
import type { FaultKind } from '../pool/faults.ts';
import { TaskManager } from '../pool/task-manager.ts';
import type { SpillLimits } from '../recover.ts';

/**
 * Small files and segments, so every loop writes and reads dozens of spill files: the demo is
 * about files piling up, so there must be many to pile up.
 */
export const SANDBOX_LIMITS: SpillLimits = {
  maxSpillFileBytes: 256 * 1024,
  maxSegmentBytes: 64 * 1024,
  readChunkBytes: 256 * 1024,
  bufferBytes: 32 * 1024,
};

export interface SandboxOptions {
  /** Names the temp dir: `<tmp>/spillway-<name>-<rand>`. */
  name: string;
  tasks: number;
  stateMb: number;
  faults: readonly FaultKind[];
  seed: number;
  inspect?: (event: InspectionEvent) => void;
  /**
   * Mix in rescaled recoveries: the checkpoint is SPWC v2 with records (about a thousand per
   * MiB) and the odd slots restore as new subtask 0 of 2 through the filtering handler.
   */
  rescaled?: boolean;
}

export interface Sandbox {
  readonly dir: string;
  readonly checkpoint: MadeCheckpoint;
  readonly pool: TaskManager;
  /**
   * Removes the pool's files, closes the spill root (its owner dir goes), lists whatever is
   * still in `<dir>/spillway/` (must be nothing), then removes `dir`. Idempotent.
   */
  close(): Promise<{ leftovers: string[] }>;
}

/** Creates the temp dir, writes the checkpoint (`seed`, entries hop channels) and the pool. */
export async function openSandbox(options: SandboxOptions): Promise<Sandbox> {
  const dir = join(tmpdir(), `spillway-${options.name}-${randomBytes(4).toString('hex')}`);
  await fsSeam.mkdir(dir, { mode: 0o700 });
  // Any ending that skips close() (a third signal's process.exit, an uncaught throw) still runs
  // the 'exit' hook: the temp dir holds the checkpoint's copies (tens of MiB) and must not stay.
  const onExit = () => rmSync(dir, { recursive: true, force: true });
  process.on('exit', onExit);
  const work = join(dir, 'work');
  let pool: TaskManager | undefined;
  let closing: Promise<{ leftovers: string[] }> | undefined;
  const close = () =>
    (closing ??= (async () => {
      let first: unknown;
      const attempt = async (step: () => Promise<unknown>) => {
        try {
          await step();
        } catch (e) {
          if (first === undefined) first = e;
          else if (first instanceof Error) addSuppressed(first, e);
        }
      };
      let leftovers: string[] = [];
      await attempt(async () => pool?.close());
      await attempt(async () => (await SpillRoot.open(dir, { sweep: false })).close());
      await attempt(async () => {
        leftovers = await fsSeam.readdir(join(dir, 'spillway')).catch((e) => {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
          throw e;
        });
      });
      await attempt(() => fsSeam.rm(dir));
      process.off('exit', onExit);
      if (first !== undefined) throw first;
      return { leftovers };
    })());
  try {
    await fsSeam.mkdir(work, { mode: 0o700 });
    const out = join(work, 'state.spwc');
    const checkpoint =
      options.rescaled === true
        ? await makeRecordCheckpoint({
            out,
            records: Math.max(16, Math.round(options.stateMb * 1000)),
            subtasks: 3,
            gates: 2,
            channels: 4,
            seed: options.seed,
            maxEntryBytes: 64 * 1024,
          })
        : await makeCheckpoint({
            out,
            mb: options.stateMb,
            seed: options.seed,
            maxEntryBytes: 64 * 1024,
          });
    pool = await TaskManager.create({
      spillRoot: dir,
      checkpoint: checkpoint.path,
      workDir: work,
      tasks: options.tasks,
      faults: options.faults,
      seed: options.seed,
      limits: SANDBOX_LIMITS,
      privateRoot: true,
      ...(options.inspect ? { inspect: options.inspect } : {}),
      ...(options.rescaled === true
        ? { rescale: { subtask: 0, parallelism: 2 }, rescaleSlots: 'odd' as const }
        : {}),
    });
    return { dir, checkpoint, pool, close };
  } catch (e) {
    await close().catch((cleanup) => e instanceof Error && addSuppressed(e, cleanup));
    throw e;
  }
}
