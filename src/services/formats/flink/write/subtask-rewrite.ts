/**
 * Rewrites one subtask's channel state: every delegate stream its handles name is read as
 * Flink reads it (offsets ascending, `readDelegateEntries`), each channel's bytes go through a
 * {@link FrameFilter} when something may be dropped from it (else they pass as they are), and
 * the kept bytes are written by a {@link SubtaskChannelWriter}: one new entry per source entry
 * that kept any byte, so the entries keep their shape and a dropped record takes its whole
 * frame with it, across entry boundaries.
 */
import { CorruptCheckpointError, RewriteRefusedError } from '../../../errors.ts';
import type { SourceOptions } from '../../../locations/source.ts';
import { readDelegateEntries, type DelegateHandle } from '../channel-state.ts';
import type {
  FlinkChannelHandle,
  FlinkOperatorState,
  FlinkSubtaskState,
} from '../metadata-types.ts';
import type { DelegateLocation, FlinkPaths } from '../paths.ts';
import type { ChannelHandleToWrite } from './channel-handles.ts';
import { SubtaskChannelWriter, type ChannelOut } from './channel-state-writer.ts';
import { FrameFilter, elementKind, type FlinkElementKind } from './frames.ts';
import { RangeFilter, type OutputDrop, type StitchedTail } from './output-ranges.ts';
import {
  channelId,
  recordHasKey,
  type FlinkRewriteElement,
  type ResolvedDrops,
} from './selectors.ts';

/** An element a rewrite dropped (or, dry, would drop). */
export interface FlinkDroppedElement {
  /** Its position as selector text, the operator as its id. */
  readonly position: string;
  readonly kind: Exclude<FlinkElementKind, 'partial'>;
  /** Its frame's bytes, the 4-byte length included. */
  readonly bytes: number;
}

/** What a rewrite shares across subtasks: the drops and how each matched. */
export interface RewriteContext {
  readonly drops: ResolvedDrops;
  readonly paths: FlinkPaths;
  readonly signal?: AbortSignal | undefined;
  readonly remote?: SourceOptions | undefined;
  /** Selector texts (positions) that matched. */
  readonly matchedPositions: Set<string>;
  /** Index into drops.keys / drops.predicates of those that matched. */
  readonly matchedKeys: Set<number>;
  readonly matchedPredicates: Set<number>;
  readonly dropped: FlinkDroppedElement[];
  /** Output-side positions: the byte ranges to drop, per channel id. */
  readonly outputRanges: ReadonlyMap<string, readonly OutputDrop[]>;
  /** Input tails named by a selector whose record the upstream's head completes, by `id/index`. */
  readonly stitchedTails: ReadonlyMap<string, StitchedTail>;
  /** Called after each entry with the payload bytes read. */
  readonly onEntry: (payloadBytes: number) => void;
}

/** One subtask's new handles and its sizes before and after (state sizes, as Flink counts). */
export interface SubtaskRewrite {
  readonly input: ChannelHandleToWrite[];
  readonly output: ChannelHandleToWrite[];
  readonly before: { readonly input: number; readonly output: number };
  readonly after: { readonly input: number; readonly output: number };
  readonly written: number;
}

/** What cuts a channel's bytes: frames (input) or known byte ranges (output). */
interface ChannelFilter {
  push(chunk: Buffer): void;
  /** The channel ended: its partial element left, if any. */
  end(drop?: (index: number) => boolean): { index: number; bytes: number } | undefined;
}

/** A channel being rewritten. */
interface ChannelState {
  readonly handle: FlinkChannelHandle;
  readonly out: ChannelOut;
  readonly filter: ChannelFilter | undefined;
  /** Kept bytes of the current entry (owned). */
  pending: Buffer[];
  /**
   * A filtered channel's last entry with kept bytes, written when the next one comes: the
   * channel's cut end (its partial element) belongs in its last entry, not in an extra one.
   */
  held: Buffer[] | undefined;
}

