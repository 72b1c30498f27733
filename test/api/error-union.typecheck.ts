/**
 * DESIGN §5 at compile time: the error classes form a union discriminated by `code`, so a
 * `switch (error.code)` narrows to the class. Never run; part of `tsc --noEmit`, and each
 * `@ts-expect-error` must meet a real type error (an unused one is itself an error).
 */
import { isSpillwayError, type AnySpillwayError } from '../../src/index.ts';

declare const caught: unknown;

export function describeError(error: AnySpillwayError): string {
  switch (error.code) {
    case 'ERR_SPILLWAY_CORRUPT_CHECKPOINT':
      return `${error.file} at byte ${error.offset}`; // narrowed: file, offset
    case 'ERR_SPILLWAY_CHECKPOINT_OUT':
      return `${error.out}: ${error.errno}`;
    case 'ERR_SPILLWAY_IO':
    case 'ERR_SPILLWAY_CONSUMER':
      return `${error.errno ?? 'no errno'}`;
    case 'ABORT_ERR':
      // @ts-expect-error a CancelledError has no offset
      return String(error.offset);
    default:
      // @ts-expect-error outside its case, `offset` is not known
      return String(error.offset);
  }
}

if (isSpillwayError(caught)) {
  if (caught.code === 'ERR_SPILLWAY_CORRUPT_CHECKPOINT') {
    const offset: number = caught.offset;
    void offset;
  }
  // @ts-expect-error not narrowed: most Spillway errors have no offset
  void caught.offset;
}
