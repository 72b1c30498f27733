/**
 * Walks the spec model with `xstate/graph`: every shortest and every simple path from the start
 * to an ending, and the set of all transitions (state × event) the model has, so the suite can
 * say which of them the replayed paths walked.
 */
import { getAdjacencyMap, getShortestPaths, getSimplePaths } from 'xstate/graph';
import type { SnapshotFrom } from 'xstate';
import { specMachine, type Ending, type SpecEventType } from './spec.machine.ts';

type SpecSnapshot = SnapshotFrom<typeof specMachine>;

/** One model path: the events in order, the model state after each, and how it ends. */
export interface ModelPath {
  /** `FETCH.SPILLED → FETCH.DONE → CANCEL`. */
  readonly name: string;
  readonly steps: readonly { event: SpecEventType; state: string }[];
  readonly ending: Ending;
  /** Ends other than by finishing: the paths the issue calls abort paths. */
  readonly isAbort: boolean;
}

/** `{alive: {restoring: 'gap'}}` → `alive.restoring.gap`. */
export function stateKey(value: unknown): string {
  if (typeof value === 'string') return value;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length !== 1)
    throw new Error(`parallel states are not modelled: ${JSON.stringify(value)}`);
  const [head, rest] = entries[0]!;
  return `${head}.${stateKey(rest)}`;
}

/** `state --event-->` as one string: the unit of transition coverage. */
export const transitionKey = (from: string, event: string): string => `${from} --${event}-->`;

const isEnding = (s: SpecSnapshot) => s.status === 'done';

/** The model's initial state key. */
export const INITIAL_STATE = 'alive.restoring.fetching.reading';

function toModelPath(path: {
  steps: { event: { type: string }; state: SpecSnapshot }[];
}): ModelPath {
  // The first step of an xstate/graph path is the initial state reached by `xstate.init`.
  const steps = path.steps
    .filter((s) => s.event.type !== 'xstate.init')
    .map((s) => ({ event: s.event.type as SpecEventType, state: stateKey(s.state.value) }));
  const ending = steps.at(-1)!.state as Ending;
  return {
    name: steps.map((s) => s.event).join(' → '),
    steps,
    ending,
    isAbort: ending !== 'finished',
  };
}

export interface Traversal {
  shortest: ModelPath[];
  simple: ModelPath[];
  /** Union of both, shortest first, without duplicates: what the suite replays. */
  paths: ModelPath[];
  /** Every transition of the reachable model, as `transitionKey`s. */
  transitions: string[];
}

/** Traverses the spec model (cheap: a few ms). */
export function traverseModel(): Traversal {
  const shortest = getShortestPaths(specMachine, { toState: isEnding }).map(toModelPath);
  const simple = getSimplePaths(specMachine, { toState: isEnding }).map(toModelPath);
  const byName = new Map<string, ModelPath>();
  for (const p of [...shortest, ...simple]) if (!byName.has(p.name)) byName.set(p.name, p);

  const transitions = new Set<string>();
  const adjacency = getAdjacencyMap(specMachine, {});
  for (const { state, transitions: out } of Object.values(adjacency)) {
    const from = stateKey(state.value);
    const edges = Object.values(out) as { event: { type: string }; state: SpecSnapshot }[];
    for (const { event, state: next } of edges) {
      // Events a state ignores appear as self-loops with an unchanged state: not transitions.
      if (stateKey(next.value) === from) continue;
      transitions.add(transitionKey(from, event.type));
    }
  }
  return { shortest, simple, paths: [...byName.values()], transitions: [...transitions].sort() };
}

/** The transitions one path walks. */
export function transitionsOf(path: ModelPath): string[] {
  let from = INITIAL_STATE;
  return path.steps.map((s) => {
    const key = transitionKey(from, s.event);
    from = s.state;
    return key;
  });
}
