/**
 * An endpoint's `auth` and `tls` as the consumer resolves them (lib/routing.ts, docs/contract.md
 * §18): each secret value read by ARN or decrypted with the same caches as a header's, once per
 * container however many batches route to it (an ARN's again once its copy is due), never per
 * delivery; a certificate and key kept together in one secret taken apart; a key read that is not
 * the certificate's, a secret that cannot be read, a ciphertext moved from another path, a token
 * URL the deployment's guard refuses or a client certificate on an http URL holds the endpoint
 * (unresolved), logged by path and ARN, never by value. The sender gets `Endpoint.auth` and `Endpoint.tls`.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseEndpointFields, type Endpoint, type EndpointRecord } from '../../lib/endpoints/endpoint';
import { SECRET_REREAD_AFTER_MS, secretsManagerValue } from '../../lib/endpoints/secret';
import { LocalSecretCipher } from '../../lib/endpoints/secret-cipher';
import { cipherPlace } from '../../lib/endpoints/secret-values';
import { createLogger } from '../../lib/observability';
import { registryRouting } from '../../lib/routing';
import type { ShipmentEvent } from '../../lib/event';
import type { WebhookSender } from '../../lib/webhook/sender';
import { DEFAULT_DEPLOYMENT } from '../helpers/deployment';
import { TEST_SECRET } from '../helpers/secrets';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url), 'utf8');
const CERT = fixture('client.pem');
const KEY = fixture('client.key.pem');
const OTHER_KEY = fixture('other-client.key.pem');
const KEY_MATERIAL = KEY.split('\n')[1]!;
const OTHER_MATERIAL = OTHER_KEY.split('\n')[1]!;
const T0 = Date.parse('2026-12-05T12:00:00Z');
const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:erp-client-AbCdEf';
const PAIR_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:erp-mtls-AbCdEf';
const EVENT: ShipmentEvent = { id: 'evt_1', shipmentId: 'shp_1', status: 'delivered', occurredAt: '2026-12-05T12:00:00Z' };
const AUTH = { type: 'oauth2-client-credentials', tokenUrl: 'https://idp.example/token', clientId: 'handoff-erp', scope: 'shipments' } as const;

function record(name: string, fields: Record<string, unknown>): EndpointRecord {
  return { fields: parseEndpointFields({ name, url: `https://${name}.example/hook`, eventTypes: ['*'], secret: TEST_SECRET, ...fields }), state: 'enabled', createdAt: T0, updatedAt: T0 };
}

function setup(records: EndpointRecord[], options: { cipher?: LocalSecretCipher; values?: Record<string, string>; allowHttp?: boolean } = {}) {
  let nowMs = T0;
  const lines: string[] = [];
  const reads: string[] = [];
  const created: Endpoint[] = [];
  const routing = registryRouting({
    records: () => Promise.resolve(records),
    deployment: { ...DEFAULT_DEPLOYMENT, allowHttp: options.allowHttp ?? false },
    // Secrets Manager's answers, as the consumer's reader takes them (trimmed; a refusal named).
    readSecretValue: secretsManagerValue(({ SecretId: arn }) => {
      reads.push(arn);
      const value = options.values?.[arn];
      return value === undefined ? Promise.reject(Object.assign(new Error('denied'), { name: 'AccessDeniedException' })) : Promise.resolve({ SecretString: value });
    }),
    ciphers: [options.cipher ?? new LocalSecretCipher(LocalSecretCipher.generateKey())],
    createSender: (endpoint) => {
      created.push(endpoint);
      return {} as WebhookSender;
    },
    logger: createLogger({ service: 'test', write: (line) => void lines.push(String(line)) }),
    now: () => nowMs,
  });
  return { routing, lines, reads, created, advance: (ms: number) => (nowMs += ms) };
}

describe('Function: registryRouting, an endpoint with auth and tls', () => {
  it('resolves the client secret by ARN and the key from its ciphertext, each read once however many batches route to it', async () => {
    const cipher = new LocalSecretCipher(LocalSecretCipher.generateKey());
    const key = await cipher.encrypt(KEY, 'erp', cipherPlace('tls.privateKey'));
    const erp = record('erp', { auth: { ...AUTH, clientSecret: { secretArn: ARN } }, tls: { clientCertificate: CERT, privateKey: { secret: key } } });
    const { routing, created, reads, advance } = setup([erp], { cipher, values: { [ARN]: 'cl13nt-s3cret' } });

    for (let batch = 0; batch < 5; batch += 1) {
      const routes = await routing.routes({ events: [EVENT], endpoints: [] });
      await routing.sender(routes.endpoints.get('erp')!);
    }

    expect(created).toHaveLength(1);
    expect(created[0]!.auth).toEqual({ tokenUrl: AUTH.tokenUrl, clientId: AUTH.clientId, clientSecret: 'cl13nt-s3cret', scope: 'shipments' });
    expect(created[0]!.tls).toEqual({ clientCertificate: CERT, privateKey: KEY.trim() });
    expect(reads).toEqual([ARN]);
    advance(SECRET_REREAD_AFTER_MS);
    await routing.routes({ events: [EVENT], endpoints: [] });
    expect(reads).toEqual([ARN, ARN]);
  });

  it('takes a certificate and its key kept together in one secret apart, reading it once', async () => {
    const erp = record('erp', { tls: { clientCertificate: { secretArn: PAIR_ARN }, privateKey: { secretArn: PAIR_ARN } } });
    const { routing, reads } = setup([erp], { values: { [PAIR_ARN]: `${KEY}\n${CERT}` } });

    const routes = await routing.routes({ events: [EVENT], endpoints: [] });

    expect(routes.endpoints.get('erp')!.tls).toEqual({ clientCertificate: CERT.trim(), privateKey: KEY.trim() });
    expect(reads).toEqual([PAIR_ARN]);
  });

  it('gives an endpoint without them neither', async () => {
    const { routing } = setup([record('plain', {})]);

    const endpoint = (await routing.routes({ events: [EVENT], endpoints: [] })).endpoints.get('plain')!;

    expect(endpoint.auth).toBeUndefined();
    expect(endpoint.tls).toBeUndefined();
  });

  it.each([
    ["a key read that is not the certificate's", { tls: { clientCertificate: CERT, privateKey: { secretArn: ARN } } }, { [ARN]: OTHER_KEY }, /tls\.privateKey is not the key of tls\.clientCertificate/],
    ['a certificate secret that holds none', { tls: { clientCertificate: { secretArn: ARN }, privateKey: { secretArn: PAIR_ARN } } }, { [ARN]: 'no pem here', [PAIR_ARN]: KEY }, /tls\.clientCertificate names a secret that holds no PEM certificate/],
    ['a client secret Secrets Manager refuses', { auth: { ...AUTH, clientSecret: { secretArn: ARN } } }, {}, /could not read the secret value arn:aws:secretsmanager:eu-west-1:123456789012:secret:erp-client-AbCdEf: AccessDeniedException/],
    ['a token URL the guard refuses', { auth: { ...AUTH, tokenUrl: 'https://10.0.0.5/token', clientSecret: { secretArn: ARN } } }, { [ARN]: 'x' }, /auth\.tokenUrl is refused/],
  ])('holds an endpoint with %s: unresolved, logged by path, never a value', async (_what, fields, values, logged) => {
    const { routing, lines } = setup([record('erp', fields), record('plain', {})], { values });

    const routes = await routing.routes({ events: [EVENT], endpoints: [] });

    expect([...routes.endpoints.keys()]).toEqual(['plain']);
    expect([...routes.unresolved.keys()]).toEqual(['erp']);
    const log = lines.join('\n');
    expect(log).toContain('endpoint unresolved');
    expect(log).toMatch(logged);
    expect(log).not.toContain(OTHER_MATERIAL);
    expect(log).not.toContain(KEY_MATERIAL);
  });

  it('holds one with tls on an http URL, where the deployment allows http: named by tls, no sender made for it', async () => {
    const erp = record('erp', { url: 'http://erp.example/hook', tls: { clientCertificate: CERT, privateKey: { secretArn: ARN } } });
    const { routing, lines, created } = setup([erp, record('plain', { url: 'http://plain.example/hook' })], { values: { [ARN]: KEY }, allowHttp: true });

    const routes = await routing.routes({ events: [EVENT], endpoints: [] });
    await routing.sender(routes.endpoints.get('plain')!);

    expect([...routes.endpoints.keys()]).toEqual(['plain']);
    expect([...routes.unresolved.keys()]).toEqual(['erp']);
    expect(created.map((endpoint) => endpoint.name)).toEqual(['plain']);
    expect(lines.join('\n')).toMatch(/tls needs an https url: a client certificate is presented in a TLS handshake/);
    expect(lines.join('\n')).not.toContain(KEY_MATERIAL);
  });

  it('holds one whose client secret is a ciphertext made for another path (moved by hand)', async () => {
    const cipher = new LocalSecretCipher(LocalSecretCipher.generateKey());
    const moved = await cipher.encrypt('Bearer t0k3n', 'erp', 'Authorization');
    const { routing } = setup([record('erp', { auth: { ...AUTH, clientSecret: { secret: moved } } })], { cipher });

    const routes = await routing.routes({ events: [EVENT], endpoints: [] });

    expect([...routes.unresolved.keys()]).toEqual(['erp']);
  });
});
