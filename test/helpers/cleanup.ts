/**
 * What a test file opens and must close after each test (servers on loopback, senders with their
 * keep-alive sockets), registered as it is made: `afterEach` closes every one, senders first.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';

export interface Cleanup {
  /** Closes it after the test. */
  add(close: () => void | Promise<void>): void;
  /** Listens on a free port of `host` (127.0.0.1), closed (every connection with it) after the test; its port. */
  listen(server: Server, host?: string): Promise<number>;
}

export function closedAfterEach(): Cleanup {
  const closers: (() => void | Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()));
  });
  return {
    add: (close) => void closers.push(close),
    async listen(server, host = '127.0.0.1') {
      await new Promise<void>((resolve) => server.listen(0, host, resolve));
      closers.push(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
      return (server.address() as AddressInfo).port;
    },
  };
}
