/**
 * The traceparent a traced claim leaves on its row (docs/contract.md §19), as DynamoDB stores it
 * (dynalite on loopback): `tp`, written by the claim's own UpdateItem and never rewritten, the row
 * of a claim with tracing off carrying not one byte more, and a traced row of a 500-byte event
 * still within one write unit through the default policy.
 */
import { GetItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { WIRE_NAMES } from '../../lib/ledger/dynamodb-schema';
import { itemSizeBytes } from '../../lib/ledger/item-size';
import { DEFAULT_ENDPOINT, type AttemptNext, type ClaimedRecord, type ClaimInput } from '../../lib/ledger/ledger';
import type { AttemptOutcome } from '../../lib/outcome';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import type { CommandCounter } from '../helpers/dynalite';
import { freshTableEachTest, useDynalite } from '../helpers/dynalite-fixture';
import { shipmentEvent, T0 } from '../helpers/ledger-contract';

const FIRST = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const OTHERS = ['00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', '00-0af7651916cd43dd8448eb211c80319c-53995c3f42cd8ad8-01'];

let client: DynamoDBClient;
let counter: CommandCounter;

useDynalite((started) => {
  ({ client, counter } = started);
});

describe('DynamoDbLedger: a traced claim keeps its traceparent', () => {
  let tableName: string;
  let ledger: DynamoDbLedger;

  freshTableEachTest(() => client, 'ledger-trace', (created) => {
    tableName = created;
    ledger = new DynamoDbLedger({ client: DynamoDBDocumentClient.from(client), tableName, now: () => T0 });
    counter.reset();
  });

  function claimInput(eventId: string, overrides: Partial<ClaimInput> = {}): ClaimInput {
    return {
      event: shipmentEvent(eventId),
      endpoint: DEFAULT_ENDPOINT,
      owner: 'worker-a',
      nowMs: T0,
      leaseMs: 30_000,
      policy: DEFAULT_RETRY_POLICY,
      retentionSeconds: 86_400,
      ...overrides,
    };
  }

  async function storedItem(eventId: string): Promise<Record<string, AttributeValue>> {
    const { Item } = await client.send(new GetItemCommand({ TableName: tableName, Key: { eventId: { S: eventId }, endpoint: { S: DEFAULT_ENDPOINT } } }));
    if (Item === undefined) throw new Error(`no row for ${eventId}`);
    return Item;
  }

  async function record(claimed: ClaimedRecord, body: string, outcome: AttemptOutcome, next: AttemptNext, nowMs: number): Promise<void> {
    const status = 'status' in outcome ? outcome.status : undefined;
    await ledger.recordAttempt({
      eventId: claimed.eventId,
      endpoint: claimed.endpoint,
      claimToken: claimed.claimToken,
      body,
      attempt: { attempt: claimed.attempts, at: nowMs - 120, outcome: outcome.kind, status, durationMs: 120 },
      outcome,
      next,
      nowMs,
    });
  }

  it('writes it as `tp` in the claim\'s one UpdateItem: the row of a claim with tracing off has every other attribute and no more, 57 bytes less', async () => {
    // Act: two events whose IDs are as long, one claimed with tracing off, one with it on.
    await ledger.claim(claimInput('evt_untraced'));
    await ledger.claim(claimInput('evt_traced_1', { traceparent: FIRST }));

    // Assess
    expect(counter.counts()).toStrictEqual({ UpdateItem: 2 });
    const [untraced, traced] = [await storedItem('evt_untraced'), await storedItem('evt_traced_1')];
    expect(WIRE_NAMES.traceparent).toBe('tp');
    expect(traced.tp).toStrictEqual({ S: FIRST });
    expect(untraced.tp).toBeUndefined();
    expect(Object.keys(traced).sort()).toStrictEqual([...Object.keys(untraced), 'tp'].sort());
    // The name's 2 bytes and the value's 55.
    expect(itemSizeBytes(traced) - itemSizeBytes(untraced)).toBe(57);
  });

  it("never rewrites it: later attempts' claims, a death and a replay leave the first on the row", async () => {
    // Prepare: the first attempt fails.
    const event = shipmentEvent('evt_traced_2');
    const first = await ledger.claim(claimInput('evt_traced_2', { traceparent: FIRST }));
    await record(first, event.body, { kind: 'temporary', status: 503 }, { state: 'pending', nextAttemptAt: T0 + 1000 }, T0 + 500);

    // Act: a second attempt, rejected; the replay; its claim.
    const second = await ledger.claim(claimInput('evt_traced_2', { nowMs: T0 + 1000, traceparent: OTHERS[0] }));
    await record(second, event.body, { kind: 'rejected', status: 400, responseStart: 'bad carrier' }, { state: 'dead', reason: 'rejected', detail: 'HTTP 400' }, T0 + 1500);
    await ledger.replay({ eventId: 'evt_traced_2', endpoint: DEFAULT_ENDPOINT, operator: 'ops', reason: 'fixed', nowMs: T0 + 2000 });
    const replayed = await ledger.claim(claimInput('evt_traced_2', { nowMs: T0 + 3000, traceparent: OTHERS[1] }));

    // Assess
    expect([second.traceparent, replayed.traceparent]).toStrictEqual([FIRST, FIRST]);
    expect((await storedItem('evt_traced_2')).tp).toStrictEqual({ S: FIRST });
  });

  it('keeps the traced row of a 500-byte event within one write unit (1 KB) through the default policy: five failures, then delivery', async () => {
    // Prepare: a lease owner as the consumer writes it in Lambda; each attempt its own span.
    const base = shipmentEvent('evt_01JEXAMPLE0000000000000000', { data: { note: '' } }).body.length;
    const event = shipmentEvent('evt_01JEXAMPLE0000000000000000', { data: { note: 'x'.repeat(500 - base) } });
    const owner = `${'0123456789abcdef'.repeat(2)}:1234567`;
    const sizes: number[] = [];

    // Act
    const attempts = DEFAULT_RETRY_POLICY.maxAttempts;
    for (let n = 1; n <= attempts; n++) {
      const atMs = T0 + n * 60_000;
      const traceparent = `00-${'4bf92f3577b34da6a3ce929d0e0e4736'}-${n.toString(16).padStart(16, '0')}-01`;
      const claimed = await ledger.claim({ ...claimInput(event.event.id, { owner, nowMs: atMs, traceparent }), event });
      sizes.push(itemSizeBytes(await storedItem(event.event.id)));
      const last = n === attempts;
      const outcome: AttemptOutcome = last ? { kind: 'accepted', status: 200 } : { kind: 'temporary', status: 503 };
      await record(claimed, event.body, outcome, last ? { state: 'delivered' } : { state: 'pending', nextAttemptAt: atMs + 30_000 }, atMs + 200);
      sizes.push(itemSizeBytes(await storedItem(event.event.id)));
    }

    // Assess
    expect((await storedItem(event.event.id)).tp?.S).toBe(`00-4bf92f3577b34da6a3ce929d0e0e4736-${'1'.padStart(16, '0')}-01`);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(1024);
  });
});
