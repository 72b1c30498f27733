/**
 * The ownership moves of src/machines/ownership.ts as pure functions, without an actor: each
 * move gives the map the task snapshot shows (G2) and exactly the registry messages that keep
 * the backstop holding what the map says is owned.
 */
import { describe, expect, it } from 'vitest';
import type { Closeable } from '../../src/services/registry.ts';
import type { Drainer } from '../../src/services/spill/drainer.ts';
import type { FetchedChannelState } from '../../src/services/spill/fetched-state.ts';
import type { SpillReader } from '../../src/services/spill/spill-reader.ts';
import type { RegistryEvent } from '../../src/machines/events.ts';
import {
  adoptDrainer,
  adoptSnapshotReader,
  handOffFetchedState,
  holdsSnapshot,
  leftovers,
  passToDrain,
  releaseResource,
  takeTaskDir,
  type Ownership,
  type OwnershipMove,
} from '../../src/machines/ownership.ts';

/** What the registry holds after a sequence of messages, by resource. */
function replay(messages: readonly RegistryEvent[], held = new Map<string, Closeable>()) {
  for (const m of messages) {
    if (m.type === 'own') held.set(m.resource, m.closeable);
    else if (m.type === 'disown') held.delete(m.resource);
  }
  return held;
}

const closes: string[] = [];
const writer: Closeable = { close: () => void closes.push('taskDir') };
const state = { close: async () => void closes.push('fetchedState') } as FetchedChannelState;
const drainer = { close: async () => void closes.push('drainer') } as unknown as Drainer;
const reader = { close: async () => void closes.push('snapshot') } as unknown as SpillReader;

describe('ownership moves', () => {
  it('G2 a recovery hands every resource on and the registry holds exactly what is owned', () => {
    const held = new Map<string, Closeable>();
    let ownership: Ownership = {};
    const apply = (move: OwnershipMove) => {
      ownership = move.ownership;
      replay(move.registry, held);
      expect([...held.keys()].sort()).toEqual(Object.keys(ownership).sort());
    };

    apply(takeTaskDir(ownership, 'fetch', writer));
    expect(ownership).toEqual({ taskDir: 'fetch' });

    apply(handOffFetchedState(ownership, state));
    expect(ownership).toEqual({ fetchedState: 'gap' });

    apply(adoptDrainer(ownership, drainer));
    expect(ownership).toEqual({ fetchedState: 'gap', drainer: 'gap' });

    ownership = passToDrain(ownership);
    expect(ownership).toEqual({ fetchedState: 'drain', drainer: 'drain' });

    apply(adoptSnapshotReader(ownership, 7, reader));
    expect(ownership).toMatchObject({ 'snapshot-7': 'checkpoint-7' });
    expect(holdsSnapshot(ownership)).toBe(true);

    // The drainer goes first; the snapshot's grant keeps the state alive, held by the task.
    apply(releaseResource(ownership, 'drainer', false, false));
    expect(ownership).toEqual({ fetchedState: 'task', 'snapshot-7': 'checkpoint-7' });

    // The snapshot reader held the last grant: its release deleted the state too.
    apply(releaseResource(ownership, 'snapshot-7', false, true));
    expect(ownership).toEqual({});
    expect(holdsSnapshot(ownership)).toBe(false);
  });

  it('the fetched state closes the task dir once handed off: the backstop closes the state, not the writer', async () => {
    closes.length = 0;
    const first = takeTaskDir({}, 'fetch', writer);
    const held = replay(first.registry);
    const second = handOffFetchedState(first.ownership, state);
    replay(second.registry, held);
    for (const c of held.values()) await c.close();
    expect(closes).toEqual(['fetchedState']);
  });

  it('C1 a failed release leaves the state owned by the task, whose registry retries its delete', () => {
    const before: Ownership = { fetchedState: 'drain', 'snapshot-3': 'checkpoint-3' };
    const move = releaseResource(before, 'snapshot-3', true, false);
    expect(move.ownership).toEqual({ fetchedState: 'task' });
    expect(move.registry).toEqual([{ type: 'disown', resource: 'snapshot-3' }]);
  });

  it('a deleted state leaves the map and the registry in the same move', () => {
    const move = releaseResource(
      { drainer: 'drain', fetchedState: 'drain' },
      'drainer',
      false,
      true,
    );
    expect(move.ownership).toEqual({});
    expect(move.registry).toEqual([
      { type: 'disown', resource: 'drainer' },
      { type: 'disown', resource: 'fetchedState' },
    ]);
  });

  it('passToDrain renames only what the gap held', () => {
    expect(passToDrain({})).toEqual({});
    expect(passToDrain({ fetchedState: 'gap' })).toEqual({ fetchedState: 'drain' });
  });

  it('leftovers are everything still owned as the task ends', () => {
    expect(leftovers({ fetchedState: 'task', drainer: 'drain' }).sort()).toEqual([
      'drainer',
      'fetchedState',
    ]);
    expect(leftovers({})).toEqual([]);
  });

  it('moves never mutate the map they are given', () => {
    const before: Ownership = Object.freeze({ taskDir: 'fetch' });
    expect(() => handOffFetchedState(before, state)).not.toThrow();
    expect(before).toEqual({ taskDir: 'fetch' });
  });
});
