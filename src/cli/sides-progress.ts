/**
 * The progress of a `recover` of several recoveries, two at a time: `--all` (one per operator,
 * subtask and side) and `--output-state` (a subtask's input and output sides).
 * Fed to one {@link RecoverProgress}, their readings interleaved — a `drain 50%` of one side
 * beside a `fetch` of another, a `finished 100%` followed by the next side's `fetch 0.0 MiB` —
 * and no line said which side it was of. Here each side has its own tracker and label; the bar
 * (or the periodic line) follows the oldest side still running, and each side that finishes
 * leaves one line.
 */
import type { RecoveryProgress } from '../services/progress.ts';
import type { Io } from './io.ts';
import {
  formatBar,
  formatPlain,
  MIN_BAR_COLUMNS,
  PLAIN_LINE_INTERVAL_MS,
  ProgressTracker,
  type BarReading,
  type RunProgress,
} from './progress-text.ts';

/** One side's readings: its own tracker, so its percent runs once from 0 to 100. */
interface Side {
  readonly tracker: ProgressTracker;
  ended: boolean;
}

/**
 * Shows the progress of many recoveries of one run on stderr: on a terminal at least
 * {@link MIN_BAR_COLUMNS} wide, the bar of the oldest side still running, redrawn in place, and
 * a line kept for each side as it finishes; elsewhere one line per side that finishes and at
 * most one line every {@link PLAIN_LINE_INTERVAL_MS} besides.
 *
 * @example
 * ```ts
 * const bar = new SidesProgress(io, 'recover');
 * startRecovery({ ..., onProgress: bar.side('orders/subtask-0 input'), progressIntervalMs: 200 });
 * bar.done();
 * ```
 */
export class SidesProgress implements RunProgress {
  /** Every side, in the order they started: the first not ended is the one shown. */
  private readonly sides: Side[] = [];
  private drawn = false;
  private lastLineMs = performance.now();

  /** @param lines whether finished sides leave a line (not with `--json`: only the bar, erased) */
  constructor(
    private readonly io: Io,
    private readonly command: string,
    private readonly lines = true,
  ) {}

  /** The `onProgress` of one side's recovery, named by its dir (if any) and side. */
  of({
    side,
    dir,
  }: {
    readonly side: string;
    readonly dir: string;
  }): (p: RecoveryProgress) => void {
    return this.side(dir === '' ? side : `${dir} ${side}`);
  }

  /** The `onProgress` of one side's recovery; `label` names it on every line it shows. */
  side(label: string): (p: RecoveryProgress) => void {
    const side: Side = { tracker: new ProgressTracker(label), ended: false };
    this.sides.push(side);
    return (p) => this.show(side, p);
  }

  private show(side: Side, p: RecoveryProgress): void {
    if (side.ended) return;
    const reading = side.tracker.read(p);
    const ended = p.stage === 'finished' || p.stage === 'failed' || p.stage === 'cancelled';
    if (ended) side.ended = true;
    const shown = this.sides.find((s) => !s.ended);
    const columns = this.io.err.columns || 80;
    if (this.io.err.isTTY === true && columns >= MIN_BAR_COLUMNS) {
      // A finished side's line stays above the bar; the other endings have their own message.
      if (p.stage === 'finished') {
        if (this.lines) this.line(reading);
      } else if (side === shown) {
        this.io.err.write(`\r\x1b[2K${formatBar(reading, columns)}`);
        this.drawn = true;
      }
      return;
    }
    const now = performance.now();
    if (
      p.stage === 'finished' ||
      (side === shown && now - this.lastLineMs >= PLAIN_LINE_INTERVAL_MS)
    ) {
      this.line(reading);
    }
  }

  private line(reading: BarReading): void {
    this.done();
    this.lastLineMs = performance.now();
    this.io.err.write(`spillway ${this.command}: ${formatPlain(reading)}\n`);
  }

  /** Clears a drawn bar (the lines stay). */
  done(): void {
    if (this.drawn) this.io.err.write('\r\x1b[2K');
    this.drawn = false;
  }
}
