/**
 * `readFlinkRecords`: a Flink checkpoint's in-flight data for one operator and subtask as an
 * async iterable of elements, in Flink's reading order (DESIGN §8). The read pushes; the
 * iterator pulls: a small queue between them, and the read waits while it is full, so memory
 * stays bounded however large the state. Breaking out of the loop stops the read.
 */
import { AbortedError, CancelledError, ours } from '../../../errors.ts';
import type { FlinkKey } from '../entry-source.ts';
import type { resolveOperator } from '../metadata.ts';
import type { FlinkCheckpointMetadata, FlinkOperatorState } from '../metadata-types.ts';
import type { FlinkPathOptions } from '../paths.ts';
import type { SourceOptions } from '../../../locations/source.ts';
import { DEFAULT_MAX_RECORD_BYTES } from '../../../rescale/record-parser.ts';
import type { FlinkElement } from './elements.ts';
import type { ElementSink, ChannelRead } from './channel-reader.ts';
import { parseTypeSpec, type FlinkType } from './type-spec.ts';
import type { Completion } from './stitch.ts';

/**
 * Flink's channel-state reader, loaded when records are first read (as formats/entries.ts loads
 * it for a recovery), so that importing the package does not load it.
 */
const flinkReader = () => import('../entry-source.ts');

/**
 * What {@link readFlinkRecords} reads.
 *
 * @example
 * ```ts
 * const options: ReadFlinkRecordsOptions = {
 *   checkpoint: 'ckpt/job/chk-7', operator: 'slow-join', subtask: 0,
 *   type: 'Tuple<Long, String>', key: 'long', upstream: { 0: 'to-record-a', 1: 'to-record-b' },
 * };
 * ```
 */
export interface ReadFlinkRecordsOptions extends FlinkPathOptions {
  /** A checkpoint directory holding `_metadata`, or the file; local, `http(s)://` or `s3://`. */
  checkpoint: string;
  /** Operator id (32 hex digits), uid or name (v5+). */
  operator: string;
  subtask: number;
  /** Read the result subpartitions (output side) instead of the input channels. */
  outputState?: boolean | undefined;
  /** The records' type: a spec (`Tuple<Long, String>`) or a parsed one; else values are base64. */
  type?: string | FlinkType | undefined;
  /** Reads each record's key (the first field of its value) and key group. */
  key?: FlinkKey | undefined;
  /** A record value's bytes to a value, for types Spillway has no decoder for (wins over `type`). */
  decode?: ((bytes: Uint8Array) => unknown) | undefined;
  /**
   * Input side: per gate, the upstream operator whose output state completes the record an
   * input channel ends inside. Without it, a gate's upstream is the checkpoint's one operator
   * with output state, when there is exactly one.
   */
  upstream?: Readonly<Record<number, string>> | undefined;
  /** For key groups; default the operator's max parallelism. */
  maxParallelism?: number | undefined;
  /**
   * Input side: `false` leaves an input channel's tail a `partial` element, upstream or not
   * (the upstream's state is not read). Default true.
   */
  stitch?: boolean | undefined;
  /**
   * The checkpoint's `_metadata`, already read (from `checkpoint`): it is not read again, so one
   * read serves every subtask of a count over the checkpoint.
   */
  metadata?: FlinkCheckpointMetadata | undefined;
  /** Elements longer than this are bad input, not an allocation (default 16 MiB). */
  maxElementBytes?: number | undefined;
  signal?: AbortSignal | undefined;
  remote?: SourceOptions | undefined;
}

/** Elements the read may run ahead of the consumer. */
const QUEUE_HIGH = 64;

/**
 * Reads one operator subtask's in-flight elements. Partial records are elements of kind
 * `partial` (`end: 'tail'` at an input channel's end, `'head'` at an output subpartition's
 * start); with an upstream (given, or the only operator with output state) an input channel's
 * tail is joined to the head of upstream subtask `channel`'s output subpartition `subtask`
 * (an all-to-all edge) and comes out whole, with `stitched` saying from where.
 *
 * Errors (thrown by the iterator): `UnknownOperatorError` for an unknown operator, upstream or
 * subtask; `TypeSpecError` for a bad `type`; `CorruptCheckpointError` naming the file, byte,
 * channel and element index for bytes that are not what Flink writes or not of the type;
 * `CancelledError` when `signal` aborts.
 *
 * @example
 * ```ts
 * for await (const e of readFlinkRecords({ checkpoint: 'chk-7', operator: 'slow-join', subtask: 0,
 *                                          type: 'Tuple<Long, String>' })) {
 *   if (e.kind === 'record') console.log(e.gate, e.channel, e.index, e.value); // [42n, 'x']
 * }
 * ```
 */
export function readFlinkRecords(options: ReadFlinkRecordsOptions): AsyncIterable<FlinkElement> {
  // The type is checked now, so a bad spec fails before anything is read.
  const type = typeof options.type === 'string' ? parseTypeSpec(options.type) : options.type;
  return {
    [Symbol.asyncIterator]: () => new RecordsRead(options, type).iterator(),
  };
}

