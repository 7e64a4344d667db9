/**
 * No hot item in an outage (docs/contract.md §20, issue 21): the most writes a second on any one
 * DynamoDB item while an endpoint fails at 1,000 deliveries a second, measured through the real
 * consumer.
 *
 * How it is made. Consumer containers (`consumers`, 4 by default), each the consumer as
 * functions/consumer.ts makes it (`handoffConsumer`: `createConsumer(consumerDeps(env))` with an
 * endpoint registry table), on dynalite behind the meter (scripts/cost/meter.ts), which logs every
 * write in the order it lands with its table, key and update expression. One endpoint, every event
 * type, on a receiver that fails: `503` answers 503 without Retry-After to every request; `refused`
 * is a port nothing listens on (connection refused). The clock is simulated, shared by every
 * consumer (its health, rate limit and ledger read it): each step it moves on by one batch's share
 * of a second, and every container is handed one batch of 10 new events at once (Lambda gives a
 * container one batch at a time); the step is over when every batch is answered, health's writes
 * included (the batch waits for them before it answers). So `perSecond` deliveries a simulated
 * second reach the consumers, whatever the machine's speed, and each write falls in the simulated
 * second its batch ran in. Waiting for a rate-limit slot does not sleep: the clock is not real.
 *
 * Reported per simulated second, the most writes on one item: the registry's (health's writes on the
 * endpoint's item, the rate limit's schedule on its own item, and either), any ledger row, and any
 * item at all. Counted are write requests as the table sees them, refused conditional writes included.
 */
import { createServer, type Server } from 'node:http';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { createEndpointsTable, seedEndpoints } from '../../sandbox/endpoints-table';
import { createLedgerTable } from '../../sandbox/ledger-table';
import { listenOnLoopback } from '../../test/helpers/loopback';
import { handoffConsumer, SETTINGS } from './consumers';
import type { MeteredWrite } from './meter';
import { invokeBatch, recordOf, type Meters } from './runs';

export const HOT_ITEM_ENDPOINT = 'failing';
/** The issue's target: writes a second on any one item during the outage. */
export const HOT_ITEM_TARGET = 5;
const EVENT_BYTES = 300;

export type Failure = '503' | 'refused';

export interface HotItemOptions extends Pick<Meters, 'meter'> {
  readonly direct: DynamoDBClient;
  /** Table names and event IDs are made from this. */
  readonly prefix: string;
  readonly failure: Failure;
  /** Deliveries a simulated second, all consumers together. */
  readonly perSecond: number;
  readonly seconds: number;
  readonly consumers: number;
  /** The endpoint's `rateLimitPerSecond`; none by default. */
  readonly rateLimitPerSecond?: number;
}

/** The most writes one item took in one simulated second: how many, which item, which second. */
export interface ItemPeak {
  readonly writes: number;
  readonly item: string;
  readonly second: number;
}

export interface HotItemResult {
  readonly name: string;
  readonly options: Pick<HotItemOptions, 'failure' | 'perSecond' | 'seconds' | 'consumers' | 'rateLimitPerSecond'>;
  readonly deliveries: number;
  /** The consumers' decisions (`action:why`), counted: every delivery decided once. */
  readonly decisions: Readonly<Record<string, number>>;
  /** The registry's items: health's writes (the endpoint's item), the rate limit's schedule's (its own item), and any one of them. */
  readonly registry: { readonly health: ItemPeak; readonly schedule: ItemPeak; readonly all: ItemPeak };
  /** Any one ledger row. */
  readonly ledger: ItemPeak;
  /** Any one item of any table. */
  readonly any: ItemPeak;
  /** Any one item of any table, from the second second on: the outage once under way. */
  readonly afterFirstSecond: ItemPeak;
}

const NONE: ItemPeak = { writes: 0, item: '-', second: 0 };

