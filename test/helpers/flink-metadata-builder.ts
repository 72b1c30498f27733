/**
 * A small writer of synthetic Flink `_metadata` files, versions 3–6, for every handle kind
 * Flink 1.20/2.x can write — written from Flink's serializers (`Checkpoints.storeCheckpointMetadata`,
 * `MetadataV2V3SerializerBase`, `MetadataV3`…`V6Serializer`, `ChannelStateHandleSerializerV1/V2`,
 * `AbstractMergedChannelStateHandle`), so tests can cover kinds a real job here did not write
 * and can corrupt any field at a known offset. `DataOutputStream` semantics: big-endian,
 * `writeUTF` = u16 length + modified UTF-8.
 */

/** A growable big-endian byte writer that records where named fields start. */
export class DataOut {
  private chunks: Buffer[] = [];
  private length = 0;
  /** Offsets of fields marked with {@link mark}, by name (the last mark of a name wins). */
  readonly marks = new Map<string, number>();

  get offset(): number {
    return this.length;
  }

  mark(name: string): this {
    this.marks.set(name, this.length);
    return this;
  }

  raw(b: Buffer): this {
    this.chunks.push(b);
    this.length += b.length;
    return this;
  }

  u8(v: number): this {
    return this.raw(Buffer.from([v & 0xff]));
  }

  u16(v: number): this {
    const b = Buffer.alloc(2);
    b.writeUInt16BE(v);
    return this.raw(b);
  }

  i32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v | 0);
    return this.raw(b);
  }

  i64(v: number | bigint): this {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(BigInt(v));
    return this.raw(b);
  }

  bool(v: boolean): this {
    return this.u8(v ? 1 : 0);
  }

  /** `writeUTF`: modified UTF-8 (U+0000 as C0 80; surrogates encoded one by one). */
  utf(s: string): this {
    const bytes = modifiedUtf8(s);
    return this.u16(bytes.length).raw(bytes);
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.chunks, this.length);
  }
}

export function modifiedUtf8(s: string): Buffer {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 1 && c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 0x3f));
    else out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
  }
  return Buffer.from(out);
}

export type StreamSpec =
  | null
  | { kind: 'inline'; name: string; data: Buffer }
  | { kind: 'file'; path: string; size: number }
  | { kind: 'relative'; relativePath: string; size: number }
  | { kind: 'key-groups'; start: number; offsets: number[]; delegate: StreamSpec }
  | {
      kind: 'segment';
      start: number;
      length: number;
      scope: 0 | 1;
      path: string;
      logicalId: string;
    }
  | { kind: 'empty-segment' };

export type KeyedSpec =
  | null
  | {
      kind: 'key-groups';
      /** 3 = KEY_GROUPS_HANDLE (old), 12 = KEY_GROUPS_HANDLE_V2, 7 = savepoint. */
      tag: 3 | 12 | 7;
      start: number;
      offsets: number[];
      delegate: StreamSpec;
    }
  | {
      kind: 'incremental';
      v2: boolean;
      checkpointId: number;
      backendId: string;
      start: number;
      count: number;
      meta: StreamSpec;
      shared: [string, StreamSpec][];
      private: [string, StreamSpec][];
    }
  | {
      kind: 'changelog';
      v2: boolean;
      start: number;
      count: number;
      materialized: KeyedSpec[];
      nonMaterialized: KeyedSpec[];
    }
  | { kind: 'changelog-bytes'; start: number; count: number; changes: [number, Buffer][] }
  | {
      kind: 'changelog-file';
      v2: boolean;
      start: number;
      count: number;
      handles: [number, StreamSpec][];
    };

export interface OperatorStateEntry {
  name: string;
  mode: number;
  offsets: number[];
}

export type OperatorStateSpec =
  | null
  | { kind: 'stream'; states: OperatorStateEntry[]; delegate: StreamSpec }
  | {
      kind: 'segment';
      states: OperatorStateEntry[];
      taskOwnedDir: string;
      sharedDir: string;
      empty: boolean;
      delegate: StreamSpec;
    };

export interface ChannelSpec {
  subtaskIndex: number;
  gate: number;
  channel: number;
  offsets: number[];
  stateSize: number;
  delegate: StreamSpec;
}

