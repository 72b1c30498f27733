/**
 * The inspector server's public figures and bounds, apart from the code that keeps them: the
 * package's declarations reach this file, and it imports nothing (no `ws`, no XState types),
 * so a consumer's strict compile of `spillway/inspector` never meets them.
 */

/** The history the page can replay, in records (definitions and metrics are kept apart). */
export const HISTORY_LIMIT = 20_000;

/**
 * Stately's replay buffer keeps the newest messages, at most this many and at most
 * {@link STATELY_BUFFER_BYTES} bytes: a client may relay messages of up to 1 MiB each, and
 * 2,000 of those would hold ~2 GiB (300 of them grew the relay by 318 MiB before).
 */
export const STATELY_BUFFER_LIMIT = 2_000;
export const STATELY_BUFFER_BYTES = 8 * 1024 * 1024;

/** What the server's `pages()` reports. */
export interface PageStats {
  /** Page sockets open now. */
  open: number;
  /** Of those, still being sent the history (live batches wait until they have caught up). */
  catchingUp: number;
  /** Bytes queued for them in this process, plus live bytes those catching up are behind. */
  bufferedBytes: number;
  /** The most `bufferedBytes` has been, measured whenever records were sent. */
  peakBufferedBytes: number;
  /** Pages terminated for falling more than MAX_BUFFERED_BYTES (feed-limits.ts) behind. */
  dropped: number;
}

/** What the server's `stately()` reports. */
export interface StatelyStats {
  /** Messages relayed since the start. */
  relayed: number;
  /** Of those, kept for a socket that comes later (the newest). */
  buffered: number;
  /** Their bytes: at most {@link STATELY_BUFFER_BYTES}. */
  bufferedBytes: number;
}

/**
 * What a Stately socket is sent first when the relay's buffer no longer holds the start of the
 * stream: how many messages it missed, and what the buffer keeps.
 */
export interface StatelyTrimmedMessage {
  type: '@spillway.trimmed';
  missed: number;
  keeps: { messages: number; bytes: number };
}
