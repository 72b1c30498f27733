/**
 * G2 at compile time: ownership moves only by typed events. This file is never run; it is part
 * of `tsc --noEmit`, and every `@ts-expect-error` below must meet a real type error (an unused
 * one is itself an error), so a TaskRef that accepted any event would fail the type check.
 */
import { sendTo, setup } from 'xstate';
import type { TaskRef } from '../../src/machines/task-ref.ts';
import type { Closeable } from '../../src/services/registry.ts';
import type { Drainer } from '../../src/services/spill/drainer.ts';
import type { SpillReader } from '../../src/services/spill/spill-reader.ts';

declare const parent: TaskRef;
declare const closeable: Closeable;
declare const drainer: Drainer;
declare const reader: SpillReader;

// The typed hand-offs compile.
parent.send({
  type: 'SPILL.OWNED',
  resource: 'taskDir',
  owner: 'fetch',
  closeable,
  detail: '/tmp/x',
});
parent.send({ type: 'DRAINER.READY', drainer });
parent.send({ type: 'SNAPSHOT.OWNED', checkpointId: 3, reader });
parent.send({ type: 'SPILL.RELEASED', resource: 'snapshot-3' });

// @ts-expect-error an event the task does not know cannot move anything
parent.send({ type: 'SPILL.STOLEN', resource: 'taskDir' });

// @ts-expect-error a resource that is not tracked
parent.send({ type: 'SPILL.RELEASED', resource: 'spill-segment-0.bin' });

// @ts-expect-error an owner that does not exist
parent.send({ type: 'SPILL.OWNED', resource: 'taskDir', owner: 'registry', closeable, detail: '' });

// @ts-expect-error taking ownership without saying how to close the resource
parent.send({ type: 'SPILL.OWNED', resource: 'taskDir', owner: 'fetch', detail: '' });

// @ts-expect-error the drainer hand-off must carry the drainer
parent.send({ type: 'DRAINER.READY' });

// @ts-expect-error a snapshot is owned under a numeric checkpoint id
parent.send({ type: 'SNAPSHOT.OWNED', checkpointId: 'three', reader });

// A child machine that holds a TaskRef, as the stage machines do: sendTo its parent is checked.
export const goodChild = setup({
  types: {} as { context: { parent: TaskRef } },
}).createMachine({
  context: ({ input }) => ({ parent: (input as { parent: TaskRef }).parent }),
  entry: sendTo(({ context }) => context.parent, { type: 'SPILL.RELEASED', resource: 'drainer' }),
});

export const badChild = setup({
  types: {} as { context: { parent: TaskRef } },
}).createMachine({
  context: ({ input }) => ({ parent: (input as { parent: TaskRef }).parent }),
  // @ts-expect-error a child sending its TaskRef an event outside TaskEvent does not compile
  entry: sendTo(({ context }) => context.parent, { type: 'DRAINER.GONE' }),
});
