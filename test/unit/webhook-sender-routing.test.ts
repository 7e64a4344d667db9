/**
 * The sender each endpoint gets from the registry's routing (lib/routing.ts) during a secret
 * rotation (docs/contract.md §12): built with the previous secret (read from Secrets Manager when
 * given by ARN) and the end of its overlap while it lasts; built again without it once a read
 * after the end shows it over; the same sender while the endpoint is unchanged.
 *
 * And an endpoint that cannot be resolved: reported `unresolved` with what its item subscribes to
 * (not left out, which would make its deliveries unrouted), tried again as soon as its secret may be
 * read again (not at the registry's next read); an item the registry could not decode travels with
 * the read into `unresolved` too. A secret rotated in Secrets Manager signs with its previous
 * version until the overlap ends.
 */
import { describe, expect, it } from 'vitest';
import type { DeploymentSettings, Endpoint, EndpointRecord } from '../../lib/endpoints/endpoint';
import { withUnreadable } from '../../lib/endpoints/registry';
import { EndpointRegistryError } from '../../lib/errors';
import { SECRET_RETRY_AFTER_MS, SecretCache, type SecretVersions } from '../../lib/endpoints/secret';
import type { Logger } from '../../lib/observability';
import { registryRouting } from '../../lib/routing';
import type { WebhookSender } from '../../lib/webhook/sender';
import { DEFAULT_DEPLOYMENT } from '../helpers/deployment';

const NEW_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const OLD_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const OLD_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:handoff/acme-old-GhIjKl';
const CRM_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:handoff/crm-AbCdEf';
const T0 = Date.parse('2026-12-03T04:00:00Z');
const OVERLAP_END = T0 + 3_600_000;

const deployment: DeploymentSettings = DEFAULT_DEPLOYMENT;

/** A logger keeping its error lines. */
function recordingLogger(lines: string[]): Logger {
  const logger: Logger = {
    info: () => {},
    warn: () => {},
    error: (message, fields) => {
      lines.push(`${message} ${JSON.stringify(fields)}`);
    },
    child: () => logger,
  };
  return logger;
}

function rotated(previousSecret: string): EndpointRecord {
  return {
    fields: { name: 'acme', url: 'https://hooks.acme.example/in', eventTypes: ['*'], secret: NEW_SECRET, previousSecret, previousSecretUntil: OVERLAP_END },
    state: 'enabled',
    createdAt: T0,
    updatedAt: T0,
  };
}

/** Routing over a registry whose reads the test hands out, on a clock the test sets. */
function harness(previousSecret: string, options: { unreadable?: boolean } = {}) {
  let records: readonly EndpointRecord[] = [rotated(previousSecret)];
  let nowMs = T0;
  const built: Endpoint[] = [];
  const reads: string[] = [];
  const logged: string[] = [];
  const routing = registryRouting({
    records: () => Promise.resolve(records),
    deployment,
    readSecret: (arn) => {
      reads.push(arn);
      return options.unreadable ? Promise.reject(new Error('AccessDeniedException')) : Promise.resolve(OLD_SECRET);
    },
    createSender: (endpoint) => {
      built.push(endpoint);
      return { send: () => Promise.reject(new Error('not sent in this test')) } as WebhookSender;
    },
    logger: recordingLogger(logged),
    now: () => nowMs,
  });
  const senderNow = async () => {
    const endpoint = (await routing.routes()).endpoints.get('acme');
    if (endpoint === undefined) throw new Error(`acme not routed: ${logged.join('; ')}`);
    return routing.sender(endpoint);
  };
  return {
    built,
    reads,
    logged,
    senderNow,
    at: (ms: number) => (nowMs = ms),
    /** The next registry read: the same items, a new copy. */
    reread: () => (records = [rotated(previousSecret)]),
  };
}

