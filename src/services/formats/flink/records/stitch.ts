/**
 * Records cut between two subtasks' channel state. When an unaligned checkpoint is taken, the
 * buffers a downstream input channel had received are its input state, and those its upstream
 * had not sent yet are the upstream's output (result-subpartition) state — so a record can
 * begin at the end of input channel (g, c) of subtask k and end at the head of the upstream
 * subtask's output subpartition for k. Flink's restore replays the two back to back into one
 * deserializer (`RecoveredInputChannel`, then the upstream's replayed output), which joins
 * them; here the join is explicit.
 *
 * For an all-to-all edge (keyBy, rebalance, broadcast) input channel c of gate g is fed by
 * upstream subtask c, and subtask k reads subpartition k of it. Other edges (forward,
 * rescale) map channels differently; the caller names the upstream subtask and subpartition.
 */
import { FIXED_ELEMENT_SIZES } from './elements.ts';

/** The 4-byte length field in front of every element. */
export const FRAME_LENGTH_BYTES = 4;

/** What {@link completePartialRecord} made of a tail and an upstream head. */
export type Completion =
  | { readonly done: true; readonly element: Buffer; readonly headBytes: number }
  | { readonly done: false; readonly needBytes: number };

/**
 * Joins the piece an input channel ended with (`tail`: from the element's length field on) to
 * the first bytes of the upstream's output subpartition state (`head`). Returns the element
 * (without its length field) and how many head bytes it took, or how many head bytes it needs
 * (when `head` is shorter: read more and call again). The upstream's elements after those
 * bytes are whole.
 *
 * @example
 * ```ts
 * const joined = completePartialRecord(tail, upstreamHead);
 * if (joined.done) replay(joined.element); // and skip joined.headBytes of the upstream state
 * ```
 */
export function completePartialRecord(tail: Uint8Array, head: Uint8Array): Completion {
  const field = Buffer.alloc(FRAME_LENGTH_BYTES);
  const fromTail = Math.min(tail.length, FRAME_LENGTH_BYTES);
  field.set(tail.subarray(0, fromTail), 0);
  const fieldFromHead = FRAME_LENGTH_BYTES - fromTail;
  if (head.length < fieldFromHead) return { done: false, needBytes: fieldFromHead };
  field.set(head.subarray(0, fieldFromHead), fromTail);
  const length = field.readInt32BE(0);
  const have = Math.max(0, tail.length - FRAME_LENGTH_BYTES);
  const headBytes = fieldFromHead + Math.max(0, length - have);
  if (length <= 0 || have > length) {
    // Not a continuation: the caller reports the tail as it is.
    return { done: false, needBytes: -1 };
  }
  if (head.length < headBytes) return { done: false, needBytes: headBytes };
  const element = Buffer.allocUnsafe(length);
  // The tail's body bytes, then the head's.
  const tailBody = tail.subarray(FRAME_LENGTH_BYTES);
  element.set(tailBody, 0);
  element.set(head.subarray(fieldFromHead, headBytes), tailBody.length);
  return { done: true, element, headBytes };
}

/**
 * Whether `buf[start, end)` can be an element as Flink frames them: a known tag, a fixed-size
 * element of exactly its size, a record long enough for its timestamp — and, when given,
 * `check` (a type's decoder) accepts it.
 */
export type FrameCheck = (buf: Buffer, start: number, end: number) => boolean;

/** Frames a start must be followed by, whole and valid, to be taken for an element boundary. */
export const HEAD_CONFIRM_FRAMES = 4;

function plausible(
  buf: Buffer,
  start: number,
  end: number,
  check: FrameCheck | undefined,
): boolean {
  const tag = buf[start]!;
  const size = end - start;
  if (tag === 0) {
    if (size < 9) return false;
  } else if (tag === 1) {
    if (size < 1) return false;
  } else if (FIXED_ELEMENT_SIZES[tag] !== size) {
    return false;
  }
  return check === undefined || check(buf, start, end);
}

/**
 * Where the first whole element of an output subpartition's state starts. The state begins
 * where the downstream's input state ended — often inside a record whose first bytes the
 * downstream holds — and nothing in these bytes says how long that piece is; when the
 * downstream's tail is at hand {@link completePartialRecord} says it exactly. Without it, the
 * first offset from which the bytes frame as valid elements is taken: every frame up to the
 * end of the state (which ends on an element boundary: the barrier is written between
 * records), or {@link HEAD_CONFIRM_FRAMES} of them while more bytes are to come.
 *
 * Returns the offset, or `undefined` while `complete` is false and more bytes are needed;
 * with `complete`, an offset is always returned (`bytes.length` when no boundary is found: the
 * whole state is one piece).
 *
 * @example
 * ```ts
 * findFirstElement(stateBytes, true, 16 << 20); // 0 when the state starts on a boundary
 * ```
 */
export function findFirstElement(
  bytes: Buffer,
  complete: boolean,
  maxElementBytes: number,
  check?: FrameCheck,
): number | undefined {
  const n = bytes.length;
  for (let h = 0; h < n; h++) {
    let at = h;
    let frames = 0;
    let verdict: 'bad' | 'good' | 'wait' = 'bad';
    for (;;) {
      if (at === n) {
        verdict = complete
          ? frames > 0
            ? 'good'
            : 'bad'
          : frames >= HEAD_CONFIRM_FRAMES
            ? 'good'
            : 'wait';
        break;
      }
      if (n - at < FRAME_LENGTH_BYTES) {
        verdict = complete ? 'bad' : frames >= HEAD_CONFIRM_FRAMES ? 'good' : 'wait';
        break;
      }
      const length = bytes.readInt32BE(at);
      if (length <= 0 || length > maxElementBytes) break;
      if (n - at - FRAME_LENGTH_BYTES < length) {
        // The last frame is still open: judge on the whole ones.
        verdict = complete ? 'bad' : frames >= HEAD_CONFIRM_FRAMES ? 'good' : 'wait';
        break;
      }
      if (!plausible(bytes, at + FRAME_LENGTH_BYTES, at + FRAME_LENGTH_BYTES + length, check))
        break;
      frames++;
      at += FRAME_LENGTH_BYTES + length;
      if (!complete && frames >= HEAD_CONFIRM_FRAMES) {
        verdict = 'good';
        break;
      }
    }
    if (verdict === 'good') return h;
    if (verdict === 'wait') return undefined;
  }
  return complete ? n : undefined;
}
