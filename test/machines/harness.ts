/**
 * What the lifecycle-machine suites share beyond the test kit (test/helpers/): a small real
 * checkpoint and a spill root per test, recording channel consumers, a watched recovery, and
 * the leak check (G1) every test ends with.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect } from 'vitest';
import type { InspectionEvent, AnyEventObject } from 'xstate';
import {
  startRecovery,
  type StartOptions as RecoverOptions,
  type StartedRecovery as Recovery,
} from '../../src/recover.ts';
import type { MadeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import type { ChannelConsumer } from '../../src/services/channel.ts';
import { channelKey, type ChannelInfo } from '../../src/services/channel.ts';
import { seam } from '../helpers/fault-seam.ts';
import { SpillRoot } from '../../src/services/spill-root/spill-root.ts';
import { suppressedOf } from '../../src/services/errors.ts';
import { macrotasks } from '../helpers/async.ts';
import { SMALL_LIMITS } from '../helpers/checkpoints.ts';
import { makeModeCheckpoint, modeOptions } from '../helpers/spill-mode.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const roots: string[] = [];

// Registered after the temp helper's hook, so it runs before the temp dirs are removed.
afterEach(async () => {
  seam.resetFsSeam();
  // Never fails the hook: a leak is the test's own assertion, and a throwing hook would skip
  // the temp helper's removal of the dirs.
  while (roots.length > 0) {
    const root = roots.pop()!;
    await SpillRoot.open(root)
      .then((spill) => spill.close())
      .catch(() => undefined);
  }
});

export interface Fixture {
  /** Temp dir holding the input checkpoint and checkpoint outputs. */
  dir: string;
  /** The spill root of the test (its own temp dir). */
  root: string;
  checkpoint: string;
  made: MadeCheckpoint;
  /**
   * Each channel's recovered bytes, from the checkpoint itself (in filtering mode: the
   * survivors, from the reference filter; `made` then describes those too).
   */
  original: Map<string, Buffer>;
}

/**
 * A real checkpoint (default 512 KiB over 2×3 channels) and a fresh spill root; a v2 record
 * checkpoint in filtering mode (test/helpers/spill-mode.ts).
 */
export async function fixture(
  options: { kib?: number; seed?: number; gates?: number; channels?: number } = {},
): Promise<Fixture> {
  const dir = await makeTempRoot();
  const root = await makeTempRoot();
  roots.push(root);
  const { made, original } = await makeModeCheckpoint(dir, {
    kib: options.kib ?? 512,
    seed: options.seed ?? 1,
    gates: options.gates ?? 2,
    channels: options.channels ?? 3,
    maxEntryBytes: 24 * 1024,
  });
  return { dir, root, checkpoint: made.path, made, original };
}

/** One channel's deliveries and barriers, in the order the consumer saw them. */
export type ChannelLog = (Buffer | { barrier: number })[];

export interface Recorder {
  channels: (info: ChannelInfo) => ChannelConsumer;
  logs: Map<string, ChannelLog>;
  finished: Set<string>;
  /** Total bytes delivered so far, all channels. */
  bytes(): number;
  /** Buffers delivered so far, all channels. */
  buffers(): number;
  /** Bytes of `key` delivered before the barrier of checkpoint `id` (all of them if none). */
  before(key: string, id: number): Buffer;
  delivered(key: string): Buffer;
}

/**
 * Consumers that record everything. `onBuffer` may be replaced per call (`hook`) to throw, to
 * hand back a promise that yields, or to take a checkpoint.
 */
