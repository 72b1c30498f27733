/**
 * The one list of Spillway's error codes, each with its kind. Every error class takes its
 * `code` from here (the compiler checks it: `code` is typed {@link SpillwayErrorCode}), and its
 * `errorKind` is read from here, so the CLI's exit code, `--json`'s `code` and the README's table
 * (checked by test/api/error-kinds.test.ts) all follow this table and nothing else.
 */

/**
 * What an error says about whose it is, which is all a caller needs to decide what to do:
 * - `'input'`: the caller's input or configuration is wrong (a corrupt checkpoint, a missing
 *   path, an unknown operator, a bad flag); fix it and run again. The CLI exits 2.
 * - `'environment'`: the world failed or intervened (a full disk, a network that gave up, a
 *   checkpoint that changed while read, a cancel); the same run may succeed later. The CLI exits 1.
 * - `'internal'`: a bug, ours or the calling program's (an API used out of order, a foreign
 *   throwable). The CLI exits 1.
 *
 * @example
 * ```ts
 * recovery.done.catch((error) => {
 *   if (isSpillwayError(error) && error.errorKind === 'input') console.error('fix:', error.message);
 * });
 * ```
 */
export type ErrorKind = 'input' | 'environment' | 'internal';

/**
 * Every stable error code and its kind. `ABORT_ERR` is Node's own code for an abort, which a
 * cancelled task rejects with. The CLI-only codes (`ERR_SPILLWAY_USAGE`, `…_INSPECTOR`,
 * `…_INJECTED_FAULT`) are here too, so that no other list of codes exists.
 *
 * @example
 * ```ts
 * ERROR_CODES.ERR_SPILLWAY_CORRUPT_CHECKPOINT; // 'input'
 * ```
 */
export const ERROR_CODES = {
  ERR_SPILLWAY: 'internal',
  ERR_SPILLWAY_CORRUPT_CHECKPOINT: 'input',
  ERR_SPILLWAY_CHECKPOINT_PATH: 'input',
  ERR_SPILLWAY_CHECKPOINT_DECLINED: 'environment',
  ERR_SPILLWAY_ABORTED: 'environment',
  ABORT_ERR: 'environment',
  ERR_SPILLWAY_REJECTED: 'internal',
  ERR_SPILLWAY_MISUSE: 'internal',
  ERR_SPILLWAY_REGISTRY_CLOSED: 'internal',
  ERR_SPILLWAY_SPILL_TRUNCATED: 'environment',
  ERR_SPILLWAY_SPILL_CORRUPT: 'environment',
  ERR_SPILLWAY_CLEANUP: 'environment',
  // 'input' unless the file system refused a write: SpillRootError says which per error.
  ERR_SPILLWAY_SPILL_ROOT: 'input',
  ERR_SPILLWAY_OUTPUT_DIR: 'input',
  ERR_SPILLWAY_OUTPUT_EXISTS: 'input',
  ERR_SPILLWAY_REWRITE_REFUSED: 'input',
  ERR_SPILLWAY_CHECKPOINT_OUT: 'environment',
  ERR_SPILLWAY_CONSUMER: 'environment',
  ERR_SPILLWAY_IO: 'environment',
  ERR_SPILLWAY_INTERNAL: 'internal',
  ERR_SPILLWAY_CONSUMER_ABANDONED: 'environment',
  ERR_SPILLWAY_USAGE: 'input',
  ERR_SPILLWAY_INSPECTOR: 'environment',
  ERR_SPILLWAY_INJECTED_FAULT: 'environment',
  ERR_SPILLWAY_CHECKPOINT_CHANGED: 'environment',
  ERR_SPILLWAY_REMOTE_NOT_FOUND: 'input',
  ERR_SPILLWAY_REMOTE_ACCESS: 'environment',
  ERR_SPILLWAY_REMOTE: 'environment',
  ERR_SPILLWAY_REMOTE_UNSUPPORTED: 'input',
  ERR_SPILLWAY_REMOTE_TIMEOUT: 'environment',
  ERR_SPILLWAY_UNKNOWN_OPERATOR: 'input',
  ERR_SPILLWAY_TYPE_SPEC: 'input',
} as const satisfies Record<string, ErrorKind>;

/**
 * The code `--json` and the error reports give an error that is not one of ours (a foreign
 * throwable): the code of `InternalError`, which `ours()` wraps such an error in.
 */
export const FOREIGN_ERROR_CODE: SpillwayErrorCode = 'ERR_SPILLWAY_INTERNAL';

/**
 * Every stable `code` a Spillway error carries, so a `switch (error.code)` over them can be
 * exhaustive.
 *
 * @example
 * ```ts
 * function exitCodeOf(error: SpillwayError): number {
 *   switch (error.code) {
 *     case 'ERR_SPILLWAY_CORRUPT_CHECKPOINT':
 *     case 'ERR_SPILLWAY_CHECKPOINT_PATH':
 *       return 2;
 *     default:
 *       return 1;
 *   }
 * }
 * ```
 */
export type SpillwayErrorCode = keyof typeof ERROR_CODES;

/**
 * Whether `code` is one of Spillway's error codes.
 *
 * @example
 * ```ts
 * isErrorCode('ERR_SPILLWAY_IO'); // true
 * isErrorCode('ENOENT'); // false
 * ```
 */
export function isErrorCode(code: unknown): code is SpillwayErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}
