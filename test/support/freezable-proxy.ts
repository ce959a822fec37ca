import * as net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL that can go silent: while frozen it keeps every connection
 * open, accepts new ones, and forwards nothing either way — a server that vanished without a FIN or
 * an RST, or a router that accepts but reaches no leader. Thawing forwards what was held back.
 */
export interface FreezableProxy {
  /** `target` with the proxy's port. */
  readonly url: string;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function startFreezableProxy(target: string): Promise<FreezableProxy> {
  const to = new URL(target);
  const sockets = new Set<net.Socket>();
  let frozen = false;
  const pause = (s: net.Socket) => (frozen ? s.pause() : s.resume());
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(to.port || 5432), to.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
      pause(s);
    }
    // Plain 'data' forwarding, not pipe(): pipe() resumes a source on its destination's 'drain'.
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => client.write(d));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    freeze() {
      frozen = true;
      sockets.forEach(pause);
    },
    thaw() {
      frozen = false;
      sockets.forEach(pause);
    },
    async close() {
      sockets.forEach((s) => s.destroy());
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