export function recorder(
  hook?: (info: ChannelInfo, buffer: Buffer, seen: number) => void | Promise<void>,
): Recorder {
  const logs = new Map<string, ChannelLog>();
  const finished = new Set<string>();
  let total = 0;
  let seen = 0;
  return {
    logs,
    finished,
    bytes: () => total,
    buffers: () => seen,
    channels: (info) => {
      const key = channelKey(info);
      const log: ChannelLog = [];
      logs.set(key, log);
      return {
        onBuffer(buffer) {
          log.push(buffer);
          total += buffer.length;
          return hook?.(info, buffer, ++seen);
        },
        onFinished() {
          finished.add(key);
        },
        onBarrier(id) {
          log.push({ barrier: id });
        },
      };
    },
    before(key, id) {
      const log = logs.get(key) ?? [];
      const end = log.findIndex((e) => !Buffer.isBuffer(e) && e.barrier === id);
      const part = end === -1 ? log : log.slice(0, end);
      return Buffer.concat(part.filter((e): e is Buffer => e instanceof Buffer));
    },
    delivered(key) {
      return Buffer.concat((logs.get(key) ?? []).filter((e): e is Buffer => e instanceof Buffer));
    },
  };
}

export interface Watched {
  recovery: Recovery;
  /** The task dir as announced by SPILL.OWNED (undefined until the fetch stage acquires it). */
  taskDir(): string | undefined;
  /** Every event delivered to the task actor, in order (`@xstate.event`). */
  events: AnyEventObject[];
  /** Runs `fn` synchronously the moment an event of `type` reaches any actor. */
  onEvent(type: string, fn: (event: AnyEventObject) => void): void;
}

/** Starts a recovery of `fx` with small limits and an inspector that records what it needs. */
export function start(
  fx: Fixture,
  options: Partial<RecoverOptions> & { inspectAlso?: (e: InspectionEvent) => void } = {},
): Watched {
  let taskDir: string | undefined;
  const events: AnyEventObject[] = [];
  const listeners: { type: string; fn: (event: AnyEventObject) => void }[] = [];
  const { inspectAlso, ...rest } = options;
  const recovery = startRecovery({
    checkpoint: fx.checkpoint,
    spillRoot: fx.root,
    limits: SMALL_LIMITS,
    channels: recorder().channels,
    ...modeOptions(),
    ...rest,
    inspect: (e) => {
      if (e.type === '@xstate.event') {
        const event = e.event;
        if (event.type === 'SPILL.OWNED' && event.resource === 'taskDir') taskDir = event.detail;
        if (e.actorRef.sessionId === e.rootId) events.push(event);
        for (const l of listeners) if (l.type === event.type) l.fn(event);
      }
      inspectAlso?.(e);
    },
  });
  return {
    recovery,
    taskDir: () => taskDir,
    events,
    onEvent: (type, fn) => listeners.push({ type, fn }),
  };
}

/**
 * What this process left in a spill root: task dirs under its owner dirs and spill segments
 * anywhere (G1). The owner dir itself stays while the process lives.
 */
export async function leftovers(root: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const path = join(dir, name);
      if (name.startsWith('task-') || /^spill-segment-\d+\.bin$/.test(name)) found.push(path);
      if (depth < 4 && !name.includes('.')) await walk(path, depth + 1);
    }
  };
  await walk(join(root, 'spillway'), 0);
  return found;
}

/** G1 as an assertion: nothing now, and nothing created a few macrotasks later either. */
export async function expectNoLeak(fx: Fixture, taskDir?: string): Promise<void> {
  expect(await leftovers(fx.root)).toEqual([]);
  if (taskDir !== undefined) expect(existsSync(taskDir)).toBe(false);
  await macrotasks(10);
  expect(await leftovers(fx.root)).toEqual([]);
}

/** The cause and everything in its `.suppressed`, recursively (for "never a raw ENOENT"). */
export function errorTree(error: unknown): Error[] {
  const out: Error[] = [];
  const visit = (e: unknown) => {
    if (!(e instanceof Error) || out.includes(e)) return;
    out.push(e);
    for (const s of suppressedOf(e)) visit(s);
    if (e.cause !== undefined) visit(e.cause);
  };
  visit(error);
  return out;
}

/** The errno `code` of an error, if it has one. */
export function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