/** One outage, simulated and metered as the header says. */
export async function runHotItem(options: HotItemOptions): Promise<HotItemResult> {
  const { meter, direct, prefix, consumers: containers, perSecond, seconds } = options;
  const batchSize = SETTINGS.batchSize;
  const stepMs = (1000 * containers * batchSize) / perSecond;
  if (!Number.isInteger(stepMs) || 1000 % stepMs !== 0) throw new RangeError(`${perSecond}/s over ${containers} consumers of ${batchSize}: a step must divide a second, got ${stepMs} ms`);
  const ledgerTable = `${prefix}-ledger`;
  const registryTable = `${prefix}-endpoints`;
  const receiver = await failingReceiver(options.failure);
  try {
    await createLedgerTable(direct, ledgerTable);
    await createEndpointsTable(direct, registryTable);
    const start = Math.floor(Date.now() / 1000) * 1000;
    const clock = { nowMs: start };
    const fields = { name: HOT_ITEM_ENDPOINT, url: receiver.url, eventTypes: ['*'], ...(options.rateLimitPerSecond ? { rateLimitPerSecond: options.rateLimitPerSecond } : {}) };
    await seedEndpoints(new DynamoDbEndpointRegistry({ client: direct, tableName: registryTable }), [fields], start);
    const consumers = Array.from({ length: containers }, () => handoffConsumer({ ledgerTable, registryTable, nowMs: () => clock.nowMs, sleep: async () => {} }));
    // Each container's first read of the registry, before the meter starts (once per container, not per delivery).
    for (const consumer of consumers) await consumer.invoke([]);

    const usage = meter.dynamodb.start({ writes: true });
    meter.dynamodb.seesEveryWrite(ledgerTable);
    const writes = usage.writes!;
    const secondStarts: number[] = [];
    for (let step = 0; step < (seconds * 1000) / stepMs; step++) {
      clock.nowMs = start + step * stepMs;
      if ((step * stepMs) % 1000 === 0) secondStarts.push(writes.length);
      await Promise.all(
        consumers.map((consumer, c) => {
          const records = Array.from({ length: batchSize }, (_, i) => recordOf(`${prefix}_${step}_${c}_${i}`, EVENT_BYTES));
          return invokeBatch(consumer.invoke, records, meter);
        }),
      );
    }
    secondStarts.push(writes.length);
    const bySecond = secondStarts.slice(0, -1).map((from, s) => writes.slice(from, secondStarts[s + 1]));
    const registryItem = (w: MeteredWrite) => w.table === registryTable;
    const schedule = (w: MeteredWrite) => registryItem(w) && (w.updateExpression ?? '').includes('#next');
    const decisions: Record<string, number> = {};
    for (const decision of consumers.flatMap((consumer) => consumer.decisions)) decisions[decision] = (decisions[decision] ?? 0) + 1;
    return {
      name: `${options.failure === '503' ? '503 without Retry-After' : 'connection refused'}${options.rateLimitPerSecond ? `, rate limit ${options.rateLimitPerSecond}/s` : ''}`,
      options: { failure: options.failure, perSecond, seconds, consumers: containers, ...(options.rateLimitPerSecond ? { rateLimitPerSecond: options.rateLimitPerSecond } : {}) },
      deliveries: perSecond * seconds,
      decisions,
      registry: {
        health: peak(bySecond, (w) => registryItem(w) && !schedule(w)),
        schedule: peak(bySecond, schedule),
        all: peak(bySecond, registryItem),
      },
      ledger: peak(bySecond, (w) => w.table === ledgerTable),
      any: peak(bySecond, () => true),
      afterFirstSecond: peak(bySecond.map((writes, second) => (second === 0 ? [] : writes)), () => true),
    };
  } finally {
    await receiver.close();
  }
}

/** The most writes of `which` on one item (table and key) in one second. Pure. */
export function peak(bySecond: readonly (readonly MeteredWrite[])[], which: (write: MeteredWrite) => boolean): ItemPeak {
  let top = NONE;
  bySecond.forEach((writes, second) => {
    const counts = new Map<string, number>();
    for (const w of writes) if (which(w)) counts.set(`${w.table} ${w.partitionKeyValue}`, (counts.get(`${w.table} ${w.partitionKeyValue}`) ?? 0) + 1);
    for (const [item, n] of counts) if (n > top.writes) top = { writes: n, item, second };
  });
  return top;
}

/** The outages `npm run cost` measures: 1,000 deliveries a second for 10 s over 4 consumers, failing each way, and 503 with a rate limit at that rate. */
export async function runHotItems(options: Omit<HotItemOptions, 'failure' | 'perSecond' | 'seconds' | 'consumers' | 'prefix'> & { prefix: string; quick?: boolean }): Promise<HotItemResult[]> {
  const base = { ...options, perSecond: options.quick ? 200 : 1_000, seconds: options.quick ? 4 : 10, consumers: 4 };
  const results: HotItemResult[] = [];
  results.push(await runHotItem({ ...base, prefix: `${options.prefix}-503`, failure: '503' }));
  results.push(await runHotItem({ ...base, prefix: `${options.prefix}-refused`, failure: 'refused' }));
  results.push(await runHotItem({ ...base, prefix: `${options.prefix}-503-limited`, failure: '503', rateLimitPerSecond: base.perSecond }));
  return results;
}

/** The figures as lines for the report. Pure. */
export function describeHotItems(results: readonly HotItemResult[]): string[] {
  const at = (p: ItemPeak) => `${p.writes}${p.writes > 0 ? ` (second ${p.second + 1})` : ''}`;
  return results.map((r) => {
    const { perSecond, seconds, consumers } = r.options;
    return (
      `${r.name}, ${perSecond.toLocaleString('en-US')}/s for ${seconds} s over ${consumers} consumers: most writes/s on one item ${at(r.any)}, ` +
      `after the first second ${at(r.afterFirstSecond)}; busiest registry item ${at(r.registry.all)} (health, the endpoint's item, ${at(r.registry.health)}; ` +
      `rate schedule, its own item, ${at(r.registry.schedule)}), any ledger row ${at(r.ledger)}`
    );
  });
}

/** A receiver that answers 503 (no Retry-After) to everything, or a loopback port nothing listens on. */
async function failingReceiver(failure: Failure): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(503).end());
  });
  const listening = await listenOnLoopback(server);
  if (failure === '503') return { url: listening.url, close: () => listening.close() };
  // Closed before use: the port is refused.
  await listening.close();
  return { url: listening.url, close: async () => {} };
}