/** One read: the producer (the entry visitor) and the queue the iterator drains. */
class RecordsRead {
  private readonly queue: FlinkElement[] = [];
  private head = 0;
  private done = false;
  private failure: unknown;
  private wakeConsumer: (() => void) | undefined;
  private wakeProducer: (() => void) | undefined;
  private readonly stop = new AbortController();
  private started = false;

  constructor(
    private readonly options: ReadFlinkRecordsOptions,
    private readonly type: FlinkType | undefined,
  ) {}

  private push = (element: FlinkElement): void => {
    this.queue.push(element);
    this.wakeConsumer?.();
  };

  private room(): Promise<void> | undefined {
    if (this.queue.length - this.head < QUEUE_HIGH) return undefined;
    return new Promise<void>((resolve) => (this.wakeProducer = resolve));
  }

  private signal(): AbortSignal {
    const user = this.options.signal;
    return user === undefined ? this.stop.signal : AbortSignal.any([user, this.stop.signal]);
  }

  iterator(): AsyncIterator<FlinkElement> {
    return {
      next: async () => {
        if (!this.started) {
          this.started = true;
          // The read's own promise is observed here: its failure reaches the consumer as the
          // iterator's rejection, never as an unhandled rejection.
          this.produce().then(
            () => this.end(undefined),
            (error: unknown) => this.end(error),
          );
        }
        for (;;) {
          // An aborted signal ends the iteration at once, queued elements or not.
          const user = this.options.signal;
          if (user?.aborted === true && !this.stop.signal.aborted) {
            this.stop.abort(user.reason);
            this.queue.length = 0;
            this.head = 0;
            this.wakeProducer?.();
            this.done = true;
            this.failure = undefined;
            throw new CancelledError('reading the Flink records was cancelled', {
              cause: user.reason,
            });
          }
          if (this.head < this.queue.length) {
            const value = this.queue[this.head++]!;
            if (this.head > 1024 && this.head * 2 > this.queue.length) {
              this.queue.splice(0, this.head);
              this.head = 0;
            }
            if (this.queue.length - this.head < QUEUE_HIGH / 2) {
              const wake = this.wakeProducer;
              this.wakeProducer = undefined;
              wake?.();
            }
            return { done: false, value };
          }
          if (this.done) {
            if (this.failure !== undefined) {
              const failure = this.failure;
              this.failure = undefined;
              throw failure;
            }
            return { done: true, value: undefined };
          }
          await new Promise<void>((resolve) => (this.wakeConsumer = resolve));
          this.wakeConsumer = undefined;
        }
      },
      return: async () => {
        this.stop.abort(new AbortedError('the consumer stopped reading'));
        this.queue.length = 0;
        this.head = 0;
        const wake = this.wakeProducer;
        this.wakeProducer = undefined;
        wake?.();
        return { done: true, value: undefined };
      },
    };
  }

  private end(error: unknown): void {
    this.done = true;
    if (error !== undefined && !this.stop.signal.aborted) {
      const user = this.options.signal;
      this.failure =
        user?.aborted === true
          ? new CancelledError('reading the Flink records was cancelled', { cause: user.reason })
          : ours(error);
    }
    this.wakeConsumer?.();
  }

