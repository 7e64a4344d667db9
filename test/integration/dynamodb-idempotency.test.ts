/**
 * DynamoDbIdempotencyStore (api/dynamodb-idempotency.ts) with the real AWS SDK against dynalite, on
 * a ledger table: a key is claimed once, its answer kept without secrets for 24 h, a claim that never
 * finished freed after IDEMPOTENCY_CLAIM_MS, a failed request's claim released, an answer too large
 * to keep remembered as done, and the ledger's own reads never meeting the key's item.
 */
import { GetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbIdempotencyStore } from '../../api/dynamodb-idempotency';
import { IDEMPOTENCY_PARTITION_PREFIX } from '../../api/idempotency';
import { IDEMPOTENCY_CLAIM_MS, IDEMPOTENCY_TTL_MS, MAX_KEPT_ANSWER_BYTES, storedKey } from '../../api/idempotency';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { useDynalite, freshTableEachTest } from '../helpers/dynalite-fixture';

const T0 = Date.parse('2026-12-04T21:00:00Z');
const KEY = storedKey('arn:aws:iam::123456789012:user/ops', 'create-acme-1');
const FINGERPRINT = 'fp-create-acme';
const CREATED = { status: 201, body: { name: 'acme', url: 'https://acme.example/hook', secret: 'whsec_shown_once' } };

let client: DynamoDBClient;
let tableName: string;
let store: DynamoDbIdempotencyStore;

useDynalite((started) => {
  ({ client } = started);
});

freshTableEachTest(() => client, 'idempotency-test', (created) => {
  tableName = created;
  store = new DynamoDbIdempotencyStore({ client: DynamoDBDocumentClient.from(client), tableName });
});

async function rawItem(key: string) {
  const out = await client.send(
    new GetItemCommand({ TableName: tableName, Key: { eventId: { S: `${IDEMPOTENCY_PARTITION_PREFIX}${key}` }, endpoint: { S: '-' } }, ConsistentRead: true }),
  );
  return out.Item;
}

describe('DynamoDbIdempotencyStore on dynalite', () => {
  it('claims a new key with one item under its own partition, expiring when a claim that never finished is over', async () => {
    const claim = await store.claim(KEY, FINGERPRINT, T0);

    expect(claim).toEqual({ kind: 'claimed' });
    expect(await rawItem(KEY)).toEqual({
      eventId: { S: `api-idempotency#${KEY}` },
      endpoint: { S: '-' },
      f: { S: FINGERPRINT },
      x: { N: String(Math.ceil((T0 + IDEMPOTENCY_CLAIM_MS) / 1000)) },
    });
  });

  it('tells a repeat of the same request that it is still running, and a different request that the key is taken', async () => {
    await store.claim(KEY, FINGERPRINT, T0);

    const same = await store.claim(KEY, FINGERPRINT, T0 + 1_000);
    const other = await store.claim(KEY, 'fp-something-else', T0 + 1_000);

    expect(same).toEqual({ kind: 'in-progress' });
    expect(other).toEqual({ kind: 'mismatch' });
  });

  it('answers a repeat with the first answer, its secret replaced by secretShown, for 24 hours', async () => {
    await store.claim(KEY, FINGERPRINT, T0);
    await store.complete(KEY, FINGERPRINT, CREATED, T0 + 50);

    const repeat = await store.claim(KEY, FINGERPRINT, T0 + IDEMPOTENCY_TTL_MS - 1_000);

    expect(repeat).toEqual({ kind: 'answered', answer: { status: 201, body: { name: 'acme', url: 'https://acme.example/hook', secretShown: true } } });
    expect(JSON.stringify(await rawItem(KEY))).not.toContain('whsec_shown_once');
    expect((await rawItem(KEY))?.x).toEqual({ N: String(Math.ceil((T0 + 50 + IDEMPOTENCY_TTL_MS) / 1000)) });
  });

  it('claims the key again once its answer is over 24 hours old, though TTL has not deleted the item', async () => {
    await store.claim(KEY, FINGERPRINT, T0);
    await store.complete(KEY, FINGERPRINT, CREATED, T0);

    const later = await store.claim(KEY, 'fp-a-new-request', T0 + IDEMPOTENCY_TTL_MS + 1_000);

    expect(later).toEqual({ kind: 'claimed' });
    expect((await rawItem(KEY))?.f).toEqual({ S: 'fp-a-new-request' });
  });

  it('frees a claim whose request never finished once IDEMPOTENCY_CLAIM_MS is over', async () => {
    await store.claim(KEY, FINGERPRINT, T0);

    const retry = await store.claim(KEY, FINGERPRINT, T0 + IDEMPOTENCY_CLAIM_MS + 1_000);

    expect(retry).toEqual({ kind: 'claimed' });
  });

  it('forgets a released claim, so the repeat runs', async () => {
    await store.claim(KEY, FINGERPRINT, T0);

    await store.release(KEY);

    expect(await rawItem(KEY)).toBeUndefined();
    expect(await store.claim(KEY, FINGERPRINT, T0 + 1_000)).toEqual({ kind: 'claimed' });
  });

  it('never releases an answer it kept', async () => {
    await store.claim(KEY, FINGERPRINT, T0);
    await store.complete(KEY, FINGERPRINT, CREATED, T0);

    await store.release(KEY);

    expect(await store.claim(KEY, FINGERPRINT, T0 + 1_000)).toMatchObject({ kind: 'answered', answer: { status: 201 } });
  });

  it('keeps only the status of an answer too large for an item, so a repeat is told it was done', async () => {
    const huge = { status: 202, body: { accepted: [{ eventId: 'x'.repeat(MAX_KEPT_ANSWER_BYTES) }] } };
    await store.claim(KEY, FINGERPRINT, T0);

    await store.complete(KEY, FINGERPRINT, huge, T0);

    expect(await store.claim(KEY, FINGERPRINT, T0 + 1_000)).toEqual({ kind: 'unkept', status: 202 });
    expect((await rawItem(KEY))?.bd).toBeUndefined();
  });

  it('leaves the answer of a request that took over a lost claim as it is', async () => {
    await store.claim(KEY, FINGERPRINT, T0);
    const takeover = T0 + IDEMPOTENCY_CLAIM_MS + 1_000;
    await store.claim(KEY, FINGERPRINT, takeover);
    await store.complete(KEY, FINGERPRINT, { status: 201, body: { name: 'second' } }, takeover + 10);

    await store.complete(KEY, FINGERPRINT, { status: 201, body: { name: 'first' } }, takeover + 20);

    expect(await store.claim(KEY, FINGERPRINT, takeover + 30)).toEqual({ kind: 'answered', answer: { status: 201, body: { name: 'second' } } });
  });

  it('is never met by the ledger: no event has its partition, and neither listing shows it', async () => {
    await store.claim(KEY, FINGERPRINT, T0);
    await store.complete(KEY, FINGERPRINT, CREATED, T0);
    const ledger = new DynamoDbLedger({ client: DynamoDBDocumentClient.from(client), tableName, now: () => T0 });

    const dead = await ledger.listByState('dead');
    const pending = await ledger.countByState('pending');

    expect(dead.records).toEqual([]);
    expect(pending).toBe(0);
  });
});
