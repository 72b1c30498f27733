/**
 * The page's stream: every record numbered once, kept in a bounded history (definitions,
 * metrics and the rest apart, so a busy run cannot push the charts' definitions out), and sent
 * to the page sockets in batches — at most every 50 ms, earlier when a burst fills a batch. A
 * page that connects later is replayed the history first (see {@link Feed}).
 */
import { REPLAY_CHUNK_BYTES } from './feed-limits.ts';
import { Feed } from './feed.ts';
import type { UnnumberedRecord } from './recorder.ts';
import type { DefRecord, InspectorRecord, MetricsRecord } from './protocol.ts';
import { HISTORY_LIMIT, type PageStats } from './server-types.ts';

/** Bound on the metrics samples kept. */
const METRICS_LIMIT = 20_000;
/** Records reach the page in batches, so a busy demo cannot flood it. */
const BATCH_MS = 50;
/** A burst flushes early: no batch holds more records or bytes than this. */
const MAX_BATCH = 2_000;
const MAX_BATCH_BYTES = 256 * 1024;

/** Index of the first record in `list` (sorted by `i`) with `i > seq`. */
function firstAfter(list: readonly { i: number }[], seq: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.i <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** `{"type":"batch","records":[…]}` from records already serialized one by one. */
const batchOf = (jsons: readonly string[]): Buffer =>
  Buffer.from(`{"type":"batch","records":[${jsons.join(',')}]}`);

/**
 * Numbers, keeps and batches the records for the page sockets.
 *
 * @example
 * ```ts
 * const relay = new PageRelay();
 * relay.feed.add(ws, hello);            // a page: its replay, then live batches
 * relay.push({ k: 'metrics', t: Date.now(), files: 1, bytes: 4096, liveTasks: 1 });
 * ```
 */
export class PageRelay {
  /** Records dropped from the start of the history (it is bounded). */
  dropped = 0;
  private seq = 0;
  private flushedSeq = 0;
  readonly defs: DefRecord[] = [];
  readonly history: InspectorRecord[] = [];
  readonly metrics: MetricsRecord[] = [];
  /** Records not yet flushed, each serialized once: their size bounds the batch. */
  private pending: string[] = [];
  private pendingBytes = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  readonly feed = new Feed((after) => this.replay(after));

  /** Numbers a record, keeps it, and queues it for the next batch; returns it numbered. */
  push(unnumbered: UnnumberedRecord): InspectorRecord {
    const record = { ...unnumbered, i: ++this.seq } as InspectorRecord;
    if (record.k === 'def') this.defs.push(record);
    else if (record.k === 'metrics') {
      this.metrics.push(record);
      if (this.metrics.length > METRICS_LIMIT) this.metrics.splice(0, METRICS_LIMIT / 10);
    } else {
      this.history.push(record);
      if (this.history.length > HISTORY_LIMIT) {
        // Trim in chunks: shifting one at a time would make every event O(n).
        const cut = HISTORY_LIMIT / 10;
        this.history.splice(0, cut);
        this.dropped += cut;
      }
    }
    const json = JSON.stringify(record);
    this.pending.push(json);
    this.pendingBytes += json.length + 1;
    // A burst flushes early: messages and the pending list stay bounded.
    if (this.pending.length >= MAX_BATCH || this.pendingBytes >= MAX_BATCH_BYTES) this.flush();
    // unref: batching must never be what keeps the process alive.
    else this.flushTimer ??= setTimeout(() => this.flush(), BATCH_MS).unref();
    return record;
  }

  /** Sends what is pending to the live pages now. */
  flush(): void {
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.pending.length === 0) return;
    const batch = batchOf(this.pending);
    this.flushedSeq = this.seq;
    this.pending = [];
    this.pendingBytes = 0;
    this.feed.publish(batch, this.flushedSeq);
  }

  /** The page sockets now. */
  stats(): PageStats {
    return {
      open: this.feed.subscribers.size,
      catchingUp: [...this.feed.subscribers.values()].filter((s) => s.catchingUp).length,
      bufferedBytes: this.feed.bufferedBytes(),
      peakBufferedBytes: this.feed.peakBufferedBytes,
      dropped: this.feed.dropped,
    };
  }

  /**
   * A page's replay: the records after `after`, up to what was flushed to live pages (what is
   * pending reaches it with the next batch), about REPLAY_CHUNK_BYTES of them at a time.
   */
  private replay(after: number): { data: Buffer; seq: number } | undefined {
    // defs, metrics and history are each in sequence order: merge them.
    const cursors = [this.defs, this.metrics, this.history].map((list) => ({
      list,
      at: firstAfter(list, after),
    }));
    const head = (c: (typeof cursors)[number]): InspectorRecord | undefined => {
      const r = c.list[c.at];
      return r !== undefined && r.i <= this.flushedSeq ? r : undefined;
    };
    const jsons: string[] = [];
    let bytes = 0;
    let last = after;
    while (bytes < REPLAY_CHUNK_BYTES) {
      let next: (typeof cursors)[number] | undefined;
      for (const c of cursors) {
        const r = head(c);
        if (r !== undefined && (next === undefined || r.i < head(next)!.i)) next = c;
      }
      if (next === undefined) break;
      const record = head(next)!;
      next.at++;
      const json = JSON.stringify(record);
      jsons.push(json);
      bytes += json.length + 1;
      last = record.i;
    }
    return jsons.length === 0 ? undefined : { data: batchOf(jsons), seq: last };
  }
}
