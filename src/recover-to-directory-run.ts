/**
 * The runner behind `recoverToDirectory` and the CLI's `recover --out`: each recovery the
 * directory asks for, started on the task machine (src/recover.ts) with the CLI's hooks. Apart
 * from recover-to-directory.ts so that the package entry's declarations, which name that
 * module's options, do not reach the task machine's XState types.
 */
import { startRecovery, type StartOptions, type StartedRecovery } from './recover.ts';
import type { DirectoryReport, RecoverToDirectoryOptions } from './recover-to-directory-types.ts';
import { recoverIntoDirectory, type SideRequest } from './services/outputs/recover-to-directory.ts';
import type { RescaleOption } from './services/rescale/rescale-options.ts';
import { withFanOut } from './services/spill/fan-out-spill.ts';
import type { RecoveryProgress } from './services/progress.ts';

/** How the CLI starts each recovery: its inspector's options and watch, its progress display. */
export interface DirectoryHooks {
  startOptions?: Partial<StartOptions>;
  /** Wraps each started recovery (`recover --inspect` watches it), told what it recovers. */
  watch?: (recovery: StartedRecovery, request: SideRequest) => StartedRecovery;
  onOnlyOutputState?: (subpartitions: number) => void;
  /** Each recovery's own `onProgress` (`recover`'s bar; `--all`: one per side), if any. */
  progressOf?: (request: SideRequest) => ((progress: RecoveryProgress) => void) | undefined;
}

/**
 * {@link recoverToDirectory} without the option checks, with the CLI's hooks.
 *
 * @example
 * ```ts
 * await runRecoveryToDirectory(options, { progressOf: (request) => bar.of(request) });
 * ```
 */
export async function runRecoveryToDirectory(
  options: RecoverToDirectoryOptions,
  hooks: DirectoryHooks = {},
): Promise<DirectoryReport> {
  const { out, overwrite, all, log, notice, rescale, ...recovery } = options;
  const rescaleAll =
    rescale !== undefined &&
    !('keep' in rescale) &&
    (rescale as { subtask?: number }).subtask === undefined
      ? rescale.parallelism
      : undefined;
  const watch = hooks.watch ?? ((r: StartedRecovery) => r);
  return recoverIntoDirectory(
    {
      checkpoint: recovery.checkpoint,
      out,
      overwrite,
      signal: recovery.signal,
      remote: recovery.remote,
      flink: all === true ? { operator: '', subtask: 0, ...recovery.flink } : recovery.flink,
      all,
      rescale: rescale !== undefined,
      rescaleAll,
      rescaleSubtask:
        rescale !== undefined && !('keep' in rescale)
          ? (rescale as { subtask?: number }).subtask
          : undefined,
      log,
      notice,
      onOnlyOutputState: hooks.onOnlyOutputState,
    },
    (request) =>
      watch(
        startRecovery({
          ...hooks.startOptions,
          ...recovery,
          ...onProgressOf(hooks, request),
          channels: request.channels,
          ...flinkOf(request),
          ...(rescale !== undefined
            ? {
                // A fan-out filters for every new subtask: its subtask 0 only checks.
                rescale: (request.rescaleSubtask !== undefined
                  ? { ...rescale, subtask: request.rescaleSubtask }
                  : request.rescaleFanOut !== undefined
                    ? withFanOut({ ...rescale, subtask: 0 }, request.rescaleFanOut)
                    : rescale) as RescaleOption,
              }
            : {}),
        }),
        request,
      ),
  );
}

/** The request's own `onProgress` from the hook, else the options' (none to spread). */
function onProgressOf(
  hooks: DirectoryHooks,
  request: SideRequest,
): Pick<StartOptions, 'onProgress'> {
  const onProgress = hooks.progressOf?.(request);
  return onProgress !== undefined ? { onProgress } : {};
}

/** A request's Flink selection, and its plan apart (an internal option, not the selection's). */
function flinkOf({ flink }: SideRequest): Pick<StartOptions, 'flink' | 'flinkPlan'> {
  if (flink === undefined) return {};
  const { plan, ...selection } = flink;
  return { flink: selection, ...(plan !== undefined ? { flinkPlan: plan } : {}) };
}
