/**
 * Interop with Stately's inspector (stately.ai/inspect) through `@statelyai/inspect` 0.7.2:
 * the relay's sanitized records are turned back into inspection events and run through the
 * package's own conversion (`createInspector`), so the stream has exactly the format Stately's
 * UI expects. The events go to an in-process adapter that writes to our own 127.0.0.1 relay;
 * there is no WebSocket client, so the package's endless-retry loop (5 s, forever, even after
 * `stop()`, when nothing listens) cannot happen and nothing here keeps the process alive.
 */
import type { StatelyInspectionEvent } from '@statelyai/inspect';
import type { InspectionEvent } from 'xstate';
import type { InspectorRecord } from './protocol.ts';

/** The Stately relay needs a package nothing else does: it is an optional peer dependency. */
export class StatelyUnavailableError extends Error {
  constructor(cause: unknown) {
    super(
      'the Stately relay needs the optional package @statelyai/inspect@0.7.2: npm install @statelyai/inspect@0.7.2',
      { cause },
    );
    this.name = 'StatelyUnavailableError';
  }
}

/** Loads `@statelyai/inspect` only when the relay is asked for (it pulls in superjson & co). */
async function loadStately(): Promise<typeof import('@statelyai/inspect')> {
  try {
    return await import('@statelyai/inspect');
  } catch (error) {
    throw new StatelyUnavailableError(error);
  }
}

/** The hosted UI. Only the `/stately` bridge page names it, and only when the option is on. */
export const STATELY_INSPECTOR_URL = 'https://stately.ai/inspect';

export interface StatelyForwarder {
  /** Feeds one relay record; the conversion runs a moment later (the package defers it). */
  forward(record: InspectorRecord): void;
  /** Stops forwarding; conversions already deferred are dropped. */
  stop(): void;
}

/** A stand-in for an actor ref holding only plain data: what the package reads from a ref. */
interface StubRef {
  id: string;
  sessionId: string;
  _parent?: StubRef;
  logic?: { config: unknown };
  snapshot: Record<string, unknown>;
  getSnapshot(): Record<string, unknown>;
  send(): void;
}

const MAX_STUBS = 20_000;

/**
 * Creates the forwarder. `send` receives Stately-format events (`@xstate.actor` with the machine
 * definition, `@xstate.snapshot`, `@xstate.event`, each with `_version: '0.7.2'`).
 *
 * @example
 * ```ts
 * const forwarder = await createStatelyForwarder((e) => socket.send(JSON.stringify(e)), configFor);
 * forwarder.forward(record);
 * ```
 */
export async function createStatelyForwarder(
  send: (event: StatelyInspectionEvent) => void,
  configFor: (defKey: string) => unknown,
): Promise<StatelyForwarder> {
  const { createInspector } = await loadStately();
  let stopped = false;
  const inspector = createInspector({
    send: (event) => {
      if (!stopped) send(event);
    },
  });
  const stubs = new Map<string, StubRef>();

  const stubFor = (task: string, path: string, defKey?: string): StubRef => {
    const key = `${task}\u0000${path}`;
    let stub = stubs.get(key);
    if (stub === undefined) {
      const slash = path.lastIndexOf('/');
      const parent = path === '' ? undefined : stubFor(task, slash < 0 ? '' : path.slice(0, slash));
      stub = {
        id: path === '' ? task : path.slice(slash + 1),
        // A root whose session id equals its id would be named after its machine ('task')
        // by the package; a distinct session id keeps the task's own name.
        sessionId: path === '' ? `${task}#root` : `${task}/${path}`,
        ...(parent ? { _parent: parent } : {}),
        snapshot: { status: 'active' },
        getSnapshot() {
          return this.snapshot;
        },
        send() {},
      };
      if (stubs.size >= MAX_STUBS) {
        // Oldest first (insertion order): those belong to tasks that ended long ago.
        let drop = MAX_STUBS / 4;
        for (const k of stubs.keys()) {
          if (drop-- <= 0) break;
          stubs.delete(k);
        }
      }
      stubs.set(key, stub);
    }
    if (defKey !== undefined && stub.logic === undefined)
      stub.logic = { config: configFor(defKey) };
    return stub;
  };

  const next = (event: unknown) => inspector.inspect.next?.(event as InspectionEvent);

  return {
    forward(record) {
      if (stopped) return;
      switch (record.k) {
        case 'actor': {
          const ref = stubFor(record.task, record.path, record.def);
          next({ type: '@xstate.actor', actorRef: ref, rootId: `${record.task}#root` });
          return;
        }
        case 'snap': {
          const ref = stubFor(record.task, record.path);
          const snapshot: Record<string, unknown> = { status: record.status };
          if (record.value !== undefined) snapshot.value = record.value;
          if (record.context !== undefined) snapshot.context = record.context;
          if (record.output !== undefined) snapshot.output = record.output;
          if (record.error !== undefined) snapshot.error = record.error;
          ref.snapshot = snapshot;
          next({
            type: '@xstate.snapshot',
            actorRef: ref,
            rootId: `${record.task}#root`,
            snapshot,
            event: { type: record.cause },
          });
          return;
        }
        case 'event': {
          const target = stubFor(record.task, record.path);
          const source =
            record.source !== null && record.source !== 'caller' && !record.source.includes(':')
              ? stubFor(record.task, record.source)
              : undefined;
          next({
            type: '@xstate.event',
            actorRef: target,
            sourceRef: source,
            rootId: `${record.task}#root`,
            event: { ...(record.data as object | undefined), type: record.type },
          });
          return;
        }
        default:
          return;
      }
    },
    stop() {
      stopped = true;
      stubs.clear();
    },
  };
}

/**
 * The page a person opens (online) to watch the stream in Stately's UI: it embeds the hosted
 * inspector and posts the relay's events into it after the `@statelyai.connected` handshake,
 * like `@statelyai/inspect/server`'s bridge, but it reads from our 127.0.0.1 relay.
 */
export function statelyBridgeHtml(inspectorUrl: string = STATELY_INSPECTOR_URL): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Spillway → Stately inspector</title>
  <style>
    html, body { margin: 0; height: 100%; background: #0d1117; }
    iframe { width: 100%; height: 100%; border: 0; display: block; }
    #trimmed { margin: 0; padding: 4px 8px; font: 13px sans-serif; color: #f0c674; }
  </style>
</head>
<body>
  <p id="trimmed" hidden></p>
  <iframe id="inspector" src="${inspectorUrl}"></iframe>
  <script>
    const iframe = document.getElementById('inspector');
    const buffer = [];
    let connected = false;
    window.addEventListener('message', (e) => {
      if (e.data && e.data.type === '@statelyai.connected') {
        connected = true;
        for (const event of buffer.splice(0)) iframe.contentWindow.postMessage(event, '*');
      }
    });
    const ws = new WebSocket('ws://' + location.host + '/stately/ws');
    ws.onmessage = (message) => {
      const event = JSON.parse(message.data);
      if (event.type === '@spillway.trimmed') {
        // The relay's buffer had dropped the start of the stream before this page came.
        const note = document.getElementById('trimmed');
        note.textContent = event.missed + ' earlier event(s) were dropped by the relay (it keeps the last ' +
          event.keeps.messages + ' or ' + Math.round(event.keeps.bytes / 1048576) + ' MiB); what follows is the rest.';
        note.hidden = false;
        return;
      }
      if (connected) iframe.contentWindow.postMessage(event, '*');
      else buffer.push(event);
    };
  </script>
</body>
</html>
`;
}