describe("Function: registryRouting (a rotation's senders)", () => {
  it('builds the sender with the previous secret and its end while the overlap lasts', async () => {
    const h = harness(OLD_SECRET);

    await h.senderNow();

    expect(h.built).toHaveLength(1);
    expect(h.built[0]).toMatchObject({ secret: NEW_SECRET, previousSecret: OLD_SECRET, previousSecretUntil: OVERLAP_END });
  });

  it('reads a previous secret given by ARN, once, and not after the overlap', async () => {
    const h = harness(OLD_ARN);

    await h.senderNow();
    h.reread();
    await h.senderNow();
    h.at(OVERLAP_END);
    h.reread();
    await h.senderNow();

    expect(h.reads).toEqual([OLD_ARN]);
    expect(h.logged).toEqual([]);
    expect(h.built[0]).toMatchObject({ previousSecret: OLD_SECRET, previousSecretUntil: OVERLAP_END });
    expect(h.built.at(-1)).toMatchObject({ secret: NEW_SECRET, previousSecret: undefined, previousSecretUntil: undefined });
  });

  it('keeps one sender while the endpoint is unchanged, past the end until the next read (the sender decides per request), then builds one without it', async () => {
    const h = harness(OLD_SECRET);

    const first = await h.senderNow();
    h.reread();
    const sameVersion = await h.senderNow();
    h.at(OVERLAP_END + 1);
    const beforeNextRead = await h.senderNow();
    h.reread();
    const afterNextRead = await h.senderNow();

    expect(sameVersion).toBe(first);
    expect(beforeNextRead).toBe(first);
    expect(afterNextRead).not.toBe(first);
    expect(h.built.map((e) => e.previousSecret)).toEqual([OLD_SECRET, undefined]);
  });

  it('routes the endpoint, signing with the new secret only, when the previous one cannot be read, and says so', async () => {
    const h = harness(OLD_ARN, { unreadable: true });

    await h.senderNow();

    expect(h.built).toHaveLength(1);
    expect(h.built[0]).toMatchObject({ secret: NEW_SECRET, previousSecret: undefined, previousSecretUntil: undefined });
    expect(h.logged).toEqual([expect.stringMatching(/^previous secret unreadable: signing with the new one only \{"endpoint":"acme",.*AccessDeniedException/)]);
  });
});

const record = (name: string, secret?: string): EndpointRecord => ({
  fields: { name, url: `https://${name}.example/in`, eventTypes: ['shipment.delivered'], match: { 'data.carrier': ['acme'] }, ...(secret ? { secret } : {}) },
  state: 'enabled',
  createdAt: T0,
  updatedAt: T0,
});

/** Routing over one registry read the test holds, reading secrets through a script of answers. */
function unresolvedHarness(records: EndpointRecord[], answers: (SecretVersions | Error)[]) {
  let nowMs = T0;
  const logged: string[] = [];
  const logger = recordingLogger(logged);
  let reads = 0;
  const secrets = new SecretCache<SecretVersions>(
    async () => {
      reads += 1;
      const answer = answers.shift() ?? new Error('no more answers');
      if (answer instanceof Error) throw answer;
      return answer;
    },
    { now: () => nowMs },
  );
  const routing = registryRouting({
    records: () => Promise.resolve(records),
    deployment,
    secrets,
    createSender: () => ({ send: () => Promise.reject(new Error('not sent')) }) as WebhookSender,
    logger,
    now: () => nowMs,
  });
  return { routing, logged, reads: () => reads, at: (ms: number) => (nowMs = ms) };
}

describe('Function: registryRouting (endpoints that cannot be resolved)', () => {
  it('reports an endpoint whose secret cannot be read as unresolved, with its subscription, logged without the secret', async () => {
    const denied = Object.assign(new Error('Access to KMS is not allowed'), { name: 'AccessDeniedException' });
    const h = unresolvedHarness([record('billing', NEW_SECRET), record('crm', CRM_ARN)], [denied]);

    const routes = await h.routing.routes();

    expect([...routes.endpoints.keys()]).toEqual(['billing']);
    expect([...routes.unresolved.values()]).toEqual([{ name: 'crm', subscription: { eventTypes: ['shipment.delivered'], match: { 'data.carrier': ['acme'] } } }]);
    expect(h.logged).toEqual([expect.stringMatching(/^endpoint unresolved \{"endpoint":"crm","error":"AccessDeniedException".*Access to KMS is not allowed/)]);
    expect(h.logged.join('')).not.toContain(NEW_SECRET.slice(6));
  });

  it('tries the secret again 5 s after the failed read, within the same read of the registry', async () => {
    const throttled = Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
    const h = unresolvedHarness([record('crm', CRM_ARN)], [throttled, { current: NEW_SECRET }]);

    const first = await h.routing.routes();
    h.at(T0 + SECRET_RETRY_AFTER_MS - 1);
    const before = await h.routing.routes();
    h.at(T0 + SECRET_RETRY_AFTER_MS);
    const after = await h.routing.routes();

    expect([first.unresolved.size, before.unresolved.size, after.unresolved.size]).toEqual([1, 1, 0]);
    expect(after.endpoints.get('crm')).toMatchObject({ secret: NEW_SECRET });
    expect(h.reads()).toBe(2);
  });

  it('resolves nothing again while every copy is fresh: the same routes for every batch', async () => {
    const h = unresolvedHarness([record('crm', CRM_ARN)], [{ current: NEW_SECRET }]);

    const first = await h.routing.routes();
    h.at(T0 + 60_000);
    const second = await h.routing.routes();

    expect(second).toBe(first);
    expect(h.reads()).toBe(1);
  });

  it('reports the items the read could not decode, with their subscription when it can be read', async () => {
    const readable = new EndpointRegistryError('registry-item-invalid', 'endpoint registry t: the item of endpoint "crm" cannot be used: state must be one of enabled, disabled', {
      endpoint: 'crm',
      subscription: { eventTypes: ['*'], match: {} },
    });
    const opaque = new EndpointRegistryError('registry-item-invalid', 'endpoint registry t: the item of endpoint "odd" cannot be used: fields must be a JSON object', { endpoint: 'odd' });
    const h = unresolvedHarness(withUnreadable([record('billing', NEW_SECRET)], [readable, opaque]), []);

    const routes = await h.routing.routes();

    expect([...routes.endpoints.keys()]).toEqual(['billing']);
    expect([...routes.unresolved.values()]).toEqual([
      { name: 'crm', subscription: { eventTypes: ['*'], match: {} } },
      { name: 'odd', subscription: undefined },
    ]);
    expect(h.logged.map((line) => line.split(' {')[0])).toEqual(['endpoint unresolved', 'endpoint unresolved']);
  });

  it('signs with a secret\'s previous version from Secrets Manager until its overlap ends', async () => {
    const h = unresolvedHarness([record('crm', CRM_ARN)], [{ current: NEW_SECRET, previous: { secret: OLD_SECRET, untilMs: T0 + 3_600_000 } }]);

    const endpoint = (await h.routing.routes()).endpoints.get('crm');

    expect(endpoint).toMatchObject({ secret: NEW_SECRET, previousSecret: OLD_SECRET, previousSecretUntil: T0 + 3_600_000 });
  });
});
