/**
 * The secure contexts of an endpoint's client certificate and CA (lib/webhook/client-tls.ts,
 * docs/contract.md §18 `tls`), made once per container for the same material: the consumer's
 * resolution checks them (lib/endpoints/resolved-locks.ts) and the sender and its token agent then
 * take the very context it made, rather than parsing every public root again (a context with a CA
 * costs about 25 ms of CPU). Kept by what they are made of, not by the object that carries it; the
 * one used longest ago dropped past the bound; one that cannot be made never kept. A kept context
 * is a working one: two connections made with it present the certificate and trust the CA.
 *
 * tls.createSecureContext is watched (called through), to count the contexts made.
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { resolvedTls } from '../../lib/endpoints/resolved-locks';
import { ClientTlsError, MAX_KEPT_CONTEXTS, secureContextFor, tokenContextFor } from '../../lib/webhook/client-tls';
import type { ClientTls } from '../../lib/webhook/sender';
import { thrownBy } from '../helpers/thrown';

const pem = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}.pem`, import.meta.url), 'utf8');
const CA = pem('ca');
const CLIENT: ClientTls = { clientCertificate: pem('client'), privateKey: pem('client.key'), ca: CA };
const OTHER: ClientTls = { clientCertificate: pem('other-client'), privateKey: pem('other-client.key'), ca: CA };
/** The same material in another object, as each resolution makes one. */
const copy = (clientTls: ClientTls): ClientTls => JSON.parse(JSON.stringify(clientTls)) as ClientTls;
/** Material of its own that parses as the client's: the certificate's text differs by its trailing lines. */
const variant = (n: number): ClientTls => ({ clientCertificate: `${CLIENT.clientCertificate}${'\n'.repeat(n + 1)}`, privateKey: CLIENT.privateKey });

afterEach(() => {
  vi.restoreAllMocks();
});

describe('Function: secureContextFor and tokenContextFor, one context per material', () => {
  it('answers the second call for the same material, in another object, with the same context', () => {
    const first = secureContextFor(copy(CLIENT));
    const made = vi.spyOn(tls, 'createSecureContext');

    expect(secureContextFor(copy(CLIENT))).toBe(first);
    expect(tokenContextFor(copy(CLIENT))).toBe(tokenContextFor(copy(CLIENT)));
    expect(made).toHaveBeenCalledTimes(1);
  });

  it('makes another for other material: another certificate and key, the same without the CA, the token fetch', () => {
    const client = secureContextFor(CLIENT);
    const { ca: _ca, ...withoutCa } = CLIENT;

    expect(secureContextFor(OTHER)).not.toBe(client);
    expect(secureContextFor(withoutCa)).not.toBe(client);
    expect(tokenContextFor(CLIENT)).not.toBe(client);
    expect(tokenContextFor(withoutCa)).toBeUndefined();
  });

  it("gives the sender and its token agent what the resolution's check made, making none of their own", () => {
    const fields = { name: 'erp', tls: { clientCertificate: CLIENT.clientCertificate, privateKey: { secret: 'read below' }, ca: CA } } as const;
    const resolved = resolvedTls(fields, new Map([['tls.privateKey', CLIENT.privateKey]]))!;
    tokenContextFor(resolved);
    const made = vi.spyOn(tls, 'createSecureContext');

    const again = resolvedTls(fields, new Map([['tls.privateKey', CLIENT.privateKey]]))!;
    secureContextFor(again);
    tokenContextFor(again);

    expect(made).not.toHaveBeenCalled();
  });

  it('keeps as many as its bound, then drops the one used longest ago', () => {
    const first = secureContextFor(variant(0));
    const second = secureContextFor(variant(1));
    for (let n = 2; n < MAX_KEPT_CONTEXTS; n += 1) secureContextFor(variant(n));
    expect(secureContextFor(variant(0))).toBe(first);

    secureContextFor(variant(MAX_KEPT_CONTEXTS));

    expect(secureContextFor(variant(0))).toBe(first);
    expect(secureContextFor(variant(1))).not.toBe(second);
  });

  it('keeps none it could not make: the same material is refused again, naming the field', () => {
    const mismatched: ClientTls = { clientCertificate: CLIENT.clientCertificate, privateKey: OTHER.privateKey };

    const first = thrownBy(() => secureContextFor(mismatched), ClientTlsError);
    const second = thrownBy(() => secureContextFor(copy(mismatched)), ClientTlsError);

    expect(first.message).toBe('tls.privateKey is not the key of tls.clientCertificate (the value is not shown)');
    expect(second.message).toBe(first.message);
  });
});

describe('A kept context', () => {
  let server: https.Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    server = undefined;
  });

  it("completes a handshake each time it is used: the certificate presented, the receiver's CA trusted", async () => {
    const subjects: string[] = [];
    server = https.createServer({ cert: pem('server'), key: pem('server.key'), ca: CA, requestCert: true, rejectUnauthorized: true }, (req, res) => {
      subjects.push(String((req.socket as tls.TLSSocket).getPeerCertificate().subject.CN));
      res.end('ok');
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const get = (secureContext: tls.SecureContext) =>
      new Promise<number>((resolve, reject) => {
        // An agent of its own each time: a new connection, so a new handshake with the context.
        const agent = new https.Agent({ secureContext, keepAlive: false });
        const req = https.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
          res.resume();
          res.on('end', () => (agent.destroy(), resolve(res.statusCode!)));
        });
        req.on('error', reject);
      });

    const statuses = [await get(secureContextFor(copy(CLIENT))!), await get(secureContextFor(copy(CLIENT))!)];

    expect(statuses).toEqual([200, 200]);
    expect(subjects).toHaveLength(2);
    expect(subjects[0]).toBe(subjects[1]);
  });
});
