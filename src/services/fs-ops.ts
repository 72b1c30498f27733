/**
 * The operations of the file seam (services/fs.ts) and what a fault seam handed to it sees of
 * them: a name per operation and the interceptor it calls before each one.
 */

/** Every operation the seam performs; an interceptor sees these names. */
export const FS_OPS = [
  'mkdir',
  'open',
  'read',
  'write',
  'sync',
  'close',
  'unlink',
  'rm',
  'rename',
  'link',
  'copyFile',
  'stat',
  'lstat',
  'readdir',
  'readFile',
  'writeFile',
] as const;
export type FsOp = (typeof FS_OPS)[number];

/**
 * What a fault seam (the demo's `src/pool/fault-seam.ts`, the tests' `test/helpers/fault-seam.ts`)
 * hands the file seam: it runs before each operation and may fail it with a real errno, delay
 * it, or count it. The product's seam has {@link NO_INTERCEPTOR}: the same calls, doing nothing.
 *
 * Some operations are synchronous in every run (the publish's links and renames, small file
 * creation, a small tree's delete: the thread pool's round trips were their cost). Those call
 * {@link FsInterceptor.beforeSync}, which may fail them but cannot pause them: a test that
 * needs an interleaving there acts inside the hook, or pauses at an asynchronous operation.
 */
export interface FsInterceptor {
  /** Before an asynchronous operation; a returned promise delays it, a throw fails it. */
  before(op: FsOp, path: string): void | Promise<void>;
  /** Before a synchronous one; a throw fails it; it runs to its end before the operation. */
  beforeSync(op: FsOp, path: string): void;
}

/** The product's interceptor: nothing counted, nothing failed, nothing paused. */
export const NO_INTERCEPTOR: FsInterceptor = {
  before: () => undefined,
  beforeSync: () => undefined,
};
