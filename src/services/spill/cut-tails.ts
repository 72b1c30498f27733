/**
 * Records a rescaled Flink recovery finds cut at the end of an old subtask's input channel,
 * completed as Flink's restore completes them. The channel's state ends inside a record whose
 * rest is the head of the upstream subtask's output subpartition; the restore replays that
 * output into the same deserializer (`RecoveredInputChannel`, then the replayed subpartition),
 * so the record is whole again and kept if its key belongs to the new subtask. Here the tail
 * is joined to that head with the join `flink records --upstream` uses
 * (`completePartialRecord`), read from the checkpoint's upstream output state.
 *
 * The metadata does not say which operator feeds which gate. A head is taken only when it is
 * the one candidate (an operator with output state, any of its partitions) whose first element
 * boundary — found in its bytes alone, as `flink records` finds it: whole elements from there
 * to the end of the state — is exactly where the tail's record ends; so a join (two upstreams)
 * is completed from the right side (or, when several fit, only if they give the same record),
 * and nothing is guessed; `--upstream GATE=OP` names a gate's operator where the bytes cannot
 * tell (two upstreams writing look-alike records). A tail with no such head (no upstream output
 * state, or several different records that fit) stays cut: counted in `records.cut`, which the
 * report says, never silently.
 */
import type { FlinkPathOptions } from '../formats/flink/paths.ts';
import type {
  FlinkCheckpointMetadata,
  FlinkOperatorState,
} from '../formats/flink/metadata-types.ts';
import { planFlinkSelection, readFlinkEntries } from '../formats/flink/entry-source.ts';
import { resolveOperator } from '../formats/flink/metadata.ts';
import { completePartialRecord, findFirstElement } from '../formats/flink/records/stitch.ts';
import type { RemoteOptions } from '../locations/remote-options.ts';
import type { FilteringSpill, CutTail } from './filtering-spill.ts';

/** Where the upstream's output state is read from: the recovery's own checkpoint and paths. */
export interface UpstreamSource extends FlinkPathOptions {
  readonly checkpoint: string;
  readonly metadata: FlinkCheckpointMetadata;
  /** The operator being rescaled. */
  readonly operator: FlinkOperatorState;
  readonly remote?: RemoteOptions | undefined;
  readonly signal: AbortSignal;
  /** The longest element (the recovery's `maxRecordBytes`). */
  readonly maxElementBytes: number;
  /** Per gate, the operator feeding it (`--upstream GATE=OP`): the only one tried there. */
  readonly upstream?: Readonly<Record<number, string>> | undefined;
}

/**
 * Completes every cut tail of `filters` (each filter's tails of the old subtasks its
 * `assigned` says it restores) from the upstream's output state. Each virtual channel's head
 * is read once, however many filters share the tail; memory: one head at a time.
 *
 * @example
 * ```ts
 * await completeCutTails([filter], [rules.assigned], source);
 * filter.finish(true, rules.assigned); // counts what is still cut
 * ```
 */
