/** Output helpers shared by the commands: one JSON object on stdout, humans on stderr. */

export interface Io {
  out: NodeJS.WritableStream & { isTTY?: boolean };
  err: NodeJS.WritableStream & { isTTY?: boolean };
}

export const stdio: Io = { out: process.stdout, err: process.stderr };

/**
 * A closed stdout or stderr (`spillway recover … --json | head -c1`) must end the command
 * quietly, its result standing: an EPIPE there is no one's failure, and left unhandled it
 * would crash the process with a stack trace. Later writes to the closed stream are dropped.
 */
export function quietOnClosedPipes(streams: readonly NodeJS.WritableStream[]): void {
  for (const stream of streams) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') return;
      throw error;
    });
  }
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
    this.io.err.write(`\r\x1b[2K[${'█'.repeat(filled)}${'░'.repeat(width - filled)}] ${text}`);
  }

  done(): void {
    if (this.enabled) this.io.err.write('\r\x1b[2K');
  }
}
