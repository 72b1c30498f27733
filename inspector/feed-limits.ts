/**
 * The bounds of the inspector's per-socket feed, apart from the feed itself: they are part of
 * the inspector's public surface (`MAX_BUFFERED_BYTES`), and the feed's module names `ws`'s
 * types, which a consumer of the package's declarations must not need.
 */

/**
 * A socket more than this far behind (bytes queued for it here, plus live bytes it has not been
 * sent yet) is terminated: a client that stops reading would otherwise make the relay hold
 * everything it is sent (500 such clients grew it by ~570 MB). A page reconnects and replays.
 */
export const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
/**
 * The history is replayed in chunks of about this size, each queued only once the socket has
 * taken the ones before down to REPLAY_HIGH_WATER: a stalled reader holds one chunk or two, not
 * the whole history.
 */
export const REPLAY_CHUNK_BYTES = 64 * 1024;
export const REPLAY_HIGH_WATER = 128 * 1024;

/**
 * The page only listens: anything it sends is a mistake or abuse. A `/ws` frame larger than
 * this is refused by `ws` from its header (close 1009, its payload never buffered), and any
 * frame at all closes the socket (1008): twenty local clients sending 64 KiB frames used to
 * cost the recovery beside them 15× its CPU.
 */
export const PAGE_MAX_INBOUND_BYTES = 1024;
/**
 * `/stately/ws` (only with `spillway inspect --stately`; `recover --inspect` does not serve it)
 * relays what clients send, as Stately's own server does: one frame may be this large, and what
 * it keeps is bounded in bytes (STATELY_BUFFER_BYTES). It has no rate budget: passing on what
 * inspectors send, fast, is its job.
 */
export const STATELY_MAX_INBOUND_BYTES = 1024 * 1024;
