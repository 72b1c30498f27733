/**
 * Turns XState inspection events into the relay's plain records ({@link InspectorRecord}):
 * which task and actor path each belongs to, what kind of actor it is, the machine definitions
 * the page draws, sanitized snapshots and events, and who sent an event when XState does not
 * say (a promise body's `parent.send(...)` carries no `sourceRef`).
 */
import {
  fromCallback,
  fromPromise,
  type AnyActorLogic,
  type AnyActorRef,
  type AnyStateMachine,
  type InspectionEvent,
} from 'xstate';
import { checkpointOwner, snapshotCheckpointId } from '../src/machines/ownership.ts';
import { serializeMachine } from './definitions.ts';
import { sanitize, sanitizeEventData } from './sanitize.ts';
import type {
  ActorKind,
  ActorRecord,
  DefRecord,
  EventRecord,
  InspectorRecord,
  SnapshotRecord,
} from './protocol.ts';

/** A record before the relay numbers it. */
export type UnnumberedRecord = InspectorRecord extends infer R
  ? R extends InspectorRecord
    ? Omit<R, 'i'>
    : never
  : never;

interface ActorInfo {
  task: string;
  path: string;
  parent: string | null;
  kind: ActorKind;
  def?: string;
  lastStatus?: string;
}

type Ref = AnyActorRef & { _parent?: Ref; logic?: AnyActorLogic };

// Promise and callback logic look alike from outside; their transition functions come from one
// factory each, so comparing the source text tells them apart in any build of xstate.
const PROMISE_TRANSITION = String(fromPromise(async () => undefined).transition);
const CALLBACK_TRANSITION = String(fromCallback(() => undefined).transition);

/** Events a task receives from a promise body via `parent.send(...)`: who really sent them. */
function inferSource(event: Record<string, unknown>): string | null {
  switch (event.type) {
    case 'SPILL.OWNED':
      return typeof event.owner === 'string' ? event.owner : null;
    case 'FETCH.HANDOFF':
      return 'fetch';
    case 'DRAINER.READY':
    case 'TRIGGER.INSTALLED':
      return 'gap';
    case 'SNAPSHOT.OWNED':
      return checkpointOwner(Number(event.checkpointId));
    case 'SPILL.RELEASED': {
      const r = String(event.resource);
      if (r === 'drainer') return 'drain';
      const checkpointId = snapshotCheckpointId(r);
      return checkpointId === undefined ? null : checkpointOwner(checkpointId);
    }
    case 'CHECKPOINT':
    case 'CANCEL':
    case 'FAIL':
    case 'FINISH':
      // Sent by whoever holds the Recovery (recover.ts: checkpoint(), cancel(), the signal).
      return 'caller';
    default:
      return null;
  }
}

/**
 * Stateful translator: one per relay. Everything it keeps is keyed weakly by actor, or bounded,
 * so a long demo does not grow it.
 *
 * @example
 * ```ts
 * const recorder = new Recorder((record) => relay.push(record));
 * recoverChannelState({ ..., inspect: (e) => recorder.handle(e) });
 * ```
 */
export class Recorder {
  private readonly actors = new WeakMap<object, ActorInfo>();
  private readonly defs = new WeakMap<object, string>();
  private readonly defKeys = new Set<string>();
  /** Serialized definition → key: `machine.provide(...)` copies draw the same chart. */
  private readonly defsByJson = new Map<string, string>();
  private readonly configs = new Map<string, unknown>();
  private readonly kinds = new WeakMap<object, ActorKind>();
  /** Root id → how often it was seen: a repeated task id gets `#2`, `#3`, … */
  private readonly rootCounts = new Map<string, number>();

  constructor(private readonly emit: (record: UnnumberedRecord) => void) {}

  /** The machine config behind a definition key (Stately's inspector draws from it). */
  configFor(defKey: string): unknown {
    return this.configs.get(defKey);
  }

  /** The task key of a root actor (its records' `task`), announcing it if it is new. */
  taskOf(root: object): string {
    return this.info(root as Ref).task;
  }

  /** Handles one inspection event; cheap for the kinds the page does not show. */
  handle(event: InspectionEvent): void {
    switch (event.type) {
      case '@xstate.actor':
        this.info(event.actorRef as Ref);
        return;
      case '@xstate.event':
        this.onEvent(event.actorRef as Ref, event.sourceRef as Ref | undefined, event.event);
        return;
      case '@xstate.snapshot':
        this.onSnapshot(event.actorRef as Ref, event.snapshot, event.event);
        return;
      default:
        // microsteps, actions, transitions: the page derives what it shows from snapshots.
        return;
    }
  }

