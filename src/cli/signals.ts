/**
 * SIGINT and SIGTERM cancel the running work instead of killing the process, so cleanup runs
 * and the spill root is left empty; the command then exits 130 or 143 (DESIGN §4).
 */

export interface SignalScope {
  /** Aborted with 'SIGINT' or 'SIGTERM' when one arrives. */
  readonly signal: AbortSignal;
  /** 130 after SIGINT, 143 after SIGTERM, undefined if none arrived. */
  readonly exitCode: number | undefined;
  /**
   * Removes the handlers. From then until the next {@link trapSignals}, a signal ends the
   * process with `process.exit` (the first signal's code, if one arrived), never by the default
   * action: that would skip the `'exit'` hook that removes this process's owner dir.
   */
  dispose(): void;
}

/**
 * The handlers that cover the gap between a command's end and the process's exit. Without them
 * a signal landing there (a second Ctrl-C, a supervisor's SIGTERM storm) kills the process
 * before `process.on('exit')` runs, and the owner dir stays in the spill root.
 */
let afterScope: { onInt: () => void; onTerm: () => void } | undefined;

function removeAfterScope(): void {
  if (afterScope === undefined) return;
  process.off('SIGINT', afterScope.onInt);
  process.off('SIGTERM', afterScope.onTerm);
  afterScope = undefined;
}

function installAfterScope(firstCode: number | undefined): void {
  removeAfterScope();
  afterScope = {
    onInt: () => process.exit(firstCode ?? 130),
    onTerm: () => process.exit(firstCode ?? 143),
  };
  // Signal listeners do not keep the event loop alive: the process still exits on its own.
  process.on('SIGINT', afterScope.onInt);
  process.on('SIGTERM', afterScope.onTerm);
}

/**
 * Installs SIGINT/SIGTERM handlers for the duration of one command.
 *
 * @example
 * ```ts
 * const signals = trapSignals();
 * try {
 *   await work({ signal: signals.signal });
 * } finally {
 *   signals.dispose();
 * }
 * return signals.exitCode ?? 0;
 * ```
 */
export function trapSignals(): SignalScope {
  removeAfterScope();
  const controller = new AbortController();
  let exitCode: number | undefined;
  const on = (name: 'SIGINT' | 'SIGTERM', code: number) => () => {
    // A second signal while cleanup runs must not kill the process half-way: keep the first.
    if (exitCode !== undefined) return;
    exitCode = code;
    controller.abort(name);
  };
  const onInt = on('SIGINT', 130);
  const onTerm = on('SIGTERM', 143);
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  let disposed = false;
  return {
    signal: controller.signal,
    get exitCode() {
      return exitCode;
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      // The new handlers go in before the old ones leave: no instant with the default action.
      installAfterScope(exitCode);
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
    },
  };
}
