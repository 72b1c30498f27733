/**
 * The tests' fault seam: one object handed to the file seam (services/fs.ts) as its
 * interceptor, with today's names as its methods, so a fault test reads as before with `seam.`
 * in front:
 *
 * ```ts
 * import { seam } from '../helpers/fault-seam.ts';
 * afterEach(() => seam.resetFsSeam());
 * seam.injectFault({ op: 'write', code: 'ENOSPC', nth: 2, pathIncludes: 'spill-segment-' });
 * seam.setFsHook(async (op, path) => { … }); // before each async operation, may pause it
 * seam.setFsSyncHook((op, path) => { … }); // before each synchronous one, cannot pause it
 * expect(seam.fsOpCounts().rm).toBe(1);
 * ```
 *
 * It is the demo's own fault seam (src/pool/fault-seam.ts), so a test and the pool in one
 * process arm faults on the same object; faults keep to their files by `pathIncludes`.
 */
import { faultSeam } from '../../src/pool/fault-seam.ts';

export {
  FaultSeam,
  makeFsError,
  type FaultCode,
  type FaultSpec,
  type FsHook,
  type FsSyncHook,
} from '../../src/pool/fault-seam.ts';
export { FS_OPS, type FsOp } from '../../src/services/fs.ts';

/** This process's fault seam, handed to the file seam when this module is first imported. */
export const seam = faultSeam();
