/**
 * The ownership map (G2) as pure functions: for each move of a spill resource, who owns what
 * afterwards, and what the task's registry (the backstop) must hold from then on. The task
 * machine's named actions apply these; a unit test can call them without an actor.
 *
 * The map and the registry never disagree because both are derived here from the same move:
 * a resource is in the map exactly while the registry holds a closeable for it, except where a
 * comment says why not.
 */
import type { Closeable } from '../services/registry.ts';
import type { Drainer } from '../services/spill/drainer.ts';
import type { FetchedChannelState } from '../services/spill/fetched-state.ts';
import type { SpillReader } from '../services/spill/spill-reader.ts';
import type { OwnerId, RegistryEvent, ResourceId } from './events.ts';

/** resource → the actor that owns it now. A resource is absent once it is closed. */
export type Ownership = Partial<Record<ResourceId, OwnerId>>;

/** The outcome of one ownership move: the new map and the registry messages that match it. */
export interface OwnershipMove {
  readonly ownership: Ownership;
  /** Sent to the registry actor in order, after the transition (see `resourceCloser`). */
  readonly registry: readonly RegistryEvent[];
}

/** The snapshot reader of checkpoint `id`, as a resource. */
export function snapshotResource(checkpointId: number): ResourceId {
  return `snapshot-${checkpointId}`;
}

/** The checkpoint writer actor of checkpoint `id`, as an owner (and the actor's id). */
export function checkpointOwner(checkpointId: number): `checkpoint-${number}` {
  return `checkpoint-${checkpointId}`;
}

/** The checkpoint id of a snapshot reader resource, or undefined for any other resource. */
export function snapshotCheckpointId(resource: string): number | undefined {
  return resource.startsWith('snapshot-') ? Number(resource.slice('snapshot-'.length)) : undefined;
}

function isSnapshotResource(resource: string): boolean {
  return snapshotCheckpointId(resource) !== undefined;
}

function without(ownership: Ownership, ...resources: ResourceId[]): Ownership {
  const next = { ...ownership };
  for (const r of resources) delete next[r];
  return next;
}

/**
 * The fetch stage took the task dir (before it exists on disk: hand-over at acquisition). The
 * registry's backstop for it discards the writer's files.
 *
 * @example
 * ```ts
 * takeTaskDir({}, 'fetch', writerCloseable).ownership; // { taskDir: 'fetch' }
 * ```
 */
export function takeTaskDir(
  ownership: Ownership,
  owner: OwnerId,
  closeable: Closeable,
): OwnershipMove {
  return {
    ownership: { ...ownership, taskDir: owner },
    registry: [{ type: 'own', resource: 'taskDir', closeable }],
  };
}

/**
 * The fetch stage sealed its files: the fetched state replaces the raw task dir (it now owns
 * the dir: its forced close deletes it) and the gap stage owns it.
 *
 * @example
 * ```ts
 * handOffFetchedState({ taskDir: 'fetch' }, state).ownership; // { fetchedState: 'gap' }
 * ```
 */
export function handOffFetchedState(
  ownership: Ownership,
  state: FetchedChannelState,
): OwnershipMove {
  return {
    ownership: { ...without(ownership, 'taskDir'), fetchedState: 'gap' },
    registry: [
      { type: 'own', resource: 'fetchedState', closeable: { close: () => state.close() } },
      { type: 'disown', resource: 'taskDir' },
    ],
  };
}

/**
 * The gap stage built the drainer; its main reader holds a grant on the state.
 *
 * @example
 * ```ts
 * adoptDrainer({ fetchedState: 'gap' }, drainer).ownership; // { fetchedState: 'gap', drainer: 'gap' }
 * ```
 */
export function adoptDrainer(ownership: Ownership, drainer: Drainer): OwnershipMove {
  return {
    ownership: { ...ownership, drainer: 'gap' },
    registry: [{ type: 'own', resource: 'drainer', closeable: drainer }],
  };
}

/**
 * The gap stage ended and the drain stage takes what it held. The registry keeps holding the
 * same closeables: only the owner's name changes.
 *
 * @example
 * ```ts
 * passToDrain({ fetchedState: 'gap', drainer: 'gap' }); // { fetchedState: 'drain', drainer: 'drain' }
 * ```
 */
export function passToDrain(ownership: Ownership): Ownership {
  const next = { ...ownership };
  if (next.fetchedState !== undefined) next.fetchedState = 'drain';
  if (next.drainer !== undefined) next.drainer = 'drain';
  return next;
}

/**
 * A checkpoint writer took the snapshot reader of checkpoint `id` (it holds its own grant).
 *
 * @example
 * ```ts
 * adoptSnapshotReader({}, 7, reader).ownership; // { 'snapshot-7': 'checkpoint-7' }
 * ```
 */
export function adoptSnapshotReader(
  ownership: Ownership,
  checkpointId: number,
  reader: SpillReader,
): OwnershipMove {
  const resource = snapshotResource(checkpointId);
  return {
    ownership: { ...ownership, [resource]: checkpointOwner(checkpointId) },
    registry: [{ type: 'own', resource, closeable: reader }],
  };
}

/**
 * An owner closed `resource` on the normal path. `stateDeleted`: that close returned the
 * state's last grant without error, so the state's delete has finished and nobody owns it any
 * more. Otherwise, when the releasing stage is about to end (the drainer) or the close failed,
 * snapshot grants or a failed delete may keep the state alive after the stage: then only the
 * task's registry holds it (and its close retries the delete, row C1).
 *
 * @example
 * ```ts
 * releaseResource({ drainer: 'drain', fetchedState: 'drain' }, 'drainer', false, true).ownership; // {}
 * ```
 */
export function releaseResource(
  ownership: Ownership,
  resource: ResourceId,
  failed: boolean,
  stateDeleted: boolean,
): OwnershipMove {
  const registry: RegistryEvent[] = [{ type: 'disown', resource }];
  if (stateDeleted) {
    // A deleted state needs no backstop; a state whose delete failed keeps it.
    registry.push({ type: 'disown', resource: 'fetchedState' });
    return { ownership: without(ownership, resource, 'fetchedState'), registry };
  }
  const next = without(ownership, resource);
  if (next.fetchedState !== undefined && (resource === 'drainer' || failed)) {
    next.fetchedState = 'task';
  }
  return { ownership: next, registry };
}

/**
 * What the registry closes when the task ends: everything still owned. Afterwards the map is
 * empty (the registry is the live truth from then on).
 *
 * @example
 * ```ts
 * leftovers({ fetchedState: 'gap' }); // ['fetchedState']
 * ```
 */
export function leftovers(ownership: Ownership): ResourceId[] {
  return Object.keys(ownership) as ResourceId[];
}

/**
 * Whether a checkpoint writer still holds a snapshot reader (the task then waits before it
 * finishes on its own).
 *
 * @example
 * ```ts
 * holdsSnapshot({ 'snapshot-7': 'checkpoint-7' }); // true
 * ```
 */
export function holdsSnapshot(ownership: Ownership): boolean {
  return Object.keys(ownership).some(isSnapshotResource);
}