export async function completeCutTails(
  filters: readonly FilteringSpill[],
  assigned: readonly (((oldSubtask: number) => boolean) | undefined)[],
  source: UpstreamSource,
): Promise<void> {
  const withOutput = source.metadata.operators.filter(
    (op) =>
      op.id !== source.operator.id && op.subtasks.some((s) => s.outputSubpartitions.length > 0),
  );
  // Resolved up front: a name that matches no operator is refused before anything is joined.
  const named = new Map<number, FlinkOperatorState>();
  for (const [gate, name] of Object.entries(source.upstream ?? {})) {
    named.set(Number(gate), resolveOperator(source.metadata, name));
  }
  if (withOutput.length === 0) return;
  // Per virtual channel, the filters holding its tail (the tail's bytes are the same in each).
  const byChannel = new Map<number, { tail: CutTail; filters: FilteringSpill[] }>();
  filters.forEach((filter, i) => {
    for (const tail of filter.openTails(assigned[i])) {
      const entry = byChannel.get(tail.id) ?? { tail, filters: [] };
      entry.filters.push(filter);
      byChannel.set(tail.id, entry);
    }
  });
  // Spillway's order: a channel's completed records after all its other records, by old
  // subtask ascending (Flink interleaves the virtual channels in no fixed order).
  const tails = [...byChannel.values()].sort((x, y) => x.tail.from.subtask - y.tail.from.subtask);
  // One read per (candidate upstream, upstream subtask) for every tail it may complete: for
  // an all-to-all (keyed) edge, input channel c of old subtask s is fed by upstream subtask c,
  // from its subpartition s.
  const reads = new Map<string, { upstream: FlinkOperatorState; tails: CutTail[] }>();
  for (const { tail } of tails) {
    const given = named.get(tail.from.gate);
    for (const upstream of given !== undefined ? [given] : withOutput) {
      if (tail.from.channel >= upstream.parallelism) continue;
      const key = `${upstream.id}/${tail.from.channel}`;
      const read = reads.get(key) ?? { upstream, tails: [] };
      read.tails.push(tail);
      reads.set(key, read);
    }
  }
  const fits = new Map<number, Buffer[]>();
  for (const { upstream, tails: wanted } of reads.values()) {
    for (const [id, element] of await confirmedHeads(source, upstream, wanted)) {
      fits.set(id, [...(fits.get(id) ?? []), element]);
    }
  }
  for (const { tail, filters: holding } of tails) {
    const found = fits.get(tail.id) ?? [];
    // Several heads that fit and give the same record (two upstreams writing the same
    // bytes) complete it all the same; different records are not guessed between.
    if (found.length === 0 || found.some((e) => !e.equals(found[0]!))) continue;
    for (const filter of holding) await filter.complete(tail, found[0]!);
  }
}

/** A partition's head of one subpartition, as it is read, and the tails it may complete. */
interface Head {
  pieces: Buffer[];
  /** The tails of this subpartition not judged yet. */
  pending: CutTail[];
}

/**
 * The elements `tails` (all of one channel c) complete to from upstream subtask c's output
 * state, read once: for each tail, one element per partition whose head of subpartition s
 * (the tail's old subtask) fits — the record's rest, then whole elements.
 */
async function confirmedHeads(
  source: UpstreamSource,
  upstream: FlinkOperatorState,
  tails: readonly CutTail[],
): Promise<[number, Buffer][]> {
  const selection = {
    operator: upstream.id,
    subtask: tails[0]!.from.channel,
    outputState: true,
    allowPaths: source.allowPaths,
    relocate: source.relocate,
  };
  const plan = await planFlinkSelection(source.metadata, selection);
  const found: [number, Buffer][] = [];
  const heads = new Map<string, Head>();
  let current: Head | undefined;
  // Judges the head's pending tails; returns whether any is left to judge.
  const judge = (head: Head, complete: boolean): boolean => {
    const bytes = Buffer.concat(head.pieces);
    head.pieces = [bytes];
    // The head's own first element boundary, found without any tail, must be where the
    // tail's record ends: a wrong upstream's head (its subpartition may well frame from there
    // too, by chance) starts its elements elsewhere.
    const first = findFirstElement(bytes, complete, source.maxElementBytes);
    if (first === undefined) return true; // More bytes to come decide it.
    head.pending = head.pending.filter((tail) => {
      const joined = completePartialRecord(tail.bytes, bytes);
      if (joined.done) {
        if (first === joined.headBytes) found.push([tail.id, joined.element]);
        return false;
      }
      return joined.needBytes >= 0 && !complete;
    });
    if (head.pending.length === 0) head.pieces = [];
    return head.pending.length > 0;
  };
  await readFlinkEntries(
    source.checkpoint,
    { ...selection, plan },
    {
      onEntry: (partition, subpartition) => {
        const key = `${partition}/${subpartition}`;
        let head = heads.get(key);
        if (head === undefined) {
          const pending = tails.filter((t) => t.from.subtask === subpartition);
          heads.set(key, (head = { pieces: [], pending }));
        }
        current = head.pending.length > 0 ? head : undefined;
      },
      onPayload: (chunk) => {
        const head = current;
        if (head === undefined) return;
        head.pieces.push(Buffer.from(chunk));
        if (!judge(head, false)) current = undefined;
      },
    },
    { signal: source.signal, remote: source.remote },
  );
  for (const head of heads.values()) if (head.pending.length > 0) judge(head, true);
  return found;
}
