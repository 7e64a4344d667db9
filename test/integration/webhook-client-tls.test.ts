/**
 * The HTTP sender's client certificate (docs/contract.md §18 `tls`) against real HTTPS receivers on
 * loopback that require one from the test CA (test/fixtures/tls): delivered with it; `temporary`/`tls`,
 * with nothing read by the receiver, with another CA's or none, under TLS 1.3 (where the refusal
 * arrives after the client's side of the handshake, the request already handed over) and TLS 1.2
 * (where it arrives during it); the endpoint's CA trusted beside the public roots; material that
 * cannot be used refused when the sender is made, naming the field.
 *
 * Two receivers: Node's https server, and OpenSSL's own (`openssl s_server`), which refuses a
 * certificate as servers built on OpenSSL do, with an alert in the handshake. Node's server instead
 * completes the handshake and then drops the connection, no alert, which under TLS 1.3 the client
 * cannot tell from a receiver that read the request and dropped it: `unknown`, as for any reset.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ClientTlsError, isTlsRefusal } from '../../lib/webhook/client-tls';
import { EndpointGuard, SANDBOX_GUARD_OPTIONS } from '../../lib/webhook/endpoint-guard';
import { HttpWebhookSender, type HttpWebhookSenderOptions } from '../../lib/webhook/http-sender';
import type { ClientTls } from '../../lib/webhook/sender';

const pem = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}.pem`, import.meta.url), 'utf8');
const CA = pem('ca');
const CLIENT: ClientTls = { clientCertificate: pem('client'), privateKey: pem('client.key'), ca: CA };
const OTHER_CA_CLIENT: ClientTls = { clientCertificate: pem('other-client'), privateKey: pem('other-client.key'), ca: CA };
const REQUEST = { eventId: 'evt_tls_1', body: '{"id":"evt_tls_1"}' };

type TlsVersion = 'TLSv1.2' | 'TLSv1.3';

interface Receiver {
  readonly url: string;
  /** Requests the receiver's HTTP layer read, with the client certificate's subject CN. */
  readonly received: string[];
  /** TLS connections it completed. */
  readonly handshakes: () => number;
}

const servers: https.Server[] = [];
const senders: HttpWebhookSender[] = [];
const processes: ChildProcess[] = [];

afterEach(async () => {
  for (const sender of senders.splice(0)) sender.close();
  for (const child of processes.splice(0)) child.kill();
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve())))));
});

/** An HTTPS receiver that requires a client certificate signed by the test CA. */
async function startReceiver(version: TlsVersion, host = '127.0.0.1'): Promise<Receiver> {
  const received: string[] = [];
  let handshakes = 0;
  const server = https.createServer(
    { cert: pem('server'), key: pem('server.key'), ca: CA, requestCert: true, rejectUnauthorized: true, minVersion: version, maxVersion: version },
    (req, res) => {
      const peer = (req.socket as tls.TLSSocket).getPeerCertificate();
      req.resume();
      req.on('end', () => {
        received.push(String(peer.subject?.CN));
        res.writeHead(204).end();
      });
    },
  );
  server.on('secureConnection', () => handshakes++);
  // A refused handshake is the client's problem; the server just drops it.
  server.on('tlsClientError', () => {});
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const name = host === '127.0.0.1' ? 'localhost' : host;
  return { url: `https://${name}:${(server.address() as AddressInfo).port}/in`, received, handshakes: () => handshakes };
}

/**
 * OpenSSL's test server on loopback, requiring a client certificate the test CA signed and refusing
 * any other in the handshake (`-verify_return_error`). It answers no POST: only its refusals are used.
 */
async function startOpenSslReceiver(version: TlsVersion): Promise<string> {
  const dir = fileURLToPath(new URL('../fixtures/tls/', import.meta.url));
  const flag = version === 'TLSv1.3' ? '-tls1_3' : '-tls1_2';
  const child = spawn('openssl', ['s_server', '-accept', '127.0.0.1:0', '-cert', 'server.pem', '-key', 'server.key.pem', '-CAfile', 'ca.pem', '-Verify', '1', '-verify_return_error', flag, '-www'], { cwd: dir, stdio: ['ignore', 'pipe', 'ignore'] });
  processes.push(child);
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`openssl s_server exited (${code})`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const accept = /ACCEPT 127\.0\.0\.1:(\d+)/.exec(out);
      if (accept) resolve(Number(accept[1]));
    });
  });
  return `https://localhost:${port}/in`;
}

function sender(options: Partial<HttpWebhookSenderOptions> & { url: string }): HttpWebhookSender {
  const created = new HttpWebhookSender({ timeoutMs: 5_000, guard: new EndpointGuard(SANDBOX_GUARD_OPTIONS), ...options });
  senders.push(created);
  return created;
}

describe.each<TlsVersion>(['TLSv1.3', 'TLSv1.2'])('HttpWebhookSender: a receiver requiring a client certificate (%s)', (version) => {
  it('is delivered to with the endpoint’s certificate, its CA trusting the receiver’s', async () => {
    const receiver = await startReceiver(version);

    const { outcome } = await sender({ url: receiver.url, tls: CLIENT }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'accepted', status: 204 });
    expect(receiver.received).toEqual(['handoff-test-client']);
  });

  it('is temporary (tls) with a certificate from another CA, refused by an OpenSSL server’s alert', async () => {
    const url = await startOpenSslReceiver(version);

    const { outcome } = await sender({ url, tls: OTHER_CA_CLIENT }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'tls' });
  });

  it('keeps the connection alive between requests', async () => {
    const receiver = await startReceiver(version);
    const client = sender({ url: receiver.url, tls: CLIENT });

    for (let i = 0; i < 3; i++) expect((await client.send(REQUEST)).outcome).toEqual({ kind: 'accepted', status: 204 });

    expect(receiver.received).toHaveLength(3);
    expect(receiver.handshakes()).toBe(1);
  });
});

