/**
 * What must go when the process exits, whatever it was doing: the spill root's owner dir and
 * the staging dirs of recoveries still running. `'exit'` fires on every normal ending,
 * `process.exit()` from a signal handler included; nothing async can run there, hence the
 * synchronous removal. (`kill -9` skips it; the sweep covers that, G7.) The hook is installed
 * the first time something is registered, never at import.
 */
import { fsSeam } from './fs.ts';

/** path → whether it goes only if empty (a dir of the user's we created, never their files). */
const paths = new Map<string, boolean>();
let installed = false;

/**
 * Removes `path` (a file or a whole tree; with `ifEmpty`, a dir only if it is empty) when the
 * process exits, unless it is released first.
 *
 * @example
 * ```ts
 * removeAtExit(ownerDir);
 * // … later, once it was removed normally:
 * releaseAtExit(ownerDir);
 * ```
 */
export function removeAtExit(path: string, options: { ifEmpty?: boolean } = {}): void {
  paths.set(path, options.ifEmpty === true);
  if (installed) return;
  installed = true;
  process.on('exit', () => {
    // Insertion order: a staging dir before the output dir that holds it.
    for (const [p, ifEmpty] of paths) {
      try {
        if (ifEmpty) fsSeam.rmdirSync(p);
        else fsSeam.rmSync(p);
      } catch {
        // Nothing to report to at exit; the next start's sweep removes what is left.
      }
    }
  });
}

/**
 * Forgets `path`: it was removed (or handed on) normally.
 *
 * @example
 * ```ts
 * releaseAtExit(stagingDir);
 * ```
 */
export function releaseAtExit(path: string): void {
  paths.delete(path);
}
