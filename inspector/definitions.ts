/**
 * Serializes a machine's statechart (states, nesting, descriptions, transitions, invokes) from
 * `machine.root` into plain JSON, so the page can draw it from the definition itself rather
 * than from a hand-made copy that could drift from the code.
 */
import type { AnyStateMachine, StateNode } from 'xstate';
import type { MachineDef, StateDef, TransitionDef } from './protocol.ts';

type AnyStateNode = StateNode<any, any, any, any>;

/**
 * The statechart of `machine` as plain JSON.
 *
 * @example
 * ```ts
 * import { taskMachine } from '../src/machines/task.machine.ts';
 * const def = serializeMachine(taskMachine, 'task');
 * def.root.states.map((s) => s.key); // ['alive', 'finished', 'failed', 'cancelled']
 * ```
 */
export function serializeMachine(machine: AnyStateMachine, key: string = machine.id): MachineDef {
  const root = serializeState(machine.root as AnyStateNode);
  return { key, id: machine.id, description: root.description, root };
}

function serializeState(node: AnyStateNode): StateDef {
  const transitions: TransitionDef[] = [];
  for (const list of node.transitions.values()) {
    for (const t of list) transitions.push(serializeTransition(String(t.eventType), t));
  }
  for (const t of node.always ?? []) transitions.push(serializeTransition('always', t));
  const initial =
    node.type === 'compound'
      ? (node.initial?.target?.[0] as AnyStateNode | undefined)?.key
      : undefined;
  return {
    key: node.key,
    id: node.id,
    type: node.type,
    ...(node.description ? { description: node.description } : {}),
    ...(initial ? { initial } : {}),
    states: Object.values(node.states as Record<string, AnyStateNode>).map(serializeState),
    transitions,
    invoke: node.invoke.map((inv) => ({
      id: inv.id,
      src: typeof inv.src === 'string' ? inv.src : inv.id,
    })),
    entry: node.entry.map(actionName).filter((n): n is string => n !== undefined),
    exit: node.exit.map(actionName).filter((n): n is string => n !== undefined),
  };
}

function serializeTransition(
  event: string,
  t: {
    target?: ReadonlyArray<AnyStateNode> | undefined;
    guard?: unknown;
    actions: readonly unknown[];
    description?: string;
  },
): TransitionDef {
  const guard = guardName(t.guard);
  return {
    event,
    targets: (t.target ?? []).map((s) => s.id),
    ...(guard ? { guard } : {}),
    actions: t.actions.map(actionName).filter((n): n is string => n !== undefined),
    ...(t.description ? { description: t.description } : {}),
  };
}

/** The config keys JavaScript names an inline arrow after: not an action's name. */
const CONFIG_KEYS = new Set(['', 'actions', 'entry', 'exit']);

/**
 * Named actions keep their name. Inline ones are shown by what XState calls them: an inline
 * action creator by its type (`xstate.assign`, `xstate.enqueueActions`; the page sets these
 * apart from named actions by the prefix), an inline function by its own name, or `inline` when
 * its only name is the config key it was written under (`actions: ({ event }) => …` is named
 * `actions`, which would read like a named action).
 */
function actionName(action: unknown): string | undefined {
  if (typeof action === 'string') return action;
  if (typeof action === 'function') {
    const type = (action as { type?: unknown }).type;
    if (typeof type === 'string') return type;
    return CONFIG_KEYS.has(action.name) ? 'inline' : action.name;
  }
  if (action && typeof action === 'object' && 'type' in action) {
    return String((action as { type: unknown }).type);
  }
  return undefined;
}

function guardName(guard: unknown): string | undefined {
  if (guard === undefined) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') return guard.name || 'inline';
  if (guard && typeof guard === 'object' && 'type' in guard) {
    return String((guard as { type: unknown }).type);
  }
  return 'guard';
}
