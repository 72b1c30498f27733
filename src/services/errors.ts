/**
 * Typed errors shared by every layer: the one import path for them. The rule they serve (G5):
 * the first real cause is the error; everything that goes wrong after it is attached to
 * `.suppressed`, in order, and never replaces it.
 *
 * The pieces live in errors/: codes.ts (the one list of codes, each with its kind), base.ts
 * (SpillwayError), the classes by concern (checkpoint, remote, file, task) and helpers.ts
 * (the union, `ours`, `.suppressed`, the collector).
 */
export {
  type ErrorKind,
  ERROR_CODES,
  FOREIGN_ERROR_CODE,
  type SpillwayErrorCode,
  isErrorCode,
} from './errors/codes.ts';
export { SpillwayError, errnoOf } from './errors/base.ts';
export {
  CorruptCheckpointError,
  TypeSpecError,
  UnknownOperatorError,
  CheckpointPathError,
  CheckpointChangedError,
} from './errors/checkpoint-errors.ts';
export {
  RemoteLocationError,
  RetriedRemoteError,
  RemoteNotFoundError,
  RemoteAccessError,
  RemoteError,
  RemoteUnsupportedError,
  RemoteTimeoutError,
} from './errors/remote-errors.ts';
export {
  SpillEOFError,
  SpillCorruptError,
  CleanupError,
  SpillRootError,
  OutputDirError,
  OutputExistsError,
  RewriteRefusedError,
  CheckpointOutError,
  IoError,
} from './errors/file-errors.ts';
export {
  CheckpointDeclinedError,
  AbortedError,
  RejectedError,
  MisuseError,
  RegistryClosedError,
  ConsumerAbandonedError,
  CancelledError,
  ConsumerError,
  InternalError,
} from './errors/task-errors.ts';
export {
  type AnySpillwayError,
  isSpillwayError,
  ours,
  originalOf,
  toError,
  addSuppressed,
  cleanUpOnFailure,
  suppressedOf,
  isAbortConsequence,
  ErrorCollector,
} from './errors/helpers.ts';
