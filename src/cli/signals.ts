/**
 * SIGINT and SIGTERM cancel the running work instead of killing the process, so cleanup runs
 * and the spill root is left empty; the command then exits 130 or 143 (DESIGN §4).
 */

export interface SignalScope {
  /** Aborted with 'SIGINT' or 'SIGTERM' when one arrives. */
  readonly signal: AbortSignal;
  /** 130 after SIGINT, 143 after SIGTERM, undefined if none arrived. */
  readonly exitCode: number | undefined;
  /** Removes the handlers. */
  dispose(): void;
}

/** Installs SIGINT/SIGTERM handlers for the duration of one command. */
export function trapSignals(): SignalScope {
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
  return {
    signal: controller.signal,
    get exitCode() {
      return exitCode;
    },
    dispose() {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
    },
  };
}
