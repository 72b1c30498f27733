/**
 * The model of a Flink checkpoint's `_metadata` that Spillway reads: operators, subtasks and the
 * channel-state handles (input channels, result subpartitions) with where their bytes live.
 * Everything else a `_metadata` holds (keyed/operator state, master states, coordinator state)
 * is parsed for its bounds and skipped: Spillway only recovers channel state.
 *
 * @example
 * ```ts
 * import type { FlinkCheckpointMetadata } from './metadata-types.js';
 * const inputs = (m: FlinkCheckpointMetadata) =>
 *   m.operators.flatMap((o) => o.subtasks.flatMap((s) => s.inputChannels));
 * ```
 */
import type { RemoteOptions } from '../../locations/remote-options.js';

/** Where a stream handle's bytes are. Inline bytes are NOT copied: they are a range of _metadata. */
export type FlinkStreamHandle =
  | {
      kind: 'inline';
      /** The handle name Flink wrote (ByteStreamStateHandle.handleName). */
      name: string;
      /** The `_metadata` location the bytes are in. */
      file: string;
      /** Byte offset of the first inline byte within `file`. */
      start: number;
      length: number;
    }
  | {
      kind: 'file';
      /** As written: an absolute path or a URI (file:/..., s3://..., hdfs://...). */
      path: string;
      size: number;
    }
  | {
      kind: 'relative';
      /**
       * Relative to the directory that holds `_metadata` (Flink's RelativeFileStateHandle;
       * Flink writes only this relative path, then the size).
       */
      relativePath: string;
      size: number;
    }
  | {
      /**
       * File-merging checkpoints (SegmentFileStateHandle): a range of a shared physical file.
       * Flink's EmptySegmentFileStateHandle placeholder reads as path 'empty', start 0, length 0.
       */
      kind: 'segment';
      path: string;
      start: number;
      length: number;
      /** CheckpointedStateScope: where the physical file lives. */
      scope: 'exclusive' | 'shared';
    };

export interface FlinkChannelHandle {
  side: 'input' | 'output';
  /** As written in the handle. */
  subtaskIndex: number;
  /** Input: gateIdx; output: partitionIdx. */
  gate: number;
  /** Input: inputChannelIdx; output: subPartitionIdx. */
  channel: number;
  /** Offsets of entries in the delegate (each points at an entry's int32 length). */
  offsets: number[];
  /** Bytes incl. the 4-byte entry lengths, as Flink's getStateSize() counts them. */
  stateSize: number;
  delegate: FlinkStreamHandle;
  /** Where this handle starts in _metadata (for error messages). */
  metadataOffset: number;
  /**
   * v6: whether Flink wrote it inside a merged handle (one per subtask and delegate stream,
   * Flink 2.x's `Merged…StateHandle`), so a writer keeps that shape.
   */
  merged?: boolean;
}

/**
 * A byte range `[start, end)` of `_metadata`: what a writer carries over verbatim (keyed,
 * operator and coordinator state, master states) while it replaces the channel handles.
 */
export interface FlinkByteRange {
  readonly start: number;
  readonly end: number;
}

export interface FlinkSubtaskState {
  index: number;
  finished: boolean;
  inputChannels: FlinkChannelHandle[];
  outputSubpartitions: FlinkChannelHandle[];
  /**
   * Where it lies in `_metadata`: `head` from the stored index to the end of the raw keyed
   * state (all of a finished subtask), `channels` its input and output handle lists.
   */
  layout?: { readonly head: FlinkByteRange; readonly channels: FlinkByteRange };
}

export interface FlinkOperatorState {
  /** 32 lowercase hex digits, as Flink's OperatorID.toString() prints it. */
  id: string;
  /** v5+ */
  name?: string;
  /** v5+ */
  uid?: string;
  parallelism: number;
  maxParallelism: number;
  /** Subtask count -1: fully finished. */
  finished: boolean;
  subtasks: FlinkSubtaskState[];
  /** Where it lies in `_metadata`: `head` from its first byte to its subtask count, included. */
  layout?: { readonly head: FlinkByteRange };
}

export interface FlinkCheckpointMetadata {
  /** The _metadata file (local path or URL) actually read. */
  location: string;
  /** 3..6 */
  version: number;
  /** int64 as a safe integer (error if not safe). */
  checkpointId: number;
  operators: FlinkOperatorState[];
  /**
   * Where the parts between the operators lie in `_metadata`: `head` from the magic number to
   * the operator count, included (master states in it); `trailer` the v4+ properties to the end.
   */
  layout?: { readonly head: FlinkByteRange; readonly trailer: FlinkByteRange };
  /**
   * Relative paths (Flink's `RelativeFileStateHandle`, resolved against the `_metadata`'s
   * directory) that keyed or operator state names: files a copy of the checkpoint must carry.
   */
  stateFiles?: string[];
}

export interface ReadFlinkMetadataOptions {
  signal?: AbortSignal;
  remote?: RemoteOptions;
  /** Refuse a `_metadata` larger than this many bytes. */
  maxBytes?: number;
}
