/**
 * What keeps the bench's floors honest on a shared machine: a tmpfs to measure the code's own
 * cost on (no disk in the way), and flushing writeback between runs so one run's dirty pages
 * are not written out on the next run's time.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';

/**
 * Writes every dirty page back (`sync`) so the next timed step starts with none: once too many
 * are dirty the kernel throttles every writer, whichever side of a ratio runs then.
 */
export function flushWriteback(): void {
  spawnSync('sync', { stdio: 'ignore' });
}

/** A mounted tmpfs, or why there is none. */
export type Tmpfs = { path: string; unmount: () => Promise<void> } | { reason: string };

/**
 * Mounts a tmpfs of `sizeMiB` at `path` (created, mode 0700). Needs root (or CAP_SYS_ADMIN);
 * anywhere else the result says why not, and the tmpfs figures are skipped.
 *
 * @example
 * ```ts
 * const t = await mountTmpfs(join(dir, 'tmpfs'), 1024);
 * if ('path' in t) try { ... } finally { await t.unmount(); }
 * ```
 */
export async function mountTmpfs(path: string, sizeMiB: number): Promise<Tmpfs> {
  if (process.platform !== 'linux') return { reason: 'tmpfs figures need Linux' };
  if (process.getuid?.() !== 0) return { reason: 'tmpfs figures need root (mount -t tmpfs)' };
  await mkdir(path, { mode: 0o700 });
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0700`, 'tmpfs', path], {
    encoding: 'utf8',
  });
  if (r.status !== 0) {
    await rm(path, { recursive: true, force: true });
    const why = (r.stderr || r.error?.message || `exit ${r.status}`).trim().split('\n')[0];
    return { reason: `mount -t tmpfs refused: ${why}` };
  }
  return {
    path,
    unmount: async () => {
      // Lazy if busy: the mount must not outlive the bench whatever still holds it.
      if (spawnSync('umount', [path]).status !== 0) spawnSync('umount', ['-l', path]);
      await rm(path, { recursive: true, force: true });
    },
  };
}
