/** Output helpers shared by the commands: one JSON object on stdout, humans on stderr. */
import { closeSync, fstatSync, openSync } from 'node:fs';

export interface Io {
  out: NodeJS.WritableStream & { isTTY?: boolean };
  /** `columns`: a terminal's width, which a progress bar must not pass (it would scroll). */
  err: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
}

export const stdio: Io = { out: process.stdout, err: process.stderr };

/**
 * A closed, full or failing stdout or stderr (`--json | head -c1`, `> /dev/full`, a tty gone:
 * EPIPE, ENOSPC, EIO) must end the command quietly, its result and exit code standing: the
 * recovery is done and the spill root clean whatever became of its report. Such an error is no
 * one's failure, and unhandled it would crash the process with a stack trace. Later writes to
 * the broken stream are dropped.
 */
export function quietOnClosedPipes(streams: readonly NodeJS.WritableStream[]): void {
  for (const stream of streams) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      // Asynchronous write errors (pipes, ttys) land here; what was lost was only a report.
      if (error.code === 'EIO') releaseHungUpTerminal(stream);
    });
  }
}

/**
 * A terminal that hung up (EIO: its window closed) would still be restored by Node at exit,
 * and Node asserts when that fails: the process would end in SIGABRT, its exit code lost, after
 * a clean run. Putting /dev/null in the place of every stdio fd on that terminal (stdin too:
 * same fd number — close, then the lowest free number is taken again) makes Node see reopened
 * fds and leave them alone. Later writes go nowhere, as they would have.
 */
function releaseHungUpTerminal(stream: NodeJS.WritableStream): void {
  const { fd, isTTY } = stream as { fd?: unknown; isTTY?: boolean };
  if (isTTY !== true || typeof fd !== 'number' || fd < 0 || fd > 2) return;
  try {
    const terminal = fstatSync(fd).rdev;
    for (const each of [0, 1, 2]) {
      // Not isatty(): a hung-up terminal fails its TCGETS, so it says false.
      const st = fstatSync(each);
      if (!st.isCharacterDevice() || st.rdev !== terminal) continue;
      closeSync(each);
      const again = openSync('/dev/null', 'r+');
      if (again !== each) closeSync(again);
    }
  } catch {
    // Best effort: at worst Node's exit-time assertion stands, as before.
  }
}

/**
 * `stream` with a `write` that never throws: a file on a full device (`> /dev/full`) is written
 * synchronously by Node and its ENOSPC thrown from `write` itself. After the first failure the
 * stream counts as broken and later writes are dropped. Everything else is the stream's own.
 *
 * @example
 * ```ts
 * const io = { out: safeStream(process.stdout), err: safeStream(process.stderr) };
 * io.out.write('never throws\n');
 * ```
 */
export function safeStream<S extends NodeJS.WritableStream>(stream: S): S {
  let broken = false;
  const breaks = (error: unknown): void => {
    broken = true;
    if (!failures.has(safe)) failures.set(safe, error as NodeJS.ErrnoException);
  };
  stream.on('error', breaks);
  const write = (...args: unknown[]): boolean => {
    if (broken || (stream as { destroyed?: boolean }).destroyed === true) return true;
    try {
      return (stream.write as (...a: unknown[]) => boolean)(...args);
    } catch (error) {
      breaks(error);
      return true;
    }
  };
  const safe = new Proxy(stream, {
    get(target, prop) {
      if (prop === 'write') return write;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function'
        ? (value as (...a: unknown[]) => unknown).bind(target)
        : value;
    },
  });
  return safe;
}

/** The first error of each {@link safeStream}: what broke it. */
const failures = new WeakMap<object, NodeJS.ErrnoException>();

/**
 * The error that broke a {@link safeStream} (ENOSPC, EPIPE, EIO, …), if one did. A command
 * whose stdout is its result (`flink records`) asks, so that a full disk is a failure and not
 * a truncated file with exit 0.
 *
 * @example
 * ```ts
 * if (streamFailure(io.out)?.code === 'ENOSPC') throw new IoError(streamFailure(io.out));
 * ```
 */
export function streamFailure(stream: object): NodeJS.ErrnoException | undefined {
  return failures.get(stream);
}

export function printJson(io: Io, value: unknown): void {
  io.out.write(`${JSON.stringify(value)}\n`);
}

export function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** A two-column table: label, value. */
export function table(rows: [string, string | number][]): string {
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`).join('\n') + '\n';
}

/** A one-line progress bar redrawn in place on a TTY; a no-op elsewhere. */
export class ProgressLine {
  private last = 0;
  constructor(private readonly io: Io) {}

  get enabled(): boolean {
    return this.io.err.isTTY === true;
  }

  update(fraction: number, text: string, force = false): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (!force && now - this.last < 80) return;
    this.last = now;
    const width = 24;
    const filled = Math.round(Math.max(0, Math.min(1, fraction)) * width);
    // Cut to the terminal's width: a wrapped line is not redrawn in place, it scrolls.
    const line = `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}] ${text}`;
    this.io.err.write(`\r\x1b[2K${line.slice(0, Math.max(1, (this.io.err.columns || 80) - 1))}`);
  }

  done(): void {
    if (this.enabled) this.io.err.write('\r\x1b[2K');
  }
}
