/// <reference types="node" preserve="true" />
// The declarations use Node's types (Buffer, streams, AsyncDisposable): a consumer whose
// TypeScript loads no @types by default (TS 6+, `types: []`) still compiles against them.
/**
 * `spillway/inspector`: the offline live inspector. A relay on 127.0.0.1 serves its own page
 * (no CDN, no external URL) and streams every task's actors, snapshots, events and spill
 * metrics to it. Nothing here is loaded by `spillway` itself; the Stately relay loads its
 * optional package only when asked for.
 *
 * @example
 * ```ts
 * import { recoverChannelState } from 'spillway';
 * import { startInspectorServer } from 'spillway/inspector';
 *
 * const inspector = await startInspectorServer({ port: 0 });
 * console.log(`inspector at ${inspector.url}`);
 * const recovery = recoverChannelState({ checkpoint, channels, inspect: inspector.inspect });
 * await recovery.done;
 * await inspector.close();
 * ```
 *
 * @packageDocumentation
 */
export {
  startInspectorServer,
  InspectorServerError,
  HISTORY_LIMIT,
  STATELY_BUFFER_LIMIT,
  STATELY_BUFFER_BYTES,
  type InspectorServer,
  type InspectorServerOptions,
  type StatelyStats,
  type StatelyTrimmedMessage,
} from './server.ts';
export type {
  OwnerId,
  ResourceId,
  StateDef,
  TransitionDef,
  MachineDef,
  InspectorRecord,
  DefRecord,
  ActorKind,
  ActorRecord,
  SnapshotRecord,
  EventRecord,
  MetricsRecord,
  OwnersRecord,
  RecoveryAbout,
  ServerMessage,
  TaskEventType,
  RegistryEventType,
  OwnershipEventType,
  ErrorSummary,
  TaskEventData,
  RegistryEventData,
  TaskContextView,
} from './protocol.ts';
