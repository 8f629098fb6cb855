/**
 * Starting and stopping an HTTP server on loopback, for every local stand-in and test server:
 * listen on 127.0.0.1 (port 0 for any free one), report a busy port as `PortInUse`, and close
 * without waiting for idle keep-alive connections.
 */
import { type RequestListener, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The port asked for is taken by another process (or another server of this one). */
export class PortInUse extends Error {
  override readonly name = 'PortInUse';
  constructor(
    readonly port: number,
    options?: ErrorOptions,
  ) {
    super(`Port ${port} on 127.0.0.1 is in use.`, options);
  }
}

export interface LoopbackServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  server: Server;
  /** Stops listening and ends open connections. */
  close(): Promise<void>;
}

/** Listens with `handler` (a request listener, or a server not yet listening) on loopback. */
export async function startLoopbackServer(handler: RequestListener | Server, port = 0): Promise<LoopbackServer> {
  const server = typeof handler === 'function' ? createServer(handler) : handler;
  await new Promise<void>((resolve, reject) => {
    const fail = (error: NodeJS.ErrnoException) => reject(error.code === 'EADDRINUSE' ? new PortInUse(port, { cause: error }) : error);
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', fail);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        // A second close finds the server stopped already: nothing left to do.
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
