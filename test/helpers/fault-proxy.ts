/**
 * A fault-injecting TCP proxy of our own between a client and a real server on 127.0.0.1: it
 * forwards bytes unchanged until a planned fault fires. Faults fire once each, in plan order,
 * on the first connection that gets that far:
 * - `reset`: after `afterBytes` bytes of a response, the client's socket is reset (RST);
 * - `truncate`: after `afterBytes`, the client's socket is ended cleanly (FIN), mid-body;
 * - `stall`: after `afterBytes`, nothing more is forwarded; the socket stays open until the
 *   client gives up on it;
 * - `503`: the next connection gets `HTTP/1.1 503` without reaching the server.
 * It counts connections and how each ended, so a test can see the client close a socket.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export type FaultKind = 'reset' | 'truncate' | 'stall' | '503';

export interface Fault {
  kind: FaultKind;
  /** Response bytes (headers included) on that connection before the fault; not for 503. */
  afterBytes?: number;
  /** For 503: let this many connections through first (default 0: the next one). */
  afterConnections?: number;
  /**
   * `request`: count and cut the client's bytes (an upload) instead of the server's; for
   * `reset` and `stall`. Default `response`.
   */
  direction?: 'request' | 'response';
}

export interface FaultProxy {
  readonly port: number;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Faults still to fire, in order; push more any time. */
  readonly plan: Fault[];
  /** Faults that fired, in order. */
  readonly fired: FaultKind[];
  /** Connections accepted so far. */
  readonly connections: number;
  /** Connections the client closed or reset while the response was still flowing. */
  readonly clientClosedMidResponse: number;
  /** Response bytes forwarded so far, over all connections. */
  readonly bytesForwarded: number;
  /** Resolves once some connection has forwarded at least `bytes` response bytes. */
  whenForwarded(bytes: number): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a proxy on 127.0.0.1 in front of `127.0.0.1:targetPort`. */
export async function startFaultProxy(targetPort: number, plan: Fault[] = []): Promise<FaultProxy> {
  const sockets = new Set<Socket>();
  const fired: FaultKind[] = [];
  let connections = 0;
  let clientClosedMidResponse = 0;
  let bytesForwarded = 0;
  const waiters: { bytes: number; resolve: () => void }[] = [];
  const wake = (bytes: number) => {
    for (const w of [...waiters]) {
      if (bytes >= w.bytes) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };

  const server: Server = createServer((client) => {
    connections++;
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    if (plan[0]?.kind === '503' && connections > (plan[0].afterConnections ?? 0)) {
      plan.shift();
      fired.push('503');
      client.once('data', () => {
        client.end(
          'HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
        );
      });
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    let sent = 0;
    let stalled = false;
    let done = false;
    let requestSent = 0;
    let requestStalled = false;
    client.on('data', (d: Buffer) => {
      if (requestStalled) return;
      const fault = plan[0];
      const limit = fault?.direction === 'request' ? fault.afterBytes : undefined;
      if (fault !== undefined && limit !== undefined && requestSent + d.length >= limit) {
        plan.shift();
        fired.push(fault.kind);
        upstream.write(d.subarray(0, Math.max(0, limit - requestSent)));
        if (fault.kind === 'stall') {
          requestStalled = true;
          return;
        }
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      requestSent += d.length;
      upstream.write(d);
    });
    client.on('close', () => {
      if (!done && sent > 0 && !upstream.readableEnded) clientClosedMidResponse++;
      done = true;
      upstream.destroy();
    });
    upstream.on('end', () => {
      done = true;
      client.end();
    });
    upstream.on('data', (d: Buffer) => {
      if (stalled || client.destroyed) return;
      const fault = plan[0];
      const limit = fault?.direction === 'request' ? undefined : fault?.afterBytes;
      if (fault !== undefined && limit !== undefined && sent + d.length >= limit) {
        plan.shift();
        fired.push(fault.kind);
        const head = d.subarray(0, Math.max(0, limit - sent));
        sent += head.length;
        bytesForwarded += head.length;
        if (fault.kind === 'stall') {
          stalled = true;
          client.write(head);
          upstream.pause();
          return;
        }
        done = true;
        client.write(head, () => {
          if (fault.kind === 'reset') client.resetAndDestroy();
          else client.end();
        });
        upstream.destroy();
        return;
      }
      sent += d.length;
      bytesForwarded += d.length;
      wake(sent);
      if (!client.write(d)) {
        upstream.pause();
        client.once('drain', () => upstream.resume());
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    plan,
    fired,
    get connections() {
      return connections;
    },
    get clientClosedMidResponse() {
      return clientClosedMidResponse;
    },
    get bytesForwarded() {
      return bytesForwarded;
    },
    whenForwarded(bytes) {
      return new Promise((resolve) => {
        waiters.push({ bytes, resolve });
      });
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
