/**
 * Where a spill reader stands in a task's spill files: what a committed boundary, a snapshot
 * and a resumed reader are made of.
 */
import { MisuseError } from '../errors.ts';

/**
 * A place in the spill files. `channel === -1` ⇔ the offset sits on a segment header ⇔
 * `remaining === 0`. Mid-body positions carry the CRC of the body read so far and the
 * expected CRC, so a resumed reader still verifies the segment it finishes.
 */
export interface SpillPosition {
  readonly fileIndex: number;
  readonly offset: number;
  readonly gate: number;
  readonly channel: number;
  readonly remaining: number;
  readonly crcSoFar: number;
  readonly expectedCrc: number;
}

/** A reader's live position: the same fields, moved in place as bytes are read. */
export interface MutablePosition {
  fileIndex: number;
  offset: number;
  gate: number;
  channel: number;
  remaining: number;
  crcSoFar: number;
  expectedCrc: number;
}

/** The beginning of the spill files: nothing delivered yet. */
export const START_POSITION: SpillPosition = Object.freeze({
  fileIndex: 0,
  offset: 0,
  gate: -1,
  channel: -1,
  remaining: 0,
  crcSoFar: 0,
  expectedCrc: 0,
});

/** Throws `MisuseError` for a position no reader can stand on. */
export function checkPosition(p: SpillPosition): void {
  if ((p.channel === -1) !== (p.remaining === 0)) {
    throw new MisuseError(`invalid spill position: channel ${p.channel}, remaining ${p.remaining}`);
  }
}
