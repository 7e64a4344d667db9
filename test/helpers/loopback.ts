/** An HTTP server on 127.0.0.1 (a free port) for the test, soak and bench receivers. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Listening {
  /** `http://127.0.0.1:<port>/webhook` */
  readonly url: string;
  /** Closes the server, keep-alive and hanging connections included. */
  close(): Promise<void>;
}

export async function listenOnLoopback(server: Server): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhook`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
