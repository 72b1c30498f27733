/**
 * What the relay sends to the page: small, self-describing, plain-JSON records. Each record
 * names its task and actor path itself, so a page that joins late (or a history trimmed to its
 * last records) can still be replayed without the records that came before.
 *
 * The page (plain ES modules under page/, checked by tsc through `// @ts-check`) imports its
 * types from here, so the names it reads — event types, context fields — are the product's own:
 * a rename in src/machines fails `tsc` instead of silently blanking a panel.
 */
import type { OwnerId, RegistryEvent, ResourceId, TaskEvent } from '../src/machines/events.ts';
import type { TaskView } from '../src/recovery-types.ts';
import type { FetchReport } from '../src/services/spill/fetch-stage.ts';
import type { DrainReport } from '../src/services/spill/drainer.ts';
import type { ProgressStage } from '../src/services/progress.ts';

export type { OwnerId, ResourceId };

/** One state of a machine definition, as the page draws it (nested boxes). */
export interface StateDef {
  key: string;
  /** xstate's state node id, e.g. `task.alive.restoring.fetching`. */
  id: string;
  type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  description?: string;
  /** Key of the initial child (compound states). */
  initial?: string;
  /** Children in definition order. */
  states: StateDef[];
  transitions: TransitionDef[];
  /** Actors invoked while in this state: `{ id, src }`. */
  invoke: { id: string; src: string }[];
  entry: string[];
  exit: string[];
}

export interface TransitionDef {
  /** `FETCH.HANDOFF`, `xstate.done.actor.fetch`, `always`, … */
  event: string;
  /** State node ids; empty for a targetless (self) transition. */
  targets: string[];
  guard?: string;
  /**
   * What the transition runs, in order: named actions by name (`handOffFetchedState`), inline
   * action creators by their XState type (`xstate.assign`, `xstate.enqueueActions`), other inline
   * functions as `inline` (see definitions.ts).
   */
  actions: string[];
  description?: string;
}

/** A machine's statechart, serialized from `machine.root`. */
export interface MachineDef {
  /** Unique within one server: the machine id, suffixed if two different machines share it. */
  key: string;
  id: string;
  description?: string;
  root: StateDef;
}

/** The page shows these: `k` tells which. `i` is a global sequence number, `t` ms since epoch. */
export type InspectorRecord =
  DefRecord | ActorRecord | SnapshotRecord | EventRecord | MetricsRecord | OwnersRecord;

export interface DefRecord {
  k: 'def';
  i: number;
  t: number;
  def: MachineDef;
}

/** Actor kinds the page distinguishes; xstate does not say, so we infer it from the logic. */
export type ActorKind = 'machine' | 'promise' | 'callback' | 'actor';

export interface ActorRecord {
  k: 'actor';
  i: number;
  t: number;
  /** The task (root actor) key: its id (`task-<taskId>`), suffixed `#n` if an id repeats. */
  task: string;
  /** Path of actor ids below the root, `''` for the root, e.g. `fetch/spill`. */
  path: string;
  id: string;
  /** Parent's path (`''` = the root), `null` for the root itself. */
  parent: string | null;
  kind: ActorKind;
  /** Key of the machine definition (`def` records), for machines. */
  def?: string;
}

export interface SnapshotRecord {
  k: 'snap';
  i: number;
  t: number;
  task: string;
  path: string;
  status: 'active' | 'done' | 'error' | 'stopped';
  /** Machine state value (string or nested object), absent for other actors. */
  value?: unknown;
  /** Sanitized context (plain data only: no handles, no buffers, no services). */
  context?: unknown;
  output?: unknown;
  error?: unknown;
  /** Type of the event that produced this snapshot. */
  cause: string;
}

export interface EventRecord {
  k: 'event';
  i: number;
  t: number;
  task: string;
  /** Target actor path. */
  path: string;
  /** Source actor path, or a name for the outside world (`caller`), or null if unknown. */
  source: string | null;
  /** True when the source was inferred from the event (a promise body's `parent.send`). */
  inferred?: true;
  type: string;
  /** Sanitized event payload without `type`. */
  data?: unknown;
}

export interface MetricsRecord {
  k: 'metrics';
  i: number;
  t: number;
  files: number;
  bytes: number;
  liveTasks: number;
}

/**
 * A watched recovery's ownership and progress now (`InspectorServer.watch`): per owner the
 * resources it holds with their task dir, files and bytes, the task dir's spill files one by
 * one, and the counters the task's context has only at a stage's end (bytes delivered while
 * the drain runs). Sent when it changed, a few times a second, and once after the ending.
 */