/**
 * Reads, filters and writes one subtask's input and output channel state.
 *
 * @example
 * ```ts
 * const result = await rewriteSubtask(ctx, operator, subtask, stagingDir);
 * ```
 */
export async function rewriteSubtask(
  ctx: RewriteContext,
  operator: FlinkOperatorState,
  subtask: FlinkSubtaskState,
  dir: string | undefined,
): Promise<SubtaskRewrite> {
  const writer = new SubtaskChannelWriter(dir, subtask.index);
  try {
    for (const side of ['input', 'output'] as const) {
      const handles = side === 'input' ? subtask.inputChannels : subtask.outputSubpartitions;
      await rewriteSide(ctx, operator, subtask, handles, writer);
    }
    const { input, output } = await writer.finish();
    const size = (hs: readonly { stateSize: number }[]): number =>
      hs.reduce((sum, h) => sum + h.stateSize, 0);
    return {
      input,
      output,
      before: { input: size(subtask.inputChannels), output: size(subtask.outputSubpartitions) },
      after: { input: size(input), output: size(output) },
      written: writer.written,
    };
  } catch (error) {
    await writer.abandon().catch(() => undefined);
    throw error;
  }
}

async function rewriteSide(
  ctx: RewriteContext,
  operator: FlinkOperatorState,
  subtask: FlinkSubtaskState,
  handles: readonly FlinkChannelHandle[],
  writer: SubtaskChannelWriter,
): Promise<void> {
  const states = new Map<string, ChannelState>();
  const groups = new Map<string, { where: DelegateLocation; handles: DelegateHandle[] }>();
  for (const handle of handles) {
    const out = writer.channel(handle);
    const state: ChannelState = { handle, out, filter: undefined, pending: [], held: undefined };
    (state as { filter: ChannelFilter | undefined }).filter = filterFor(
      ctx,
      operator,
      subtask,
      state,
    );
    states.set(`${handle.gate}/${handle.channel}`, state);
    if (handle.offsets.length === 0) continue;
    const where = await ctx.paths.locate(handle.delegate);
    let group = groups.get(where.key);
    if (group === undefined) groups.set(where.key, (group = { where, handles: [] }));
    group.handles.push({ handle, subtask: subtask.index });
  }
  for (const { where, handles: grouped } of groups.values()) {
    let current: ChannelState | undefined;
    let entryBytes = 0;
    const finishEntry = async (): Promise<void> => {
      if (current === undefined) return;
      const parts = current.pending;
      current.pending = [];
      if (current.filter === undefined) {
        if (parts.length > 0) await writer.entry(current.out, parts);
      } else if (parts.length > 0) {
        if (current.held !== undefined) await writer.entry(current.out, current.held);
        current.held = parts;
      }
      ctx.onEntry(entryBytes);
      current = undefined;
    };
    await readDelegateEntries(
      where,
      grouped,
      {
        onEntry: async (gate, channel, length, fileOffset) => {
          await finishEntry();
          current = states.get(`${gate}/${channel}`);
          entryBytes = length;
          if (current === undefined) {
            throw new CorruptCheckpointError(where.shown, fileOffset, `entry of no handle`);
          }
          if (length === 0 && current.filter === undefined) {
            // An empty entry passes as it is (a filtered channel drops empty entries).
            await writer.entry(current.out, []);
          }
        },
        onPayload: (chunk) => {
          if (current!.filter !== undefined) current!.filter.push(chunk);
          else current!.pending.push(Buffer.from(chunk));
        },
      },
      { signal: ctx.signal, remote: ctx.remote },
    );
    await finishEntry();
  }
  // What is left of a filtered channel: its partial element, as its last entry.
  for (const state of states.values()) {
    const { side, gate, channel } = state.handle;
    const id = channelId(operator.id, subtask.index, side, gate, channel);
    const tail = state.filter?.end((index) => ctx.stitchedTails.has(`${id}/${index}`));
    if (tail !== undefined) {
      const stitched = ctx.stitchedTails.get(`${id}/${tail.index}`);
      const selector = ctx.drops.positions.get(id)?.get(tail.index);
      if (stitched !== undefined) {
        // Both halves go: this tail, and the upstream's head (an output range).
        ctx.matchedPositions.add(stitched.selector);
        ctx.dropped.push({
          position: `${id}/${tail.index}`,
          kind: 'record',
          bytes: stitched.bytes,
        });
      } else if (selector !== undefined) {
        throw new RewriteRefusedError(
          'partial',
          `${selector}: element ${tail.index} is a partial record (${tail.bytes} byte(s) here; ` +
            `its rest is the head of the upstream subtask's output subpartition state, which ` +
            `was not found): dropping one half would corrupt the other, refused (name the ` +
            `gate's upstream with --upstream GATE=OP to drop both halves)`,
        );
      }
    }
    const last = [...(state.held ?? []), ...state.pending];
    state.held = undefined;
    state.pending = [];
    if (last.length > 0) await writer.entry(state.out, last);
  }
}

