/**
 * The CLI's progress bar for `recover`, drawn from the library's own `onProgress` readings (so
 * the public progress feed is tested by use): one bar from 0 to 100 % over the whole recovery,
 * fitted to the terminal, or plain lines where a bar cannot be redrawn.
 *
 * The whole is the work in bytes of both stages that move data: the checkpoint's bytes read by
 * the fetch, then the payload's bytes delivered by the drain. While fetching the payload is not
 * known yet and is estimated as the checkpoint's size; once the fetch is done its real size
 * replaces the estimate (a payload is never larger than what was read, so the bar only jumps
 * forward), and the fraction is held monotonic in any case.
 */
import type { RecoveryProgress } from '../services/progress.ts';
import type { Io } from './io.ts';

const MIB = 1024 * 1024;

/** Below this many columns a bar redrawn in place is unreadable: plain lines instead. */
export const MIN_BAR_COLUMNS = 40;

/** At most one plain line this often (besides one per stage change). */
export const PLAIN_LINE_INTERVAL_MS = 5000;

/** How quickly the shown rate follows a change (time constant of its smoothing). */
const RATE_SMOOTHING_MS = 2000;

/** What one reading shows, whatever the layout. */
export interface BarReading {
  /** 0..1 over the whole recovery, never less than the reading before. */
  readonly fraction: number;
  /** `fetch`, `gap`, `drain`, `finished`, … (with a label prefixed, e.g. `output drain`). */
  readonly stage: string;
  /** This stage's bytes done and its total (undefined while unknown). */
  readonly bytes: number;
  readonly bytesTotal: number | undefined;
  /** Smoothed work rate in bytes per second, once there is one. */
  readonly bytesPerSecond: number | undefined;
  readonly elapsedMs: number;
  /** Time left at the current rate, once there is a rate (none once finished). */
  readonly etaMs: number | undefined;
  readonly channels: number | undefined;
  readonly channelsDone: number;
  readonly spillFiles: number;
  readonly retries: number;
}

/**
 * Folds the library's readings into {@link BarReading}s: the whole recovery's fraction (held
 * monotonic), a smoothed rate and the time left.
 *
 * @example
 * ```ts
 * const tracker = new ProgressTracker();
 * const onProgress = (p: RecoveryProgress) => {
 *   process.stderr.write(`\r${formatBar(tracker.read(p), process.stderr.columns ?? 80)}`);
 * };
 * ```
 */
export class ProgressTracker {
  private fraction = 0;
  private rate: number | undefined;
  private lastWork: number | undefined;
  private lastMs = 0;

  /** @param label prefixed to the stage (`output` for the output side of a Flink subtask) */
  constructor(private readonly label?: string) {}

  read(p: RecoveryProgress): BarReading {
    const { done, total } = work(p);
    const ended = p.stage === 'finished';
    const fraction = ended ? 1 : total > 0 ? Math.min(1, done / total) : 0;
    this.fraction = Math.max(this.fraction, fraction);
    this.updateRate(done, p.elapsedMs);
    const fetching = p.stage === 'fetch' || p.stage === 'starting';
    const left = Math.max(0, total - done);
    return {
      fraction: this.fraction,
      stage: this.label === undefined ? p.stage : `${this.label} ${p.stage}`,
      bytes: fetching ? p.bytesRead : p.bytesDelivered,
      bytesTotal: fetching ? p.checkpointBytes : p.payloadBytes,
      bytesPerSecond: this.rate,
      elapsedMs: p.elapsedMs,
      etaMs: ended
        ? undefined
        : this.rate !== undefined && this.rate > 0 && total > 0
          ? (left / this.rate) * 1000
          : undefined,
      channels: p.channels,
      channelsDone: Math.max(p.channelsDelivered, p.channelsFinished),
      spillFiles: p.spillFiles,
      retries: p.retries,
    };
  }

  /** An exponentially smoothed rate: a stall or a burst moves it over ~2 s, not at once. */
  private updateRate(work: number, ms: number): void {
    if (this.lastWork === undefined) {
      this.lastWork = work;
      this.lastMs = ms;
      return;
    }
    const dt = ms - this.lastMs;
    if (dt <= 0) return;
    const now = (Math.max(0, work - this.lastWork) / dt) * 1000;
    const weight = 1 - Math.exp(-dt / RATE_SMOOTHING_MS);
    this.rate = this.rate === undefined ? now : this.rate + weight * (now - this.rate);
    this.lastWork = work;
    this.lastMs = ms;
  }
}

