/**
 * Writes one subtask's channel state in Flink's format, as `ChannelStateCheckpointWriter` and
 * `ChannelStateSerializerImpl` do: one stream per subtask (header `int32 0`, then entries
 * `[int32 length][bytes]`, channels interleaved in the order they come), each channel's handle
 * listing its entries' offsets and a state size of its entries' bytes, lengths included. The
 * stream becomes a file beside `_metadata`, named by a relative handle. A channel the source
 * kept inline (Flink's small-state threshold) stays inline, written as Flink's
 * `ChannelStatePendingResult` writes it: its own blob, header and ONE entry holding all its
 * bytes (`extractAndMerge`), offsets `[4]`, state size = the blob's length.
 */
import { randomUUID } from '../../../node-crypto.ts';
import { join } from 'node:path';
import { fsSeam, type SeamFile } from '../../../fs.ts';
import { CHANNEL_STATE_INT_BYTES, CHANNEL_STATE_VERSION } from '../channel-state.ts';
import type { FlinkChannelHandle } from '../metadata-types.ts';
import type { ChannelDelegate, ChannelHandleToWrite } from './channel-handles.ts';

/** Bytes gathered before a write to the file. */
const WRITE_BATCH = 1024 * 1024;

/** One channel being written. */
export interface ChannelOut {
  readonly source: FlinkChannelHandle;
  readonly inline: boolean;
  readonly offsets: number[];
  stateSize: number;
  /** Inline channels: their bytes, gathered. */
  readonly parts: Buffer[];
  /** Payload bytes written (lengths excluded). */
  payload: number;
}

/**
 * The new channel state of one subtask. With `dir` undefined nothing is written (a dry run)
 * but offsets and sizes are still counted.
 *
 * @example
 * ```ts
 * const w = new SubtaskChannelWriter(staging, 0);
 * const ch = w.channel(handle);
 * await w.entry(ch, [payload]);
 * const { input, output } = await w.finish();
 * ```
 */
export class SubtaskChannelWriter {
  private file: SeamFile | undefined;
  private readonly fileName = randomUUID();
  /** Bytes of the stream so far (the header once the first entry came). */
  private position = 0;
  private batch: Buffer[] = [];
  private batchBytes = 0;
  private readonly channels: ChannelOut[] = [];
  /** Bytes written to files (or, dry, that would be). */
  written = 0;

  constructor(
    private readonly dir: string | undefined,
    private readonly subtaskIndex: number,
  ) {}

  /** A channel of this subtask; inline when its source handle's delegate was. */
  channel(source: FlinkChannelHandle): ChannelOut {
    const out: ChannelOut = {
      source,
      inline: source.delegate.kind === 'inline',
      offsets: [],
      stateSize: 0,
      parts: [],
      payload: 0,
    };
    this.channels.push(out);
    return out;
  }

  /** One entry of `channel`: `parts` concatenated (the writer keeps them: pass fresh buffers). */
  async entry(channel: ChannelOut, parts: readonly Buffer[]): Promise<void> {
    let length = 0;
    for (const p of parts) length += p.length;
    channel.payload += length;
    if (channel.inline) {
      channel.parts.push(...parts);
      return;
    }
    if (this.position === 0) {
      this.append(int32(CHANNEL_STATE_VERSION));
    }
    channel.offsets.push(this.position);
    channel.stateSize += CHANNEL_STATE_INT_BYTES + length;
    this.append(int32(length));
    for (const p of parts) this.append(p);
    if (this.batchBytes >= WRITE_BATCH) await this.flush();
  }

  private append(b: Buffer): void {
    this.batch.push(b);
    this.batchBytes += b.length;
    this.position += b.length;
  }

  private async flush(): Promise<void> {
    if (this.batchBytes === 0) return;
    const batch = this.batch;
    const bytes = this.batchBytes;
    this.batch = [];
    this.batchBytes = 0;
    this.written += bytes;
    if (this.dir === undefined) return;
    this.file ??= await fsSeam.open(join(this.dir, this.fileName), 'wx', 0o644);
    await this.file.write(...batch);
  }

  /**
   * Flushes and closes the file; the handles of every channel that has entries, in the order
   * the channels were opened, per side. Empty channels get no handle (Flink writes none).
   */
  async finish(): Promise<{ input: ChannelHandleToWrite[]; output: ChannelHandleToWrite[] }> {
    await this.flush();
    if (this.file !== undefined) {
      await this.file.sync();
      await this.file.close();
      this.file = undefined;
    }
    const fileDelegate: ChannelDelegate = {
      kind: 'relative',
      relativePath: this.fileName,
      size: this.position,
    };
    const input: ChannelHandleToWrite[] = [];
    const output: ChannelHandleToWrite[] = [];
    for (const ch of this.channels) {
      const handle = this.handleOf(ch, fileDelegate);
      if (handle === undefined) continue;
      (ch.source.side === 'input' ? input : output).push(handle);
    }
    return { input, output };
  }

  private handleOf(
    ch: ChannelOut,
    fileDelegate: ChannelDelegate,
  ): ChannelHandleToWrite | undefined {
    const base = {
      subtaskIndex: ch.source.subtaskIndex,
      gate: ch.source.gate,
      channel: ch.source.channel,
      merged: ch.source.merged === true,
    };
    if (!ch.inline) {
      if (ch.offsets.length === 0) return undefined;
      return { ...base, offsets: ch.offsets, stateSize: ch.stateSize, delegate: fileDelegate };
    }
    if (ch.parts.length === 0) return undefined;
    const bytes = Buffer.concat([int32(CHANNEL_STATE_VERSION), int32(ch.payload), ...ch.parts]);
    const name = ch.source.delegate.kind === 'inline' ? ch.source.delegate.name : randomUUID();
    return {
      ...base,
      offsets: [CHANNEL_STATE_INT_BYTES],
      stateSize: bytes.length,
      delegate: { kind: 'inline', name, bytes },
    };
  }

  /** Closes the file after a failure (the caller removes the staging dir). */
  async abandon(): Promise<void> {
    const file = this.file;
    this.file = undefined;
    await file?.close();
  }
}

function int32(v: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeInt32BE(v, 0);
  return b;
}