export interface MergedChannelSpec {
  merged: true;
  subtaskIndex: number;
  delegate: StreamSpec;
  channels: { gate: number; channel: number; stateSize: number; offsets: number[] }[];
  /** Raw blob bytes instead of the encoded channels (hostile tests). */
  blob?: Buffer;
}

export interface SubtaskSpec {
  index: number;
  /** A finished subtask: stored as -(index+1), no state. */
  finished?: boolean;
  managedOperator?: OperatorStateSpec;
  rawOperator?: OperatorStateSpec;
  managedKeyed?: KeyedSpec;
  rawKeyed?: KeyedSpec;
  inputs?: (ChannelSpec | MergedChannelSpec)[];
  outputs?: (ChannelSpec | MergedChannelSpec)[];
}

export interface OperatorSpec {
  /** 32 hex digits: lower part then upper part, as OperatorID prints. */
  id: string;
  name?: string;
  uid?: string;
  parallelism: number;
  maxParallelism: number;
  coordinator?: StreamSpec;
  /** Fully finished: subtask count -1. */
  fullyFinished?: boolean;
  subtasks: SubtaskSpec[];
}

export interface MetadataSpec {
  version: number;
  checkpointId: number | bigint;
  masterStates?: { version: number; name: string; bytes: Buffer }[];
  operators: OperatorSpec[];
  /** The v4+ trailer; default {@link javaSerializedCheckpointProperties}. */
  trailer?: Buffer;
}

export function writeStream(out: DataOut, h: StreamSpec): void {
  if (h === null) {
    out.u8(0);
    return;
  }
  switch (h.kind) {
    case 'inline':
      out.u8(1).utf(h.name).i32(h.data.length).raw(h.data);
      return;
    case 'file':
      out.u8(2).i64(h.size).utf(h.path);
      return;
    case 'relative':
      out.u8(6).utf(h.relativePath).i64(h.size);
      return;
    case 'key-groups':
      out.u8(3).i32(h.start).i32(h.offsets.length);
      for (const o of h.offsets) out.i64(o);
      writeStream(out, h.delegate);
      return;
    case 'segment':
      out.u8(15).i64(h.start).i64(h.length).i32(h.scope).utf(h.path).utf(h.logicalId);
      return;
    case 'empty-segment':
      out.u8(16);
      return;
  }
}

export function writeKeyed(out: DataOut, h: KeyedSpec): void {
  if (h === null) {
    out.u8(0);
    return;
  }
  switch (h.kind) {
    case 'key-groups':
      out.u8(h.tag).i32(h.start).i32(h.offsets.length);
      for (const o of h.offsets) out.i64(o);
      writeStream(out, h.delegate);
      if (h.tag === 12) out.utf('state-handle-id');
      return;
    case 'incremental':
      out
        .u8(h.v2 ? 11 : 5)
        .i64(h.checkpointId)
        .utf(h.backendId)
        .i32(h.start)
        .i32(h.count);
      if (h.v2) out.i64(1234);
      writeStream(out, h.meta);
      for (const list of [h.shared, h.private]) {
        out.i32(list.length);
        for (const [path, handle] of list) {
          out.utf(path);
          writeStream(out, handle);
        }
      }
      if (h.v2) out.utf('incremental-handle-id');
      return;
    case 'changelog':
      out
        .u8(h.v2 ? 14 : 8)
        .i32(h.start)
        .i32(h.count)
        .i64(99);
      out.i32(h.materialized.length);
      for (const k of h.materialized) writeKeyed(out, k);
      out.i32(h.nonMaterialized.length);
      for (const k of h.nonMaterialized) writeKeyed(out, k);
      out.i64(7);
      if (h.v2) out.i64(8);
      out.utf('changelog-handle-id');
      return;
    case 'changelog-bytes':
      out.u8(9).i32(h.start).i32(h.count).i64(1).i64(2).i32(h.changes.length);
      for (const [kg, bytes] of h.changes) out.i32(kg).i32(bytes.length).raw(bytes);
      out.utf('bytes-handle-id');
      return;
    case 'changelog-file':
      out
        .u8(h.v2 ? 13 : 10)
        .i32(h.start)
        .i32(h.count)
        .i32(h.handles.length);
      for (const [offset, handle] of h.handles) {
        out.i64(offset);
        writeStream(out, handle);
      }
      out.i64(100).i64(50).utf('file-handle-id');
      if (h.v2) out.utf('filesystem');
      return;
  }
}

