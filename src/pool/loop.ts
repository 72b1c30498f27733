/**
 * One loop of the pool: the task id it runs under (which names its task dir, so a path tells
 * which loop it belongs to) and the record its fault injection keeps for the judge.
 */
import type { StartedRecovery as Recovery } from '../recover.ts';
import type { TaskServices } from '../machines/task-services.ts';
import type { stageOf } from '../machines/task.machine.ts';
import type { CheckpointResult } from '../machines/events.ts';
import type { InjectedFaultError } from './faults.ts';
import type { Plan } from './plan.ts';

/** `<ownerDir>/task-<pool>.<slot>.<loop>-<rand6>`: the pool's own task ids are unambiguous. */
const TASK_DIR_RE = /^task-([0-9a-f]{4})\.(\d+)\.(\d+)-[0-9a-f]{6}$/;
const PATH_TASK_RE = /\/task-([0-9a-f]{4}\.\d+\.\d+)-[0-9a-f]{6}(?:\/|$)/;

/** The task id of loop `loop` on slot `slot` of the pool whose ids start with `prefix`. */
export function loopTaskId(prefix: string, slot: number, loop: number): string {
  return `${prefix}.${slot}.${loop}`;
}

/** How the name of task `id`'s dir starts (`SpillRoot.taskDirPath` appends `-<rand6>`). */
export function taskDirPrefix(id: string): string {
  return `task-${id}-`;
}

/** A path includes this exactly when it is in (or is) task `id`'s dir. */
export function taskDirMarker(id: string): string {
  return `/${taskDirPrefix(id)}`;
}

/** Which pool task a name in the owner dir belongs to, if it is a pool task's dir at all. */
export function parseTaskDirName(
  name: string,
): { prefix: string; id: string; loop: number } | undefined {
  const m = TASK_DIR_RE.exec(name);
  if (m === null) return undefined;
  return { prefix: m[1]!, id: `${m[1]}.${m[2]}.${m[3]}`, loop: Number(m[3]) };
}

/** The pool task id whose dir `path` is in, if any. */
export function taskIdInPath(path: string): string | undefined {
  return PATH_TASK_RE.exec(path)?.[1];
}

/** What one channel received: checked against the checkpoint after the loop (G6). */
/**
 * One channel of the checkpoint as a clean recovery must deliver it (measured by shape.ts;
 * declared here, where a loop keeps what it expects, so shape.ts is the only one to import).
 */
export interface ChannelShape {
  key: string;
  gate: number;
  channel: number;
  bytes: number;
  crc: number;
}

export interface ChannelTrack {
  crc: number;
  bytes: number;
  finished: number;
  /** Per checkpoint id: what the channel had received when its barrier came. */
  barriers: Map<number, { crc: number; bytes: number }>;
}

/** Per running loop: what its hooks and the fs hook need to reach, and the judge reads. */
export interface LoopState {
  id: string;
  plan: Plan;
  /** The slot's own copy of the checkpoint this loop recovers. */
  input: string;
  recovery: Recovery | undefined;
  services: TaskServices | undefined;
  /** The fault was applied (a cancel sent, a mailbox quiesced, a mail really dropped…). */
  fired: boolean;
  injected: InjectedFaultError | undefined;
  /** `cancel-after-failure`: the failure happened; the next file operation sends the cancel. */
  failing: boolean;
  writes: number;
  spillFiles: Set<string>;
  buffers: number;
  /** The last stage the task was seen in (kept once it has ended). */
  stage: ReturnType<typeof stageOf>;
  tracks: Map<string, ChannelTrack>;
  checkpoint: Promise<CheckpointResult> | undefined;
  checkpointOut: string | undefined;
  /** What this loop must deliver when it is not the pool's checkpoint as is (rescaled loops). */
  expected?: readonly ChannelShape[];
}

/** The record of a loop that has not started its recovery yet. */
export function newLoopState(id: string, plan: Plan, input: string): LoopState {
  return {
    id,
    plan,
    input,
    recovery: undefined,
    services: undefined,
    fired: false,
    injected: undefined,
    failing: false,
    writes: 0,
    spillFiles: new Set(),
    buffers: 0,
    stage: undefined,
    tracks: new Map(),
    checkpoint: undefined,
    checkpointOut: undefined,
  };
}
