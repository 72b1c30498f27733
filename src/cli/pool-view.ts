/**
 * How `spillway demo` and `spillway soak` show a {@link TaskManager} pool to a person: the
 * one-line progress text, the closing table, and colour that appears only on a terminal.
 */
import { ABORT_PATHS, FAULT_DESCRIPTIONS, FAULT_KINDS, type AbortPath } from '../pool/faults.ts';
import type { PoolMetrics } from '../pool/metrics.ts';
import { mib } from './io.ts';

export interface Style {
  bold(s: string): string;
  dim(s: string): string;
  green(s: string): string;
  red(s: string): string;
  yellow(s: string): string;
}

/** ANSI styles on a TTY (unless `NO_COLOR` is set), plain text everywhere else. */
export function styleFor(stream: { isTTY?: boolean }): Style {
  const on = stream.isTTY === true && !process.env.NO_COLOR;
  const wrap = (open: number, close: number) => (s: string) =>
    on ? `\x1b[${open}m${s}\x1b[${close}m` : s;
  return {
    bold: wrap(1, 22),
    dim: wrap(2, 22),
    green: wrap(32, 39),
    red: wrap(31, 39),
    yellow: wrap(33, 39),
  };
}

/** Visible width of a string that may hold ANSI styles. */
function width(s: string): number {
  // eslint-disable-next-line no-control-regex
  return [...s.replace(/\x1b\[[0-9;]*m/g, '')].length;
}

function pad(s: string, n: number, right = false): string {
  const fill = ' '.repeat(Math.max(0, n - width(s)));
  return right ? fill + s : s + fill;
}

/** `F2 3 · G2 1`: abort paths in table order. */
export function pathList(paths: Partial<Record<AbortPath, number>>, sep = ' · '): string {
  return (Object.keys(ABORT_PATHS) as AbortPath[])
    .filter((p) => (paths[p] ?? 0) > 0)
    .map((p) => `${p} ${paths[p]}`)
    .join(sep);
}

/**
 * One progress line redrawn in place on a TTY (a no-op elsewhere): a short bar, then what is
 * live, the two numbers that matter, and the aborts by path, cut to the terminal's width.
 */
export class PoolProgress {
  private drawn = false;

  constructor(
    private readonly stream: NodeJS.WritableStream & { isTTY?: boolean; columns?: number },
  ) {}

  get enabled(): boolean {
    return this.stream.isTTY === true;
  }

  update(m: PoolMetrics, total: number): void {
    if (!this.enabled) return;
    const w = 16;
    const filled = Math.round(Math.max(0, Math.min(1, m.loops / total)) * w);
    const bar = `${'█'.repeat(filled)}${'░'.repeat(w - filled)}`;
    const text = [
      `${m.loops}/${total}`,
      `live ${m.liveTasks} tasks ${m.liveFiles} files ${mib(m.liveBytes)} ${m.outstandingGrants} grants`,
      `leaked ${m.leakedFiles}`,
      `masked ${m.maskedCauses}`,
      `aborts ${pathList(m.abortPaths, ' ').replace(/ (\d+)/g, ':$1') || '-'}`,
    ].join(' · ');
    // A pty may report 0 columns; then assume a common terminal width.
    const columns = (this.stream.columns ?? 0) > 0 ? this.stream.columns! : 100;
    const room = Math.max(10, columns - w - 4);
    const cut = [...text].length <= room ? text : `${[...text].slice(0, room - 1).join('')}…`;
    this.stream.write(`\r\x1b[2K${bar}  ${cut}`);
    this.drawn = true;
  }

  /** Clears the line. */
  done(): void {
    if (this.drawn) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }
}

/**
 * The fields `demo --json` and `soak --json` share: what the pool's recoveries came to, and
 * whether the spill root was left clean (`leftovers`: what the final sweep found).
 *
 * @example
 * ```ts
 * printJson(io, { recoveries: m.loops, ...poolReport(m, leftovers, interrupted), seed });
 * ```
 */
export function poolReport(m: PoolMetrics, leftovers: readonly string[], interrupted: boolean) {
  return {
    outcomes: m.outcomes,
    faults: m.faults,
    abortPaths: m.abortPaths,
    leakedFiles: m.leakedFiles + leftovers.length,
    maskedCauses: m.maskedCauses,
    deliveryErrors: m.deliveryErrors,
    faultsMissed: m.faultsMissed,
    bytesDelivered: m.bytesDelivered,
    spillFilesWritten: m.spillFilesWritten,
    spillRootClean: leftovers.length === 0,
    interrupted,
  };
}

/** Whether the pool proved its point: nothing leaked, nothing masked, every byte right. */
export function poolClean(m: PoolMetrics): boolean {
  return m.leakedFiles === 0 && m.maskedCauses === 0 && m.deliveryErrors === 0;
}

/**
 * The closing table: one row per fault kind (what it does, the abort paths it hit, how its
 * loops ended, whether the reported cause was the injected one), then the totals.
 */
export function poolTable(m: PoolMetrics, style: Style, extra: [string, string][] = []): string {
  const head = ['fault', 'what is injected', 'path', 'loops', 'ended as', 'first cause'];
  const rows: string[][] = [];
  for (const kind of FAULT_KINDS) {
    const k = m.byKind[kind];
    if (k === undefined) continue;
    const ended =
      kind === 'none' || kind === 'checkpoint'
        ? 'finished'
        : (kind.startsWith('cancel') && kind !== 'cancel-after-failure') || kind === 'mail-dropped'
          ? 'cancelled'
          : 'failed';
    const judged = k.loops - k.interrupted;
    let cause = style.green(`✓ ${k.asExpected}/${judged}`);
    if (k.masked > 0) cause = style.red(style.bold(`✗ ${k.masked} masked`));
    else if (k.missed > 0) cause = style.yellow(`✓ ${k.asExpected}/${judged}, ${k.missed} missed`);
    if (kind === 'none' || kind === 'checkpoint') {
      cause = k.asExpected === judged ? style.green(`✓ ${k.asExpected}/${judged}`) : cause;
    }
    rows.push([
      kind === 'none' ? 'none' : kind,
      FAULT_DESCRIPTIONS[kind],
      kind === 'checkpoint' ? 'G6' : pathList(k.paths, ' ').replace(/ \d+/g, '') || '–',
      String(k.loops),
      ended,
      cause,
    ]);
  }
  const widths = head.map((h, i) => Math.max(width(h), ...rows.map((r) => width(r[i]!))));
  const line = (cells: string[]) =>
    '  ' +
    cells
      .map((c, i) => pad(c, widths[i]!, i === 3))
      .join('  ')
      .trimEnd();
  const out = [style.dim(line(head)), style.dim('  ' + '─'.repeat(width(line(head)) - 2))];
  for (const r of rows) out.push(line(r));
  out.push(
    style.dim('  path: row of the Flink abort table (docs/flink.md §4); GAPC = cancel in the gap'),
  );

  const ok = (n: number) =>
    n === 0 ? style.bold(style.green('0')) : style.bold(style.red(String(n)));
  const totals: [string, string][] = [
    [
      'recoveries',
      `${m.loops}  (${m.outcomes.finished} finished · ${m.outcomes.failed} failed · ` +
        `${m.outcomes.cancelled} cancelled)`,
    ],
    ['delivered', `${mib(m.bytesDelivered)}, each channel's bytes exactly once, in order`],
    ['checkpoints', `${m.checkpointsVerified} cut during drain: delivered + remainder = original`],
    [
      'spill files',
      `${m.spillFilesWritten} written · peak live ${m.peakLiveFiles} files / ${mib(m.peakLiveBytes)}`,
    ],
    ...extra,
    ['leaked files', ok(m.leakedFiles)],
    ['masked causes', ok(m.maskedCauses)],
  ];
  if (m.deliveryErrors > 0) totals.push(['delivery errors', ok(m.deliveryErrors)]);
  if (m.faultsMissed > 0) totals.push(['faults missed', style.yellow(String(m.faultsMissed))]);
  if (m.interrupted > 0) totals.push(['interrupted', String(m.interrupted)]);
  const w = Math.max(...totals.map(([k]) => k.length));
  out.push('');
  for (const [k, v] of totals) out.push(`  ${k.padEnd(w)}  ${v}`);
  if (m.problems.length > 0) {
    out.push('', style.yellow('  problems:'));
    for (const p of m.problems) out.push(`    ${p}`);
  }
  return out.join('\n') + '\n';
}
