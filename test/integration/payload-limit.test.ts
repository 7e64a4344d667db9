/**
 * The largest payload limit leaves room for the rest of a ledger row. dynalite enforces
 * DynamoDB's 400 KB item limit, so an event at MAX_PAYLOAD_LIMIT_BYTES is taken through the real
 * DynamoDbLedger and the real sender to its largest row: the longest ID, policy and lease owner,
 * a full attempt history of the longest causes, a rejection with the largest response start and
 * dead detail, and replays with the longest operator, reason and caller. Every write must succeed.
 */
import { createServer } from 'node:http';
import { GetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PAYLOAD_LIMIT_BYTES } from '../../lib/config';
import { deliver, type DeliverDeps } from '../../lib/deliver';
import { canonicalJson } from '../../lib/event';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { LEDGER_SCHEMA } from '../../lib/ledger/dynamodb-schema';
import { itemSizeBytes } from '../../lib/ledger/item-size';
import { DEFAULT_ENDPOINT, MAX_AUDIT, MAX_HISTORY } from '../../lib/ledger/ledger';
import { MAX_WAIT_SECONDS, retryPolicy } from '../../lib/policy';
import { CALLER_MAX_CHARS, OPERATOR_MAX_CHARS, REASON_MAX_CHARS } from '../../lib/replay';
import { EndpointGuard, SANDBOX_GUARD_OPTIONS } from '../../lib/webhook/endpoint-guard';
import { DEFAULT_MAX_RESPONSE_BYTES, HttpWebhookSender } from '../../lib/webhook/http-sender';
import { createLedgerTable } from '../../sandbox/ledger-table';
import { emulatorDynamoDbClient, startDynalite, type Dynalite } from '../helpers/dynalite';
import { listenOnLoopback, type Listening } from '../helpers/loopback';

/** DynamoDB's item limit: 400 KB. */
const ITEM_LIMIT_BYTES = 400 * 1024;
/** Replays of one event this test makes: more than the audit keeps, each entry of the longest texts. */
const REPLAYS = MAX_AUDIT + 2;
/** The largest attempt count and schedule configuration allows: both stored on the row. */
const POLICY = retryPolicy(100, Array.from({ length: 100 }, () => MAX_WAIT_SECONDS));
/** Four UTF-8 bytes per character: the longest texts in bytes for their length in characters. */
const WIDE = '\u{1F4E6}';

let dynalite: Dynalite;
let client: DynamoDBClient;
let rejecting: Listening;
let refusedUrl: string;

beforeAll(async () => {
  dynalite = await startDynalite();
  client = emulatorDynamoDbClient(dynalite.endpoint);
  await createLedgerTable(client, 'payload-limit');
  // A 4xx whose body is 0xFF bytes: each becomes U+FFFD (3 UTF-8 bytes) in the kept response start.
  rejecting = await listenOnLoopback(
    createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(422, { 'content-type': 'text/plain' }).end(Buffer.alloc(4 * DEFAULT_MAX_RESPONSE_BYTES, 0xff)));
    }),
  );
  // A port nothing listens on: every attempt ends `temporary` with cause `connection-refused`.
  const closed = await listenOnLoopback(createServer());
  refusedUrl = closed.url;
  await closed.close();
});

afterAll(async () => {
  await rejecting.close();
  client.destroy();
  await dynalite.close();
});

/** An event whose canonical body is exactly `bytes` long, with the longest ID and shipment ID. */
function eventOfCanonicalSize(bytes: number): string {
  const event = {
    id: 'e'.repeat(128),
    shipmentId: WIDE.repeat(128),
    status: 'out_for_delivery',
    occurredAt: '2026-12-02T10:15:00.123456789+05:45',
    data: { blob: '' },
  };
  const filler = bytes - Buffer.byteLength(canonicalJson(event));
  return canonicalJson({ ...event, data: { blob: 'x'.repeat(filler) } });
}

describe('Limit: the largest payload in the largest ledger row', () => {
  it('admits an event at the maximum payload limit and keeps its row within 400 KB through a full history, a rejection and replays', async () => {
    // Prepare
    const ledger = new DynamoDbLedger({
      client: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }),
      tableName: 'payload-limit',
    });
    const body = eventOfCanonicalSize(MAX_PAYLOAD_LIMIT_BYTES);
    expect(Buffer.byteLength(body)).toBe(MAX_PAYLOAD_LIMIT_BYTES);
    const guard = new EndpointGuard(SANDBOX_GUARD_OPTIONS);
    const refused = new HttpWebhookSender({ url: refusedUrl, timeoutMs: 5_000, guard });
    const rejected = new HttpWebhookSender({ url: rejecting.url, timeoutMs: 5_000, guard });
    let nowMs = Date.UTC(2026, 11, 2, 10, 15);
    const deps = (sender: HttpWebhookSender): DeliverDeps => ({
      ledger,
      sender,
      now: () => nowMs,
      // The consumer's owner is a log stream name, a pid and a UUID; this is longer.
      owner: 'o'.repeat(200),
      policy: POLICY,
      payloadLimitBytes: MAX_PAYLOAD_LIMIT_BYTES,
      leaseMs: 900_000,
      retentionSeconds: 3650 * 86_400,
    });
    const later = () => {
      nowMs += (MAX_WAIT_SECONDS + 1) * 1000;
    };

    // Act: a full history of refused connections, then a rejection with the largest response
    const decisions: string[] = [];
    for (let attempt = 1; attempt <= MAX_HISTORY + 2; attempt++) {
      decisions.push((await deliver({ body }, deps(refused))).decision.action);
      later();
    }
    decisions.push((await deliver({ body }, deps(rejected))).decision.action);
    // … then replays with the longest operator, reason and caller, each rejected again
    for (let replay = 1; replay <= REPLAYS; replay++) {
      later();
      await ledger.replay({
        eventId: 'e'.repeat(128),
        endpoint: DEFAULT_ENDPOINT,
        operator: WIDE.repeat(OPERATOR_MAX_CHARS),
        reason: WIDE.repeat(REASON_MAX_CHARS),
        caller: `arn:aws:sts::123456789012:assumed-role/${'r'.repeat(CALLER_MAX_CHARS)}`.slice(0, CALLER_MAX_CHARS),
        nowMs,
      });
      later();
      decisions.push((await deliver({ body }, deps(rejected))).decision.action);
    }
    refused.close();
    rejected.close();

    // Assess: every write landed, and the row as stored is within DynamoDB's limit
    expect(decisions).toEqual([
      ...Array.from({ length: MAX_HISTORY + 2 }, () => 'retry'),
      ...Array.from({ length: REPLAYS + 1 }, () => 'dead-letter'),
    ]);
    const record = await ledger.get({ eventId: 'e'.repeat(128), endpoint: DEFAULT_ENDPOINT });
    expect(record).toMatchObject({ state: 'dead', deadReason: 'rejected', replays: REPLAYS, body });
    expect(record?.history).toHaveLength(MAX_HISTORY);
    expect(record?.audit).toHaveLength(MAX_AUDIT);
    expect(record?.lastOutcome).toMatchObject({ kind: 'rejected', status: 422 });
    const { Item } = await client.send(
      new GetItemCommand({
        TableName: 'payload-limit',
        Key: { [LEDGER_SCHEMA.partitionKey]: { S: 'e'.repeat(128) }, [LEDGER_SCHEMA.sortKey]: { S: DEFAULT_ENDPOINT } },
      }),
    );
    expect(itemSizeBytes(Item!)).toBeLessThan(ITEM_LIMIT_BYTES);
  });
});
