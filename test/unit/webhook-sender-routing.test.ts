/**
 * The sender each endpoint gets from the registry's routing (lib/routing.ts) during a secret
 * rotation (docs/contract.md §12): built with the previous secret (read from Secrets Manager when
 * given by ARN) and the end of its overlap while it lasts; built again without it once a read
 * after the end shows it over; the same sender while the endpoint is unchanged.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS } from '../../lib/config';
import type { DeploymentSettings, Endpoint, EndpointRecord } from '../../lib/endpoints/endpoint';
import type { Logger } from '../../lib/observability';
import { registryRouting } from '../../lib/routing';
import type { WebhookSender } from '../../lib/webhook/sender';

const NEW_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const OLD_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const OLD_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:handoff/acme-old-GhIjKl';
const T0 = Date.parse('2026-12-03T04:00:00Z');
const OVERLAP_END = T0 + 3_600_000;

const deployment: DeploymentSettings = {
  retryPolicy: DEFAULT_SETTINGS.retryPolicy,
  attemptTimeoutMs: DEFAULT_SETTINGS.attemptTimeoutMs,
  retentionDays: DEFAULT_SETTINGS.retentionDays,
  allowPrivateCidrs: [],
  allowHttp: false,
};

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
    const endpoint = (await routing.endpoints()).get('acme');
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