/**
 * The whole recovery's work in bytes: read while fetching, then delivered while draining. The
 * fetch's share is the checkpoint's size until the fetch is done, then what it really read; the
 * drain's is the payload, estimated as the checkpoint's size until the fetch knows it.
 */
export function work(p: RecoveryProgress): { done: number; total: number } {
  const fetching = p.stage === 'fetch' || p.stage === 'starting';
  const checkpoint = p.checkpointBytes ?? 0;
  const fetchTotal = fetching ? Math.max(checkpoint, p.bytesRead) : p.bytesRead;
  const drainTotal = p.payloadBytes ?? checkpoint;
  return { done: p.bytesRead + p.bytesDelivered, total: fetchTotal + drainTotal };
}

/** `1:05`, `1:02:03`. */
export function clock(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const hh = Math.floor(s / 3600);
  const mm = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return hh > 0 ? `${hh}:${String(mm).padStart(2, '0')}:${ss}` : `${mm}:${ss}`;
}

function mibOf(done: number, total: number | undefined): string {
  const d = (done / MIB).toFixed(1);
  return total === undefined ? `${d} MiB` : `${d}/${(total / MIB).toFixed(1)} MiB`;
}

interface Field {
  /** Lower is kept first when the width runs short. */
  readonly priority: number;
  /** Before it when it follows another field. */
  readonly sep: string;
  readonly text: string;
}

/** The fields in display order, each with its priority. */
function fields(r: BarReading): Field[] {
  const list: (Field | undefined)[] = [
    { priority: 0, sep: '', text: `${Math.floor(r.fraction * 100)}%`.padStart(4) },
    { priority: 1, sep: ' ', text: r.stage },
    { priority: 3, sep: ' ', text: mibOf(r.bytes, r.bytesTotal) },
    r.bytesPerSecond === undefined
      ? undefined
      : { priority: 4, sep: ' · ', text: `${(r.bytesPerSecond / MIB).toFixed(1)} MiB/s` },
    { priority: 5, sep: ' · ', text: clock(r.elapsedMs) },
    r.etaMs === undefined ? undefined : { priority: 2, sep: ' · ', text: `ETA ${clock(r.etaMs)}` },
    r.channels === undefined
      ? undefined
      : { priority: 6, sep: ' · ', text: `${r.channelsDone}/${r.channels} ch` },
    r.retries === 0
      ? undefined
      : {
          priority: 7,
          sep: ' · ',
          text: `${r.retries} retr${r.retries === 1 ? 'y' : 'ies'}`,
        },
  ];
  return list.filter((f): f is Field => f !== undefined);
}

function join(list: readonly Field[]): string {
  return list.map((f, i) => (i === 0 ? f.text : f.sep + f.text)).join('');
}

/**
 * The fields, in display order, of the longest run by priority that fits `room` characters: a
 * field that does not fit drops every field after it in priority, so what a narrower terminal
 * shows is always a subset of what a wider one does.
 */
function fit(all: readonly Field[], room: number): Field[] {
  const kept = new Set<Field>();
  for (const field of [...all].sort((a, b) => a.priority - b.priority)) {
    kept.add(field);
    if (join(all.filter((f) => kept.has(f))).length > room) {
      kept.delete(field);
      break;
    }
  }
  return all.filter((f) => kept.has(f));
}

/**
 * One line of at most `columns - 1` characters (the last column would wrap on some terminals):
 * a bar of a quarter of the width (10 to 30 cells, so it does not jitter as the text changes),
 * then the fields. When the width runs short, fields go in a fixed order — retries, channels,
 * elapsed, rate, bytes, ETA, stage; the bar goes before the bytes, the ETA or the stage would,
 * and the percent stays (cut as a last resort); never a wrap.
 *
 * @example
 * ```ts
 * formatBar(reading, 100);
 * // '[███████████░░░░░░░░░░░]  51% drain 8.0/16.0 MiB · 85.3 MiB/s · 0:03 · ETA 0:04 · 12/32 ch'
 * ```
 */
export function formatBar(r: BarReading, columns: number): string {
  const room = Math.max(1, Math.floor(columns) - 1);
  const all = fields(r);
  const cells = Math.min(30, Math.floor(room / 4));
  if (cells >= 10) {
    const withBar = fit(all, room - cells - 3);
    // The bar is worth less than the bytes, the ETA and the stage (priorities 0–3).
    if (
      withBar.filter((f) => f.priority <= 3).length === all.filter((f) => f.priority <= 3).length
    ) {
      const filled = Math.round(r.fraction * cells);
      return `[${'█'.repeat(filled)}${'░'.repeat(cells - filled)}] ${join(withBar)}`;
    }
  }
  const text = join(fit(all, room));
  // Not even the percent fits: it is cut rather than wrapped.
  return text === '' ? all[0]!.text.trim().slice(0, room) : text;
}