  private async produce(): Promise<void> {
    const { options } = this;
    const signal = this.signal();
    const maxElementBytes = options.maxElementBytes ?? DEFAULT_MAX_RECORD_BYTES;
    let sink: ElementSink | undefined;
    let metadata: FlinkCheckpointMetadata | undefined;
    let operator: FlinkOperatorState | undefined;
    const upstreams = new Map<number, FlinkOperatorState>();
    const channels = new Map<string, ChannelRead>();
    let file = '';
    let current: ChannelRead | undefined;
    let at = 0;
    const side = options.outputState === true ? 'output' : 'input';

    const selection = {
      operator: options.operator,
      subtask: options.subtask,
      outputState: options.outputState,
      allowPaths: options.allowPaths,
      relocate: options.relocate,
    };
    // Loaded by the first `next()`, not at import: the reader, the metadata's operator lookup,
    // the decoders and the element sink (importing the package does not load them).
    const [{ planFlinkSelection, readFlinkEntries }, { resolveOperator }, decode, elements] =
      await Promise.all([
        flinkReader(),
        import('../metadata.ts'),
        import('./decode.ts'),
        import('./channel-reader.ts'),
      ]);
    await readFlinkEntries(
      options.checkpoint,
      options.metadata === undefined
        ? selection
        : { ...selection, plan: await planFlinkSelection(options.metadata, selection) },
      {
        onEntry: (gate, channel, _length, offset) => {
          const key = `${gate}/${channel}`;
          let read = channels.get(key);
          if (read === undefined) {
            const op = operator!.id;
            const subtask = options.subtask;
            read = sink!.open(
              side === 'input'
                ? { operator: op, subtask, side, gate, channel }
                : { operator: op, subtask, side, partition: gate, subpartition: channel },
              file,
            );
            channels.set(key, read);
          }
          read.file = file;
          current = read;
          at = offset + 4;
        },
        onPayload: (chunk) => {
          sink!.push(current!, chunk, at);
          at += chunk.length;
          return this.room();
        },
      },
      {
        signal,
        remote: options.remote,
        onFile: (shown) => void (file = shown),
        onOperator: (info) => {
          metadata = info.metadata;
          operator = info.operator;
          const reading = {
            decodeValue: this.type === undefined ? undefined : decode.compileDecoder(this.type),
            decode: options.decode,
            key: options.key,
            maxParallelism: options.maxParallelism ?? operator.maxParallelism,
          };
          sink = new elements.ElementSink(reading, maxElementBytes, this.push);
          if (side === 'input' && options.stitch !== false)
            resolveUpstreams(metadata, operator, options.upstream, upstreams, resolveOperator);
        },
      },
    );

    for (const read of channels.values()) {
      const open = sink!.finish(read);
      if (open === undefined) continue;
      // Output state ends between elements (the barrier is written between records); should
      // one end inside, the piece is still shown, never dropped.
      if (read.position.side === 'output') {
        sink!.partial(read, open, 'tail');
        await this.room();
        continue;
      }
      const upstream = upstreams.get(read.position.gate);
      if (upstream !== undefined) {
        const joined = await readUpstreamCompletion(
          options,
          upstream,
          read.position.channel,
          open.bytes,
          signal,
        );
        if (joined !== undefined) {
          sink!.stitched(read, joined.element, open, {
            operator: upstream.id,
            subtask: read.position.channel,
            partition: joined.partition,
            subpartition: options.subtask,
            bytes: joined.headBytes,
          });
          await this.room();
          continue;
        }
      }
      sink!.partial(read, open, 'tail');
      await this.room();
    }
  }
}

/** Each gate's upstream: the ones given, or the checkpoint's only operator with output state. */
function resolveUpstreams(
  metadata: FlinkCheckpointMetadata,
  operator: FlinkOperatorState,
  given: Readonly<Record<number, string>> | undefined,
  into: Map<number, FlinkOperatorState>,
  resolve: typeof resolveOperator,
): void {
  if (given !== undefined && Object.keys(given).length > 0) {
    for (const [gate, name] of Object.entries(given))
      into.set(Number(gate), resolve(metadata, name));
    return;
  }
  const withOutput = metadata.operators.filter(
    (op) => op.id !== operator.id && op.subtasks.some((s) => s.outputSubpartitions.length > 0),
  );
  if (withOutput.length !== 1) return;
  const gates = new Set<number>();
  for (const s of operator.subtasks) for (const h of s.inputChannels) gates.add(h.gate);
  for (const gate of gates) into.set(gate, withOutput[0]!);
}

/**
 * Reads upstream subtask `upstreamSubtask`'s output state just far enough to complete `tail`
 * from the head of its subpartition `subpartition` (this subtask's index), in each partition
 * that has one; the first partition whose head completes it wins. Memory: the bytes of the one
 * record.
 */
async function readUpstreamCompletion(
  options: ReadFlinkRecordsOptions,
  upstream: FlinkOperatorState,
  upstreamSubtask: number,
  tail: Buffer,
  signal: AbortSignal,
): Promise<{ element: Buffer; headBytes: number; partition: number } | undefined> {
  if (upstreamSubtask >= upstream.parallelism) return undefined;
  const heads = new Map<number, { pieces: Buffer[]; bytes: number; result?: Completion }>();
  let current: { pieces: Buffer[]; bytes: number; result?: Completion } | undefined;
  const [{ readFlinkEntries }, { completePartialRecord }] = await Promise.all([
    flinkReader(),
    import('./stitch.ts'),
  ]);
  await readFlinkEntries(
    options.checkpoint,
    {
      operator: upstream.id,
      subtask: upstreamSubtask,
      outputState: true,
      allowPaths: options.allowPaths,
      relocate: options.relocate,
    },
    {
      onEntry: (partition, subpartition) => {
        current = undefined;
        if (subpartition !== options.subtask) return;
        let head = heads.get(partition);
        if (head === undefined) heads.set(partition, (head = { pieces: [], bytes: 0 }));
        current = head.result?.done === true ? undefined : head;
      },
      onPayload: (chunk) => {
        const head = current;
        if (head === undefined) return;
        head.pieces.push(Buffer.from(chunk));
        head.bytes += chunk.length;
        const result = completePartialRecord(tail, Buffer.concat(head.pieces));
        if (result.done || result.needBytes < 0) {
          head.result = result;
          head.pieces = [];
          current = undefined;
        }
      },
    },
    { signal, remote: options.remote },
  );
  for (const [partition, head] of [...heads].sort((a, b) => a[0] - b[0])) {
    if (head.result?.done === true) {
      return { element: head.result.element, headBytes: head.result.headBytes, partition };
    }
  }
  return undefined;
}