  private onEvent(target: Ref, sourceRef: Ref | undefined, event: { type: string }): void {
    const to = this.info(target);
    let source: string | null = null;
    let inferred = false;
    if (sourceRef !== undefined) {
      const from = this.info(sourceRef);
      source = from.task === to.task ? from.path : `${from.task}:${from.path}`;
    } else if (to.path === '') {
      source = inferSource(event as unknown as Record<string, unknown>);
      inferred = source !== null && source !== 'caller';
    }
    const record: Omit<EventRecord, 'i'> = {
      k: 'event',
      t: Date.now(),
      task: to.task,
      path: to.path,
      source,
      type: event.type,
    };
    if (inferred) record.inferred = true;
    const data = sanitizeEventData(event);
    if (data !== undefined) record.data = data;
    this.emit(record);
  }

  private onSnapshot(ref: Ref, snapshot: unknown, cause: { type: string }): void {
    const info = this.info(ref);
    const snap = snapshot as {
      status: SnapshotRecord['status'];
      value?: unknown;
      context?: unknown;
      output?: unknown;
      error?: unknown;
    };
    // A callback actor's snapshot changes only its status; skip the rest (the registry gets
    // one own/disown per hand-off, which the event log already shows).
    if (info.kind !== 'machine' && info.lastStatus === snap.status) return;
    info.lastStatus = snap.status;
    const record: Omit<SnapshotRecord, 'i'> = {
      k: 'snap',
      t: Date.now(),
      task: info.task,
      path: info.path,
      status: snap.status,
      cause: cause.type,
    };
    if (info.kind === 'machine') {
      record.value = sanitize(snap.value);
      record.context = sanitize(snap.context);
    }
    if (snap.status === 'done' && snap.output !== undefined) record.output = sanitize(snap.output);
    if (snap.status === 'error') record.error = sanitize(snap.error);
    this.emit(record);
  }

  /** What we know of an actor; the first sight emits its `actor` record (and definition). */
  private info(ref: Ref): ActorInfo {
    const known = this.actors.get(ref);
    if (known !== undefined) return known;
    const parentRef = ref._parent;
    let task: string;
    let path: string;
    let parent: string | null;
    if (parentRef === undefined) {
      const n = (this.rootCounts.get(ref.id) ?? 0) + 1;
      // Bounded: a long demo sees thousands of task ids; only repeats within a while matter.
      if (this.rootCounts.size > 10_000) this.rootCounts.clear();
      this.rootCounts.set(ref.id, n);
      task = n === 1 ? ref.id : `${ref.id}#${n}`;
      path = '';
      parent = null;
    } else {
      const p = this.info(parentRef);
      task = p.task;
      parent = p.path;
      path = p.path === '' ? ref.id : `${p.path}/${ref.id}`;
    }
    const logic = ref.logic ?? (typeof ref.src === 'object' ? ref.src : undefined);
    const kind = this.kindOf(logic);
    const info: ActorInfo = { task, path, parent, kind };
    if (kind === 'machine') info.def = this.defKey(logic as AnyStateMachine);
    this.actors.set(ref, info);
    const record: Omit<ActorRecord, 'i'> = {
      k: 'actor',
      t: Date.now(),
      task,
      path,
      id: ref.id,
      parent,
      kind,
    };
    if (info.def !== undefined) record.def = info.def;
    this.emit(record);
    return info;
  }

  private kindOf(logic: AnyActorLogic | undefined): ActorKind {
    if (logic === undefined) return 'actor';
    const cached = this.kinds.get(logic);
    if (cached !== undefined) return cached;
    let kind: ActorKind = 'actor';
    if ('root' in logic && 'config' in logic) kind = 'machine';
    else if (String(logic.transition) === PROMISE_TRANSITION) kind = 'promise';
    else if (String(logic.transition) === CALLBACK_TRANSITION) kind = 'callback';
    this.kinds.set(logic, kind);
    return kind;
  }

  /** A key per distinct machine; the first sight emits its definition. */
  private defKey(machine: AnyStateMachine): string {
    const known = this.defs.get(machine);
    if (known !== undefined) return known;
    const def = serializeMachine(machine);
    const json = JSON.stringify(def);
    const same = this.defsByJson.get(json);
    if (same !== undefined) {
      this.defs.set(machine, same);
      return same;
    }
    let key = machine.id;
    for (let n = 2; this.defKeys.has(key); n++) key = `${machine.id}#${n}`;
    this.defKeys.add(key);
    this.defs.set(machine, key);
    this.defsByJson.set(json, key);
    this.configs.set(key, machine.config);
    const record: Omit<DefRecord, 'i'> = { k: 'def', t: Date.now(), def: { ...def, key } };
    this.emit(record);
    return key;
  }
}
