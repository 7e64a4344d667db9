/**
 * An endpoint's headers as the consumer resolves them (lib/routing.ts, docs/contract.md §18): text
 * as it is, a secret one read by ARN or decrypted, each once per container however many batches
 * route to it (an ARN's again once its copy is due, as a signing secret's), never per delivery; one
 * that cannot be read holds its endpoint (unresolved), logged by ARN, never by value. The sender gets
 * the resolved values; an endpoint without headers gets none.
 */
import { describe, expect, it } from 'vitest';
import { parseEndpointFields, type Endpoint, type EndpointRecord } from '../../lib/endpoints/endpoint';
import { SECRET_REREAD_AFTER_MS, secretsManagerValue } from '../../lib/endpoints/secret';
import { LocalSecretCipher } from '../../lib/endpoints/secret-cipher';
import { createLogger } from '../../lib/observability';
import { registryRouting } from '../../lib/routing';
import type { ShipmentEvent } from '../../lib/event';
import type { WebhookSender } from '../../lib/webhook/sender';
import { DEFAULT_DEPLOYMENT } from '../helpers/deployment';
import { TEST_SECRET } from '../helpers/secrets';

const T0 = Date.parse('2026-12-04T12:00:00Z');
const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:erp-token-AbCdEf';
const EVENT: ShipmentEvent = { id: 'evt_1', shipmentId: 'shp_1', status: 'delivered', occurredAt: '2026-12-04T12:00:00Z' };

function record(name: string, headers: Record<string, unknown> | undefined): EndpointRecord {
  return {
    fields: parseEndpointFields({ name, url: `https://${name}.example/hook`, eventTypes: ['*'], secret: TEST_SECRET, ...(headers !== undefined ? { headers } : {}) }),
    state: 'enabled',
    createdAt: T0,
    updatedAt: T0,
  };
}

/** Routing over `records` with the given cipher (a test encrypts with it first) and header secret reader. */
function setup(records: EndpointRecord[], options: { cipher?: LocalSecretCipher; readSecretValue?: (arn: string) => Promise<string> } = {}) {
  let nowMs = T0;
  const lines: string[] = [];
  const created: Endpoint[] = [];
  const routing = registryRouting({
    records: () => Promise.resolve(records),
    deployment: DEFAULT_DEPLOYMENT,
    ...(options.readSecretValue !== undefined ? { readSecretValue: options.readSecretValue } : {}),
    ciphers: [options.cipher ?? new LocalSecretCipher(LocalSecretCipher.generateKey())],
    createSender: (endpoint) => {
      created.push(endpoint);
      return {} as WebhookSender;
    },
    logger: createLogger({ service: 'test', write: (line) => void lines.push(String(line)) }),
    now: () => nowMs,
  });
  return { routing, lines, created, advance: (ms: number) => (nowMs += ms) };
}

describe('Function: registryRouting, an endpoint with headers', () => {
  it('resolves text, an ARN and a ciphertext, reading each secret once however many batches route to it', async () => {
    const reads: string[] = [];
    const cipher = new LocalSecretCipher(LocalSecretCipher.generateKey());
    const stored = await cipher.encrypt('k3y-value', 'erp', 'X-Api-Key');
    const erp = record('erp', { 'X-Tenant': 'acme', Authorization: { secretArn: ARN }, 'X-Api-Key': { secret: stored } });
    const { routing, created, advance } = setup([erp], {
      cipher,
      readSecretValue: (arn) => {
        reads.push(arn);
        return Promise.resolve('Bearer t0k3n');
      },
    });

    for (let batch = 0; batch < 5; batch += 1) {
      const routes = await routing.routes({ events: [EVENT], endpoints: [] });
      await routing.sender(routes.endpoints.get('erp')!);
    }

    expect(created).toHaveLength(1);
    expect(created[0]!.headers).toEqual({ 'X-Tenant': 'acme', Authorization: 'Bearer t0k3n', 'X-Api-Key': 'k3y-value' });
    expect(reads).toEqual([ARN]);
    // Read again once its copy is due, as a signing secret by ARN is.
    advance(SECRET_REREAD_AFTER_MS);
    await routing.routes({ events: [EVENT], endpoints: [] });
    expect(reads).toEqual([ARN, ARN]);
  });

  it('gives an endpoint without headers none', async () => {
    const { routing } = setup([record('plain', undefined)]);

    const routes = await routing.routes({ events: [EVENT], endpoints: [] });

    expect(routes.endpoints.get('plain')!.headers).toBeUndefined();
  });

  it.each([
    ['Secrets Manager refuses the read', () => Promise.reject(Object.assign(new Error('denied'), { name: 'AccessDeniedException' })), /could not read the secret value .*: AccessDeniedException/],
    ['its value is no header value', () => Promise.resolve({ SecretString: 'Bearer t0k3n\nX-Injected: 1' }), /is not a header value/],
  ])('holds an endpoint whose secret header cannot be used (%s): unresolved, logged by ARN, never a value', async (_why, get, logged) => {
    const { routing, lines } = setup([record('erp', { Authorization: { secretArn: ARN } }), record('plain', undefined)], {
      readSecretValue: secretsManagerValue(get),
    });

    const routes = await routing.routes({ events: [EVENT], endpoints: [] });

    expect([...routes.endpoints.keys()]).toEqual(['plain']);
    expect([...routes.unresolved.keys()]).toEqual(['erp']);
    const log = lines.join('\n');
    expect(log).toContain('endpoint unresolved');
    expect(log).toContain(ARN);
    expect(log).toMatch(logged);
    expect(log).not.toContain('t0k3n');
  });

  it('reads a header secret from Secrets Manager trimmed, as the value to send', async () => {
    const read = secretsManagerValue(() => Promise.resolve({ SecretString: '  Bearer t0k3n\n' }));

    await expect(read(ARN)).resolves.toBe('Bearer t0k3n');
  });

  it('holds one whose header was encrypted for another header (a ciphertext moved by hand)', async () => {
    const cipher = new LocalSecretCipher(LocalSecretCipher.generateKey());
    const moved = await cipher.encrypt('whsec_not-for-a-header', 'erp');
    const { routing } = setup([record('erp', { 'X-Leak': { secret: moved } })], { cipher });

    const routes = await routing.routes({ events: [EVENT], endpoints: [] });

    expect([...routes.unresolved.keys()]).toEqual(['erp']);
  });
});