export function writeOperatorState(out: DataOut, h: OperatorStateSpec): void {
  if (h === null) {
    out.u8(0);
    return;
  }
  out.u8(h.kind === 'segment' ? 17 : 4).i32(h.states.length);
  for (const s of h.states) {
    out.utf(s.name).u8(s.mode).i32(s.offsets.length);
    for (const o of s.offsets) out.i64(o);
  }
  if (h.kind === 'segment') out.utf(h.taskOwnedDir).utf(h.sharedDir).bool(h.empty);
  writeStream(out, h.delegate);
}

function writeChannel(
  out: DataOut,
  h: ChannelSpec | MergedChannelSpec,
  version: number,
  side: 'input' | 'output',
): void {
  if ('merged' in h) {
    if (version < 6) throw new Error('merged channel handles exist in metadata v6 only');
    out.u8(side === 'input' ? 3 : 4).i32(h.subtaskIndex);
    out.i64(h.channels.reduce((a, c) => a + c.stateSize, 0));
    writeStream(out, h.delegate);
    let blob = h.blob;
    if (blob === undefined) {
      const b = new DataOut().i32(h.channels.length);
      for (const c of h.channels) {
        b.i32(c.gate).i32(c.channel).i64(c.stateSize).i32(c.offsets.length);
        for (const o of c.offsets) b.i64(o);
      }
      blob = b.toBuffer();
    }
    out.i32(blob.length).raw(blob);
    return;
  }
  if (version >= 6) out.u8(side === 'input' ? 1 : 2);
  out.i32(h.subtaskIndex).i32(h.gate).i32(h.channel).i32(h.offsets.length);
  for (const o of h.offsets) out.i64(o);
  out.i64(h.stateSize);
  writeStream(out, h.delegate);
}

function writeOperator(out: DataOut, op: OperatorSpec, version: number, n: number): void {
  out.mark(`operator ${n}`);
  if (version >= 5) out.utf(op.name ?? '').utf(op.uid ?? '');
  out.raw(Buffer.from(op.id, 'hex'));
  out.i32(op.parallelism).i32(op.maxParallelism);
  writeStream(out, op.coordinator ?? null);
  if (op.fullyFinished === true) {
    out.i32(-1);
    return;
  }
  out.mark(`operator ${n} subtask count`).i32(op.subtasks.length);
  for (const s of op.subtasks) {
    out.mark(`operator ${n} subtask ${s.index}`);
    if (s.finished === true) {
      out.i32(-(s.index + 1));
      continue;
    }
    out.i32(s.index);
    for (const h of [s.managedOperator ?? null, s.rawOperator ?? null]) {
      if (h === null) out.i32(0);
      else {
        out.i32(1);
        writeOperatorState(out, h);
      }
    }
    writeKeyed(out, s.managedKeyed ?? null);
    writeKeyed(out, s.rawKeyed ?? null);
    for (const side of ['input', 'output'] as const) {
      const handles = (side === 'input' ? s.inputs : s.outputs) ?? [];
      out.mark(`operator ${n} subtask ${s.index} ${side} count`).i32(handles.length);
      handles.forEach((h, k) => {
        out.mark(`operator ${n} subtask ${s.index} ${side} ${k}`);
        writeChannel(out, h, version, side);
      });
    }
  }
}

/** A whole `_metadata` file for `spec`, with the offsets of its marked fields. */
export function buildFlinkMetadataWithMarks(spec: MetadataSpec): {
  bytes: Buffer;
  marks: Map<string, number>;
} {
  const out = new DataOut();
  out.i32(0x4960672d).i32(spec.version);
  out.mark('checkpoint id').i64(spec.checkpointId);
  const masters = spec.masterStates ?? [];
  out.mark('master count').i32(masters.length);
  for (const m of masters) {
    const inner = new DataOut().i32(m.version).utf(m.name).i32(m.bytes.length).raw(m.bytes);
    const body = inner.toBuffer();
    out
      .i32(0xc96b1696 | 0)
      .i32(body.length)
      .raw(body);
  }
  out.mark('operator count').i32(spec.operators.length);
  spec.operators.forEach((op, n) => writeOperator(out, op, spec.version, n));
  out.mark('trailer');
  if (spec.version >= 4) out.raw(spec.trailer ?? javaSerializedCheckpointProperties());
  return { bytes: out.toBuffer(), marks: out.marks };
}

