/**
 * A small loopback TCP load balancer, as an organisation puts in front of its Control API replicas: each incoming
 * connection goes to the next backend in turn. A backend that refuses the connection (a replica that was killed) is
 * skipped and the next one tried, as a load balancer's health check would route around it; a connection already
 * relayed to a backend that dies is cut, and the client retries. It relays bytes only: it never parses HTTP.
 */
import net from 'node:net';

export interface RoundRobinProxy {
  url: string;
  port: number;
  /** Connections relayed to each backend so far, by its index in `backends`. */
  counts: number[];
  close(): Promise<void>;
}

/**
 * `backends` is read at each connection: the caller may fill it in after the proxy is up (replicas that need its URL
 * to start) and change an entry when a replica comes back on another port.
 */
export async function startRoundRobinProxy(backends: { host?: string; port: number }[]): Promise<RoundRobinProxy> {
  const counts: number[] = [];
  const sockets = new Set<net.Socket>();
  let next = 0;

  const connect = (client: net.Socket, tried: number): void => {
    if (tried >= backends.length || client.destroyed) {
      client.destroy();
      return;
    }
    const index = next++ % backends.length;
    const backend = backends[index]!;
    counts[index] ??= 0;
    const upstream = net.connect({ host: backend.host ?? '127.0.0.1', port: backend.port });
    sockets.add(upstream);
    let connected = false;
    const cut = () => upstream.destroy();
    client.once('close', cut);
    upstream.once('connect', () => {
      connected = true;
      counts[index]!++;
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    upstream.on('error', () => {});
    upstream.once('close', () => {
      sockets.delete(upstream);
      client.off('close', cut);
      // Refused before any byte was relayed: try the next backend. Otherwise the client sees the cut and retries.
      if (connected) client.destroy();
      else connect(client, tried + 1);
    });
  };

  const server = net.createServer({ pauseOnConnect: true }, (client) => {
    sockets.add(client);
    client.on('error', () => {});
    client.on('close', () => sockets.delete(client));
    connect(client, 0);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    counts,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