/** The frame filter of a channel something may be dropped from; undefined for the others. */
function filterFor(
  ctx: RewriteContext,
  operator: FlinkOperatorState,
  subtask: FlinkSubtaskState,
  state: ChannelState,
): ChannelFilter | undefined {
  const { handle } = state;
  const { drops } = ctx;
  const id = channelId(operator.id, subtask.index, handle.side, handle.gate, handle.channel);
  if (handle.side === 'output') {
    // Only positions: an output subpartition's frames are where flink records found them.
    const ranges = ctx.outputRanges.get(id);
    if (ranges === undefined) return undefined;
    return new RangeFilter(
      ranges,
      (bytes) => state.pending.push(Buffer.from(bytes)),
      (d) => {
        ctx.matchedPositions.add(d.selector);
        // A record's head half is reported with its tail, at the input position.
        if (d.silent !== true) {
          ctx.dropped.push({ position: `${id}/${d.index}`, kind: d.kind, bytes: d.end - d.start });
        }
      },
    );
  }
  const positions = drops.positions.get(id);
  if (positions === undefined && drops.keys.length === 0 && drops.predicates.length === 0) {
    return undefined;
  }
  const shown = `operator ${operator.id} subtask ${subtask.index} input gate ${handle.gate} channel ${handle.channel}`;
  const decide = (element: Buffer, index: number): boolean => {
    const position = `${id}/${index}`;
    const selector = positions?.get(index);
    let kind: Exclude<FlinkElementKind, 'partial'>;
    try {
      kind = elementKind(element[0]);
    } catch (error) {
      throw new CorruptCheckpointError(
        shown,
        index,
        `element ${index}: ${(error as Error).message}`,
      );
    }
    let drop = false;
    if (selector !== undefined) {
      ctx.matchedPositions.add(selector);
      drop = true;
    }
    if (kind === 'record') {
      drops.keys.forEach((k, i) => {
        if (recordHasKey(element, k)) {
          ctx.matchedKeys.add(i);
          drop = true;
        }
      });
    }
    if (drops.predicates.length > 0) {
      const view: FlinkRewriteElement = {
        operator: operator.id,
        subtask: subtask.index,
        side: handle.side,
        gate: handle.gate,
        channel: handle.channel,
        index,
        kind,
        bytes: element,
      };
      drops.predicates.forEach((p, i) => {
        if (p(view)) {
          ctx.matchedPredicates.add(i);
          drop = true;
        }
      });
    }
    if (drop) ctx.dropped.push({ position, kind, bytes: element.length + 4 });
    return drop;
  };
  return new FrameFilter(
    decide,
    (bytes) => state.pending.push(Buffer.from(bytes)),
    (at, reason) => new CorruptCheckpointError(shown, at, reason),
  );
}