export function buildFlinkMetadata(spec: MetadataSpec): Buffer {
  return buildFlinkMetadataWithMarks(spec).bytes;
}

/**
 * `new ObjectOutputStream(out).writeObject(properties)` for a CheckpointProperties-shaped
 * object: a class with a boolean and an object field whose value is a class with a String and
 * an enum field — class descriptors, a string, an enum, a back reference and end markers, as
 * Java writes them (Object Serialization Specification §6.4).
 */
export function javaSerializedCheckpointProperties(): Buffer {
  const o = new DataOut();
  const jutf = (s: string) => o.utf(s);
  o.u16(0xaced).u16(5);
  // handle 0: class desc CheckpointProperties
  o.u8(0x73).u8(0x72);
  jutf('org.apache.flink.runtime.checkpoint.CheckpointProperties');
  o.i64(2n).u8(0x02).u16(2);
  o.u8('Z'.charCodeAt(0));
  jutf('forced');
  o.u8('L'.charCodeAt(0));
  jutf('checkpointType');
  // handle 1: the field's class name string
  o.u8(0x74);
  jutf('Lorg/apache/flink/runtime/checkpoint/SnapshotType;');
  o.u8(0x78).u8(0x70); // end of annotation, no superclass
  // handle 2: the object itself; its values:
  o.u8(0); // forced = false
  // checkpointType: a new object of class CheckpointType (handle 3 = class desc)
  o.u8(0x73).u8(0x72);
  jutf('org.apache.flink.runtime.checkpoint.CheckpointType');
  o.i64(1n).u8(0x02).u16(2);
  o.u8('L'.charCodeAt(0));
  jutf('name');
  o.u8(0x74); // handle 4
  jutf('Ljava/lang/String;');
  o.u8('L'.charCodeAt(0));
  jutf('sharingFilesStrategy');
  o.u8(0x74); // handle 5
  jutf('Lorg/apache/flink/runtime/checkpoint/SnapshotType$SharingFilesStrategy;');
  o.u8(0x78).u8(0x70);
  // handle 6: the CheckpointType object; name:
  o.u8(0x74); // handle 7
  jutf('Checkpoint');
  // sharingFilesStrategy: an enum (class desc handle 8, super java.lang.Enum handle 9)
  o.u8(0x7e).u8(0x72);
  jutf('org.apache.flink.runtime.checkpoint.SnapshotType$SharingFilesStrategy');
  o.i64(0n).u8(0x12).u16(0).u8(0x78);
  o.u8(0x72);
  jutf('java.lang.Enum');
  o.i64(0n).u8(0x12).u16(0).u8(0x78).u8(0x70);
  // handle 10: the enum; its constant name, a back reference to handle 7's kind of string
  o.u8(0x74);
  jutf('FORWARD_BACKWARD');
  return o.toBuffer();
}

/** A 32-hex-digit operator id from a small number (tests only). */
export function opId(n: number): string {
  return n.toString(16).padStart(32, '0');
}

/**
 * The smallest channel-state checkpoint: one operator of parallelism 1 whose subtask 0 has one
 * input channel (gate 0, channel 0) holding one entry of `payloadBytes` bytes at offset 4 of
 * `delegate` (after Flink's 4-byte header); its state size is Flink's, the entry's 4-byte
 * length included.
 *
 * @example
 * buildFlinkMetadata(oneInputChannel({ id: opId(1), payloadBytes: 2,
 *   delegate: { kind: 'relative', relativePath: 'state', size: 10 } }));
 */
export function oneInputChannel(options: {
  id: string;
  payloadBytes: number;
  delegate: StreamSpec;
  version?: number;
  name?: string;
  uid?: string;
  maxParallelism?: number;
}): MetadataSpec {
  return {
    version: options.version ?? 4,
    checkpointId: 1,
    operators: [
      {
        id: options.id,
        ...(options.name !== undefined ? { name: options.name } : {}),
        ...(options.uid !== undefined ? { uid: options.uid } : {}),
        parallelism: 1,
        maxParallelism: options.maxParallelism ?? 8,
        subtasks: [
          {
            index: 0,
            inputs: [
              {
                subtaskIndex: 0,
                gate: 0,
                channel: 0,
                offsets: [4],
                stateSize: 4 + options.payloadBytes,
                delegate: options.delegate,
              },
            ],
          },
        ],
      },
    ],
  };
}
