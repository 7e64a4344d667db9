/**
 * The soak's receivers behind locks (docs/contract.md §18): with three endpoints, `warehouse` takes
 * only requests that carry a token from the soak's OAuth2 token server, and `tracking` is an HTTPS
 * receiver that takes only a client certificate from the test CA (test/fixtures/tls). The token
 * server counts its fetches, so the run can hold them to one per worker process per token lifetime
 * however many deliveries wait, and the receiver counts requests whose token it did not issue or
 * that expired.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { listenOnLoopback } from '../loopback';

/** Which lock an endpoint's receiver is behind. */
export type SoakLock = 'oauth2' | 'mtls';

/**
 * A token's lifetime: the consumer keeps a token until 60 s before it expires, so each worker
 * fetches again every 30 s of the run, several times in a soak of minutes.
 */
export const TOKEN_LIFETIME_SECONDS = 90;
/** How often one sender fetches: the lifetime less the 60 s the consumer keeps in hand. */
export const TOKEN_REFRESH_MS = (TOKEN_LIFETIME_SECONDS - 60) * 1000;

export interface TokenServer {
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Token requests answered with a token. */
  fetches(): number;
  /** Token requests refused (wrong client credentials or grant). */
  refusals(): number;
  /** Whether an `Authorization` header carries a token this server issued that has not expired. */
  accepts(authorization: string | undefined): boolean;
  close(): Promise<void>;
}

/** An OAuth2 client-credentials token server on loopback: client authentication by HTTP Basic (RFC 6749 §2.3.1). */
export async function startTokenServer(): Promise<TokenServer> {
  const clientId = 'soak-client';
  const clientSecret = randomBytes(24).toString('base64url');
  const expected = Buffer.from(`Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`);
  const issued = new Map<string, number>();
  let fetches = 0;
  let refusals = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const given = Buffer.from(req.headers.authorization ?? '');
      const grant = new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('grant_type');
      if (req.method !== 'POST' || given.length !== expected.length || !timingSafeEqual(given, expected) || grant !== 'client_credentials') {
        refusals += 1;
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}');
        return;
      }
      fetches += 1;
      const token = randomBytes(24).toString('base64url');
      issued.set(token, Date.now() + TOKEN_LIFETIME_SECONDS * 1000);
      res
        .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        .end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: TOKEN_LIFETIME_SECONDS }));
    });
  });
  const listening = await listenOnLoopback(server);
  return {
    tokenUrl: listening.url.replace(/\/webhook$/, '/token'),
    clientId,
    clientSecret,
    fetches: () => fetches,
    refusals: () => refusals,
    accepts(authorization) {
      const token = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
      const expiresAt = token === undefined ? undefined : issued.get(token);
      return expiresAt !== undefined && Date.now() < expiresAt;
    },
    close: () => listening.close(),
  };
}

/** The test CA's files (test/fixtures/tls/make.sh): the server's for 127.0.0.1, the client's, the CA. */
export interface TlsFixtures {
  readonly ca: string;
  readonly serverCertificate: string;
  readonly serverKey: string;
  readonly clientCertificate: string;
  readonly clientKey: string;
}

export function tlsFixtures(): TlsFixtures {
  const read = (name: string) => readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'tls', name), 'utf8');
  return {
    ca: read('ca.pem'),
    serverCertificate: read('server.pem'),
    serverKey: read('server.key.pem'),
    clientCertificate: read('client.pem'),
    clientKey: read('client.key.pem'),
  };
}

/**
 * The endpoint's fields for its lock, as the sandbox's endpoints file takes them: the client secret
 * and the private key inline (`{secret}`, which the sandbox stores encrypted).
 */
export function lockFields(lock: SoakLock, locks: { tokens: TokenServer; tls: TlsFixtures }): Record<string, unknown> {
  if (lock === 'oauth2') {
    const { tokenUrl, clientId, clientSecret } = locks.tokens;
    return { auth: { type: 'oauth2-client-credentials', tokenUrl, clientId, clientSecret: { secret: clientSecret } } };
  }
  const { clientCertificate, clientKey, ca } = locks.tls;
  return { tls: { clientCertificate, privateKey: { secret: clientKey }, ca } };
}
