/** An HTTP or HTTPS server on 127.0.0.1 (a free port) for the test, soak and bench receivers. */
import type { Server } from 'node:http';
import { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface Listening {
  /** `http://127.0.0.1:<port>/webhook` (`https:` for an HTTPS server) */
  readonly url: string;
  /** Closes the server, keep-alive and hanging connections included. */
  close(): Promise<void>;
}

export async function listenOnLoopback(server: Server | HttpsServer): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `${server instanceof HttpsServer ? 'https' : 'http'}://127.0.0.1:${port}/webhook`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