describe('HttpWebhookSender: Node’s https server refusing a certificate from another CA', () => {
  it('is temporary (tls) under TLS 1.2: it drops the connection before the client’s handshake ends', async () => {
    const receiver = await startReceiver('TLSv1.2');

    const { outcome } = await sender({ url: receiver.url, tls: OTHER_CA_CLIENT }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'tls' });
    expect(receiver.received).toEqual([]);
  });

  it('is unknown (connection-reset) under TLS 1.3: it drops the connection after, with no alert to tell the client', async () => {
    const receiver = await startReceiver('TLSv1.3');

    const { outcome } = await sender({ url: receiver.url, tls: OTHER_CA_CLIENT }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'unknown', cause: 'connection-reset' });
    expect(receiver.received).toEqual([]);
  });
});

describe('HttpWebhookSender: a receiver’s certificate', () => {
  it('is temporary (tls) when the receiver’s CA is not trusted (no tls.ca: the public roots only)', async () => {
    const receiver = await startReceiver('TLSv1.3');
    const { ca: _ca, ...withoutCa } = CLIENT;

    const { outcome } = await sender({ url: receiver.url, tls: withoutCa }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'tls' });
    expect(receiver.received).toEqual([]);
  });

  it('is checked against the URL’s host, tls.ca or not', async () => {
    // The server's certificate names localhost and 127.0.0.1, not 127.0.0.2.
    const receiver = await startReceiver('TLSv1.3', '127.0.0.2');

    const { outcome } = await sender({ url: receiver.url, tls: CLIENT }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'tls' });
    expect(receiver.received).toEqual([]);
  });
});

/*
 * Without any client certificate the sender cannot trust the test CA (tls.ca comes with one), so what a
 * TLS 1.3 server's refusal of a missing certificate looks like is shown on a bare connection that
 * trusts it: it arrives after the client's handshake ended (`secureConnect`), as the alert the sender
 * reads as `tls` (the other-CA case above goes the same way through the sender).
 */
describe('isTlsRefusal', () => {
  it.each<[TlsVersion, string, boolean]>([
    ['TLSv1.3', 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', true],
    ['TLSv1.2', 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE', false],
  ])('knows a %s server’s refusal of a missing certificate (%s), after secureConnect: %s', async (version, code, afterHandshake) => {
    const receiver = await startReceiver(version);
    const { port } = new URL(receiver.url);

    const seen = await new Promise<{ error: NodeJS.ErrnoException; secured: boolean }>((resolve) => {
      let secured = false;
      const socket = tls.connect({ host: '127.0.0.1', port: Number(port), servername: 'localhost', ca: CA }, () => {
        secured = true;
        socket.write('POST /in HTTP/1.1\r\nhost: localhost\r\ncontent-length: 2\r\n\r\n{}');
      });
      socket.on('error', (error) => resolve({ error, secured }));
    });

    expect(seen.error.code).toBe(code);
    expect(seen.secured).toBe(afterHandshake);
    expect(isTlsRefusal(seen.error)).toBe(true);
    expect(receiver.received).toEqual([]);
  });

  it('is false for a reset or a certificate the client itself refused', () => {
    expect(isTlsRefusal(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))).toBe(false);
    expect(isTlsRefusal(Object.assign(new Error('self-signed'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }))).toBe(false);
    expect(isTlsRefusal(undefined)).toBe(false);
  });
});

describe('HttpWebhookSender: tls material that cannot be used', () => {
  const url = 'https://hooks.example.com/in';

  it.each<[string, ClientTls, string]>([
    ['a key that does not parse', { ...CLIENT, privateKey: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' }, 'tls.privateKey is no unencrypted PEM private key'],
    ['a key that is not the certificate’s', { ...CLIENT, privateKey: pem('other-client.key') }, 'tls.privateKey is not the key of tls.clientCertificate'],
    ['a certificate that does not parse', { ...CLIENT, clientCertificate: 'not a certificate' }, 'tls.clientCertificate is no PEM certificate'],
    ['a CA that does not parse', { ...CLIENT, ca: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' }, 'tls.ca holds a certificate Node cannot read'],
    ['a CA that is no PEM', { ...CLIENT, ca: 'junk' }, 'tls.ca holds no PEM certificate'],
  ])('refuses %s when the sender is made, naming the field, never the value', (_, material, message) => {
    let thrown: unknown;
    try {
      new HttpWebhookSender({ url, timeoutMs: 1000, tls: material });
    } catch (error) {
      thrown = error;
    }

    expect(thrown).toBeInstanceOf(ClientTlsError);
    expect((thrown as Error).message).toContain(message);
    expect((thrown as Error).message).not.toContain('AAAA');
    expect((thrown as Error).message).not.toContain('BEGIN');
  });

  it('refuses tls on an http URL', () => {
    expect(() => new HttpWebhookSender({ url: 'http://127.0.0.1/in', timeoutMs: 1000, tls: CLIENT, guard: new EndpointGuard(SANDBOX_GUARD_OPTIONS) })).toThrow('tls needs an https URL');
  });
});
