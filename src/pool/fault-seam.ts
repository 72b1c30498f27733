/**
 * The fault seam: a fault and hook registry handed to the file seam (services/fs.ts) as its
 * interceptor. The demo's fault injection (a product feature of `spillway demo` and `soak`)
 * arms its faults here; the tests reach it through test/helpers/fault-seam.ts. The product's
 * recovery path never imports it: with nothing handed in, the file seam counts nothing and
 * fails nothing.
 *
 * What it can do: make the N-th call of any operation fail with a real errno (ENOSPC, EIO,
 * EACCES, ENOENT), synchronous ones included, count every operation, or run a hook before each
 * one: before an asynchronous operation a hook may pause it to force an interleaving; before a
 * synchronous one (the publish's moves, small files, small deletes) a hook of its own runs to
 * its end and the operation cannot wait. A test that pauses says which operation it pauses.
 */
import { FileSystem, FS_OPS, interceptFs, type FsInterceptor, type FsOp } from '../services/fs.ts';

/** The errno codes a fault may carry. */
export type FaultCode = 'ENOSPC' | 'EIO' | 'EACCES' | 'ENOENT';

const FAULT_MESSAGES: Record<FaultCode, string> = {
  ENOSPC: 'no space left on device',
  EIO: 'i/o error',
  EACCES: 'permission denied',
  ENOENT: 'no such file or directory',
};

/** A fault armed on the seam: `op` fails at its `nth` call from now (1-based). */
export interface FaultSpec {
  op: FsOp;
  code: FaultCode;
  /** Which call (counted from when the fault is armed) fails; default 1. */
  nth?: number;
  /** Only calls whose path contains this string count. */
  pathIncludes?: string;
  /** How many consecutive calls fail once triggered; default 1. */
  times?: number;
}

interface ArmedFault extends Required<Omit<FaultSpec, 'pathIncludes'>> {
  pathIncludes: string | undefined;
  seen: number;
  fired: number;
}

/** Called before each asynchronous operation; may return a promise to delay it (race tests). */
export type FsHook = (op: FsOp, path: string) => void | Promise<void>;

/** Called before each synchronous operation; may throw to fail it, and cannot delay it. */
export type FsSyncHook = (op: FsOp, path: string) => void;

/** Makes a real-looking errno error, as Node itself would raise it. */
export function makeFsError(code: FaultCode, op: FsOp, path: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(
    `${code}: ${FAULT_MESSAGES[code]}, ${op} '${path}' (injected)`,
  );
  error.code = code;
  error.syscall = op;
  error.path = path;
  return error;
}

/**
 * Faults, a hook and counts, as one object the file seam calls before each operation.
 *
 * @example
 * ```ts
 * const seam = new FaultSeam().install();
 * const disarm = seam.injectFault({ op: 'write', code: 'ENOSPC', nth: 3 });
 * // … run a recovery: its third write fails with ENOSPC …
 * console.log(seam.fsOpCounts().write);
 * disarm();
 * ```
 */
export class FaultSeam implements FsInterceptor {
  private readonly faults: ArmedFault[] = [];
  private readonly counts = new Map<FsOp, number>();
  private hook: FsHook | undefined;
  private syncHook: FsSyncHook | undefined;
  /**
   * A file seam of its own with this fault seam in front, to hand to what should be faulted
   * (an `OutputDir`, a `ChannelFileSink`): every operation there is counted and may fail.
   */
  readonly fs: FileSystem = new FileSystem(this);

  /** Hands this seam to the file seam (it stays until another is handed in). */
  install(): this {
    interceptFs(this);
    return this;
  }

  /** Arms a fault; returns a function that disarms it. */
  injectFault(spec: FaultSpec): () => void {
    const armed: ArmedFault = {
      op: spec.op,
      code: spec.code,
      nth: spec.nth ?? 1,
      times: spec.times ?? 1,
      pathIncludes: spec.pathIncludes,
      seen: 0,
      fired: 0,
    };
    this.faults.push(armed);
    return () => {
      const i = this.faults.indexOf(armed);
      if (i >= 0) this.faults.splice(i, 1);
    };
  }

  /** Disarms every fault, removes the hook and resets the counters. */
  resetFsSeam(): void {
    this.faults.length = 0;
    this.counts.clear();
    this.hook = undefined;
    this.syncHook = undefined;
  }

  /**
   * Installs (or with `undefined` removes) the hook run before each asynchronous operation;
   * the operation waits for a promise it returns.
   */
  setFsHook(next: FsHook | undefined): void {
    this.hook = next;
  }

  /**
   * Installs (or with `undefined` removes) the hook run before each synchronous operation
   * (`linkSync`, `renameSync`, `writeNewFileSync`, a small tree's unlinks, …): it runs to its
   * end first and may throw; nothing can make a synchronous operation wait.
   */
  setFsSyncHook(next: FsSyncHook | undefined): void {
    this.syncHook = next;
  }

  /** How many times each operation ran since the last reset (faulted calls included). */
  fsOpCounts(): Record<FsOp, number> {
    const out = {} as Record<FsOp, number>;
    for (const op of FS_OPS) out[op] = this.counts.get(op) ?? 0;
    return out;
  }

  /** The hook first (it may pause the operation), then the faults. */
  before(op: FsOp, path: string): void | Promise<void> {
    const hook = this.hook;
    if (hook !== undefined) {
      return (async () => {
        await hook(op, path);
        this.countAndFault(op, path);
      })();
    }
    this.countAndFault(op, path);
  }

  /** The synchronous hook first, then the faults. */
  beforeSync(op: FsOp, path: string): void {
    this.syncHook?.(op, path);
    this.countAndFault(op, path);
  }

  /** Counts the call and fails it if an armed fault says so. */
  private countAndFault(op: FsOp, path: string): void {
    this.counts.set(op, (this.counts.get(op) ?? 0) + 1);
    for (const f of this.faults) {
      if (f.op !== op) continue;
      if (f.pathIncludes !== undefined && !path.includes(f.pathIncludes)) continue;
      f.seen++;
      if (f.seen >= f.nth && f.fired < f.times) {
        f.fired++;
        throw makeFsError(f.code, op, path);
      }
    }
  }
}

/** The process's one fault seam, handed to the file seam the first time it is asked for. */
let shared: FaultSeam | undefined;

/**
 * The fault seam of this process, installed on first use (never at import). The demo's pool
 * and the tests share it: faults are armed per path, so each keeps to its own files.
 */
export function faultSeam(): FaultSeam {
  shared ??= new FaultSeam().install();
  return shared;
}