/**
 * A plain line for logs and narrow terminals: everything, no bar, no width limit.
 *
 * @example
 * ```ts
 * formatPlain(reading); // 'drain 51% 8.0/16.0 MiB, 85.3 MiB/s, 0:03 elapsed, ETA 0:04, 12/32 channels'
 * ```
 */
export function formatPlain(r: BarReading): string {
  const parts = [
    `${r.stage} ${Math.floor(r.fraction * 100)}% ${mibOf(r.bytes, r.bytesTotal)}`,
    ...(r.bytesPerSecond === undefined ? [] : [`${(r.bytesPerSecond / MIB).toFixed(1)} MiB/s`]),
    `${clock(r.elapsedMs)} elapsed`,
    ...(r.etaMs === undefined ? [] : [`ETA ${clock(r.etaMs)}`]),
    ...(r.channels === undefined ? [] : [`${r.channelsDone}/${r.channels} channels`]),
    `${r.spillFiles} spill file${r.spillFiles === 1 ? '' : 's'}`,
    ...(r.retries === 0 ? [] : [`${r.retries} retr${r.retries === 1 ? 'y' : 'ies'}`]),
  ];
  return parts.join(', ');
}

/**
 * What a run into a directory asks of a progress display (`recover`): each recovery's
 * `onProgress`, and an end.
 */
export interface RunProgress {
  /** The `onProgress` of the recovery of one side of a subtask, into `dir` under DIR. */
  of(request: { readonly side: string; readonly dir: string }): (p: RecoveryProgress) => void;
  /** Clears a drawn bar (plain lines stay). */
  done(): void;
}

/**
 * Shows a recovery's progress on stderr: on a terminal at least {@link MIN_BAR_COLUMNS} wide,
 * one bar redrawn in place (fitted to the width at each redraw, so a resize is followed);
 * elsewhere — a pipe, a file, a narrow terminal — plain lines, one per stage change from the
 * gap on and at most one every {@link PLAIN_LINE_INTERVAL_MS} otherwise. The fetch's start is
 * not announced: bad input is found while fetching, and its one-line message (exit 2) must stay
 * the only line of a run that fails at once.
 *
 * @example
 * ```ts
 * const bar = new RecoverProgress(io, 'recover');
 * startRecovery({ ..., onProgress: (p) => bar.show(p), progressIntervalMs: 200 });
 * bar.done();
 * ```
 */
export class RecoverProgress implements RunProgress {
  private readonly tracker = new ProgressTracker();
  private drawn = false;
  /** The stage of the last plain line: the fetch's start counts as told. */
  private lastStage: string | undefined;
  private lastLineMs = performance.now();

  constructor(
    private readonly io: Io,
    private readonly command: string,
  ) {}

  /**
   * The one recovery's `onProgress`. A run of several recoveries at once (`--all`,
   * `--output-state`) is {@link SidesProgress}'s: fed to one tracker, their readings interleave.
   */
  of(): (p: RecoveryProgress) => void {
    return (p) => this.show(p);
  }

  show(p: RecoveryProgress): void {
    const reading = this.tracker.read(p);
    // A pty nobody sized reports 0 columns: unknown, taken as the usual 80.
    const columns = this.io.err.columns || 80;
    if (this.io.err.isTTY === true && columns >= MIN_BAR_COLUMNS) {
      this.io.err.write(`\r\x1b[2K${formatBar(reading, columns)}`);
      this.drawn = true;
      return;
    }
    // The endings but `finished` are followed by their own message: no line for them.
    if (p.stage === 'failed' || p.stage === 'cancelled') return;
    const now = performance.now();
    const fetching = p.stage === 'starting' || p.stage === 'fetch';
    const told = fetching
      ? this.lastStage === undefined || reading.stage === this.lastStage
      : reading.stage === this.lastStage;
    if (told && now - this.lastLineMs < PLAIN_LINE_INTERVAL_MS) return;
    this.done();
    this.lastStage = reading.stage;
    this.lastLineMs = now;
    this.io.err.write(`spillway ${this.command}: ${formatPlain(reading)}\n`);
  }

  /** Clears a drawn bar (plain lines stay). */
  done(): void {
    if (this.drawn) this.io.err.write('\r\x1b[2K');
    this.drawn = false;
  }
}
