/**
 * The terminating signals a command traps: HUP, INT, QUIT, TERM, USR2 and ALRM cancel the
 * running work instead of killing the process, so cleanup runs and the spill root is left
 * empty; the command then exits 128 + the signal's number (docs/cli.md). A second signal while
 * cleanup runs is noted and changes nothing; a third ends the process at once, saying so (the
 * exit hook still removes this process's spill dir; `spillway sweep` finds anything else).
 */
import { constants } from 'node:os';

/** The signals that would otherwise end the process without cleanup. */
export const TRAPPED_SIGNALS = [
  'SIGHUP',
  'SIGINT',
  'SIGQUIT',
  'SIGTERM',
  'SIGUSR2',
  'SIGALRM',
] as const;
export type TrappedSignal = (typeof TRAPPED_SIGNALS)[number];

/** 128 + n, the shell's convention for "ended by signal n". */
export function exitCodeOf(signal: TrappedSignal): number {
  return 128 + constants.signals[signal];
}

export interface SignalScope {
  /** Aborted with the signal's name (`'SIGTERM'`, …) when the first one arrives. */
  readonly signal: AbortSignal;
  /** 128 + n after signal n, undefined if none arrived. */
  readonly exitCode: number | undefined;
  /**
   * Removes the handlers. From then until the next {@link trapSignals}, a signal ends the
   * process with `process.exit` (the first signal's code, if one arrived), never by the default
   * action: that would skip the `'exit'` hook that removes this process's owner dir.
   */
  dispose(): void;
}

type Handlers = Map<TrappedSignal, () => void>;

function install(handlers: Handlers): void {
  for (const [name, handler] of handlers) process.on(name, handler);
}

function uninstall(handlers: Handlers): void {
  for (const [name, handler] of handlers) process.off(name, handler);
}

/**
 * The handlers that cover the gap between a command's end and the process's exit. Without them
 * a signal landing there (a supervisor's SIGTERM storm) kills the process before
 * `process.on('exit')` runs, and the owner dir stays in the spill root.
 */
let afterScope: Handlers | undefined;

function installAfterScope(firstCode: number | undefined): void {
  if (afterScope !== undefined) uninstall(afterScope);
  let exiting = false;
  // Signal listeners do not keep the event loop alive: the process still exits on its own.
  afterScope = new Map(
    TRAPPED_SIGNALS.map((name) => [
      name,
      () => {
        const code = firstCode ?? exitCodeOf(name);
        // A second signal while the output drains: exit at once.
        if (exiting) process.exit(code);
        exiting = true;
        exitAfterOutput(code);
      },
    ]),
  );
  install(afterScope);
}

/**
 * Exits once what the command wrote to stdout and stderr has left the process: `process.exit`
 * drops a pipe's pending writes, so a signal landing while a long report drains would cut it
 * before its last line (`flink rewrite`'s "wrote NEWDIR", after its thousands of "dropped"
 * lines) — the work done, and not said so.
 */
function exitAfterOutput(code: number): void {
  let pending = 0;
  const done = (): void => {
    if (--pending === 0) process.exit(code);
  };
  for (const stream of [process.stdout, process.stderr]) {
    if (stream.writableLength > 0 && !stream.destroyed) {
      pending++;
      // Written in order: the callback comes once everything before it is written (or failed).
      stream.write('', done);
    }
  }
  if (pending === 0) process.exit(code);
}

/**
 * Traps the terminating signals for the duration of one command.
 *
 * @example
 * ```ts
 * const signals = trapSignals((line) => process.stderr.write(line));
 * try {
 *   await work({ signal: signals.signal });
 * } finally {
 *   signals.dispose();
 * }
 * return signals.exitCode ?? 0;
 * ```
 */
export function trapSignals(say: (line: string) => void = () => undefined): SignalScope {
  const controller = new AbortController();
  let exitCode: number | undefined;
  let received = 0;
  const handlers: Handlers = new Map(
    TRAPPED_SIGNALS.map((name) => [
      name,
      () => {
        received++;
        if (received === 1) {
          exitCode = exitCodeOf(name);
          controller.abort(name);
        } else if (received === 2) {
          // Cutting cleanup short is what would leave files behind: the second one waits.
          say(`spillway: ${name} again; still cleaning up (a third signal exits at once)\n`);
        } else {
          say(
            `spillway: ${name} a third time; exiting before cleanup finished ` +
              `(this process's spill dir goes with it; 'spillway sweep' removes anything else)\n`,
          );
          process.exit(exitCode ?? exitCodeOf(name));
        }
      },
    ]),
  );
  // The new handlers go in before the old ones leave: no instant with the default action.
  install(handlers);
  if (afterScope !== undefined) {
    uninstall(afterScope);
    afterScope = undefined;
  }
  let disposed = false;
  return {
    signal: controller.signal,
    get exitCode() {
      return exitCode;
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      installAfterScope(exitCode);
      uninstall(handlers);
    },
  };
}
