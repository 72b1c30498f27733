// @ts-check
// The socket to the relay. Every (re)connect starts with `hello` and replays the server's whole
// history, so the page starts over and never needs to ask for what it missed.

/** @import { ServerMessage } from '../protocol.ts' */

import { store, ingest, reset, setConn } from './model.js';

const FIRST_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 10000;
let backoff = FIRST_BACKOFF_MS;

/** Connects to `/ws` on the server that served the page, and keeps reconnecting. */
export function connect() {
  const ws = new WebSocket(`ws://${location.host}/ws`);
  ws.onopen = () => {
    backoff = FIRST_BACKOFF_MS;
  };
  ws.onmessage = (message) => {
    const msg = /** @type {ServerMessage} */ (JSON.parse(String(message.data)));
    if (msg.type === 'hello') {
      // Every (re)connect replays the whole history: start over.
      reset();
      store.server = msg.server;
      store.dropped = msg.dropped;
      setConn('live');
    } else if (msg.type === 'batch') {
      ingest(msg.records);
    } else if (msg.type === 'bye') {
      setConn('closed');
    }
  };
  ws.onclose = () => {
    setConn('closed');
    // The page stays useful without a server: it shows what it recorded, and it reconnects
    // if a server comes back (a new server id then resets the page). A relay that dropped
    // this page for reading too slowly is back at once: the replay brings it up to date.
    setTimeout(connect, backoff);
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  };
}
