/**
 * What the relay sends to the page: small, self-describing, plain-JSON records. Each record
 * names its task and actor path itself, so a page that joins late (or a history trimmed to its
 * last records) can still be replayed without the records that came before.
 */

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
  DefRecord | ActorRecord | SnapshotRecord | EventRecord | MetricsRecord;

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