export interface OwnersRecord {
  k: 'owners';
  i: number;
  t: number;
  task: string;
  stage: ProgressStage;
  /** Who owns what, in the order `recovery.ownership()` lists it; empty once the task ended. */
  owners: {
    owner: OwnerId;
    resources: {
      resource: ResourceId;
      /** The task dir it lives in. */
      path?: string;
      files?: number;
      /** On disk (task dir, fetched state), or still to deliver (the drainer). */
      bytes?: number;
    }[];
  }[];
  /** The task dir, while one is owned. */
  dir?: string;
  /** Its files now, by name (at most 64), and what is beyond those. */
  files?: { name: string; bytes: number }[];
  moreFiles?: { files: number; bytes: number };
  checkpointBytes?: number;
  /** Checkpoint payload bytes read. */
  read: number;
  spilled: number;
  spillFiles: number;
  /** The payload to deliver, once fetched. */
  payload?: number;
  delivered: number;
  channels?: number;
  channelsFinished: number;
  /** What is being recovered, when the watcher said (`recover --inspect` does). */
  about?: RecoveryAbout;
  /**
   * The output files per channel as they are written (`recover --inspect`: the staged
   * `gate-<g>-channel-<c>.bin` files, so the page shows bytes per channel live), at most
   * {@link OwnersRecord.files}'s limit by name, the rest summed.
   */
  channelFiles?: { name: string; bytes: number }[];
  moreChannelFiles?: { files: number; bytes: number };
}

/** What a watched recovery reads and where it writes, as the page's header shows it. */
export interface RecoveryAbout {
  /** The checkpoint as the user named it (a URL without its credentials or query). */
  checkpoint: string;
  /** `flink` or `spwc`. */
  format?: string;
  /** Flink: the operator as given (`--operator`), and the subtask. */
  operator?: string;
  subtask?: number;
  /** Flink: input channels, or the output side (result subpartitions). */
  side?: 'input' | 'output';
  /** Rescaling: `I/P`. */
  rescale?: string;
  /** Where the files go (`--out`). */
  out?: string;
}

/** Server → page messages over the `/ws` socket. */
export type ServerMessage =
  | {
      type: 'hello';
      /** Changes when the server restarts: the page then starts over. */
      server: string;
      startedAt: number;
      /** Records the history dropped (bounded); the page says so. */
      dropped: number;
      stately: boolean;
    }
  | { type: 'batch'; records: InspectorRecord[] }
  | { type: 'bye' };

/** Every event type the task machine accepts, from the product's own union. */
export type TaskEventType = TaskEvent['type'];

/** The events the task sends its registry actor (`own`, `disown`, `close`). */
export type RegistryEventType = RegistryEvent['type'];

/** Only names the task machine accepts: a misspelled or removed one fails `tsc` here. */
type TaskEventNamed<T extends TaskEventType> = T;

/**
 * The task events that move ownership of a spill resource: the lane marks the step each one
 * caused, the log colors them by owner. The page keys a `Record<OwnershipEventType, …>` by it,
 * so adding one here makes tsc ask the page how to draw it.
 */
export type OwnershipEventType = TaskEventNamed<
  'SPILL.OWNED' | 'FETCH.HANDOFF' | 'DRAINER.READY' | 'SNAPSHOT.OWNED' | 'SPILL.RELEASED'
>;

/** An error after sanitizing (sanitize.ts `sanitizeError`). */
export interface ErrorSummary {
  name: string;
  message: string;
  code?: string;
  /** How many later errors it carries. */
  suppressed?: number;
}

/**
 * A field as the sanitizer leaves it: plain values as they are, errors as summaries, anything
 * else (a fetched state, a reader, a closeable) opaque — the page may show it, not read into it.
 */
type Sanitized<V> = V extends string | number | boolean
  ? V
  : V extends Error
    ? ErrorSummary
    : unknown;

/**
 * `EventRecord.data` of a task event of type `T`: its payload without `type`, sanitized. Every
 * field is optional: the sanitizer drops closeables and callbacks, and an empty payload is
 * absent.
 */
export type TaskEventData<T extends TaskEventType> = {
  [K in Exclude<keyof Extract<TaskEvent, { type: T }>, 'type'>]?: Sanitized<
    Extract<TaskEvent, { type: T }>[K]
  >;
};

/** `EventRecord.data` of an event the task sends its registry. */
export type RegistryEventData<T extends RegistryEventType> = {
  [K in Exclude<keyof Extract<RegistryEvent, { type: T }>, 'type'>]?: Sanitized<
    Extract<RegistryEvent, { type: T }>[K]
  >;
};

/**
 * The task machine's context as a root `SnapshotRecord.context` carries it: the fields the page
 * reads. Typed from the product's own XState-free types (this file is part of
 * `spillway/inspector`'s declarations); `test/inspector/protocol.typecheck.ts` checks that
 * `TaskContext` still matches it. Optional, because a page must also draw a task whose first
 * snapshot it never saw (a history trimmed to its last records).
 */
export interface TaskContextView {
  ownership?: TaskView['ownership'];
  closedByRegistry?: TaskView['closedByRegistry'];
  fetch?: Pick<FetchReport, 'spillFiles' | 'spilledBytes'>;
  drain?: Pick<DrainReport, 'bytes' | 'buffers'>;
  checkpoints?: TaskView['checkpoints'];
  /** Whether a checkpoint can be taken yet (Flink's recovery trigger). */
  trigger?: 'not-ready' | 'drainer';
  cause?: ErrorSummary;
}
