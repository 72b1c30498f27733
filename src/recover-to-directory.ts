/**
 * `recoverToDirectory(options)`: the CLI's `recover --out DIR` for apps — its options checked
 * here, then the recoveries wired to the task machine (recover-to-directory-run.ts), the
 * directory's preflight, sinks, naming and one-step publish (services/outputs/).
 */
import { validateRecoverOptions } from './recovery-options.ts';
import { invalidOption } from './services/option-error.ts';
import type { RescaleOption } from './services/rescale/rescale-options.ts';
import type {
  DirectoryReport,
  RecoverToDirectoryOptions,
  RescaleAll,
} from './recover-to-directory-types.ts';

export type { DirectoryReport, RecoverToDirectoryOptions, RescaleAll };

/**
 * Recovers `options.checkpoint` into the directory `options.out`: one file per input channel
 * (`gate-<g>-channel-<c>.bin`) and, for a Flink checkpoint with `flink.outputState`, one per
 * result subpartition (`partition-<p>-subpartition-<s>.bin`); with `all`, every subtask's
 * under `<operator>/subtask-<n>/`; with `rescale` lacking `subtask`, every new subtask's under
 * `subtask-<i>/`. Bad input is refused before anything is created. The files are written into
 * a private staging dir (inside `out`; for an `out` that does not exist yet, beside it, the
 * whole tree renamed to `out` at the end) and published in one step: a failure, or `signal`
 * aborted before the commit point, leaves `out` exactly as found (and no spill file anywhere).
 *
 * @throws `TypeError` for a malformed option; the recovery's typed errors
 *   (`CorruptCheckpointError`, `OutputExistsError`, `UnknownOperatorError`, …) as they are.
 * @example
 * ```ts
 * import { recoverToDirectory } from 'spillway';
 *
 * const report = await recoverToDirectory({
 *   checkpoint: 'ckpt/job/chk-7',
 *   out: 'recovered',
 *   all: true,
 *   flink: { operator: '', subtask: 0 },
 *   signal: AbortSignal.timeout(60_000),
 * });
 * console.log(report.files, report.total.bytesDelivered);
 * ```
 */
export function recoverToDirectory(options: RecoverToDirectoryOptions): Promise<DirectoryReport> {
  const { out, overwrite, all, log, notice, rescale, ...recovery } = options;
  if (typeof out !== 'string' || out === '') {
    throw invalidOption('out', 'a directory path (a non-empty string)', out);
  }
  for (const [name, value] of Object.entries({ overwrite, all })) {
    if (value !== undefined && typeof value !== 'boolean') {
      throw invalidOption(name, 'a boolean', value);
    }
  }
  for (const [name, value] of Object.entries({ log, notice })) {
    if (value !== undefined && typeof value !== 'function') {
      throw invalidOption(name, 'a function', value);
    }
  }
  // The recovery's own keys are checked as recoverChannelState checks them.
  validateRecoverOptions({
    ...recovery,
    // With `all` the operator and subtask are every one: only the path rules are the caller's.
    ...(all === true ? { flink: { ...recovery.flink, operator: 'all', subtask: 0 } } : {}),
    channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
    ...(rescale !== undefined ? { rescale: { subtask: 0, ...rescale } } : {}),
  });
  // The runner (the directory's preflight, sinks, publish) is loaded on the first call:
  // importing the package does not load it. A value import only: the runner's types (the task
  // machine's, XState's) stay out of this module's declarations (docs/package.md).
  return import('./recover-to-directory-run.ts').then((run) => run.runRecoveryToDirectory(options));
}
