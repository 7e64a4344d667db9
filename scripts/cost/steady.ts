/**
 * Cost at a steady load (issue 21): dollars per million deliveries at a steady rate, with the ledger
 * on demand or provisioned, beside EventBridge API destinations' published price. Pure pricing of
 * what a run measured per delivery (write units on the table and on each index, read units, SQS
 * requests, Lambda time): nothing here is assumed but the rate and the target utilization.
 *
 * On demand the rate does not matter: every unit is billed as used. Provisioned, each scope (the
 * table, each index) holds its units per second divided by the target utilization (the headroom
 * auto scaling keeps), at least 1 unit of each kind (the least a scope can be provisioned), billed
 * by the hour; so an index that takes no writes still costs its minimum.
 */
import { WIRE_NAMES } from '../../lib/ledger/dynamodb-schema';
import { costPerMillionEvents, EVENTBRIDGE_PRICES, PRICES, PROVISIONED_PRICES, type CostPerMillion, type TableShape, type UsagePerEvent } from './billing';
import type { DynamoDbUsage } from './meter';

export const STEADY_RATES_PER_SECOND = [100, 1_000] as const;
/** The target utilization priced: the construct's default (infra/delivery/capacity.ts). */
export const PRICED_TARGET_UTILIZATION = 0.7;

/** What one delivery used, by DynamoDB scope: the table, and each index of the table measured. */
export interface MeasuredDelivery {
  readonly usage: UsagePerEvent;
  readonly tableWriteUnits: number;
  /** Write units per delivery by index name (0 for an index the deliveries never wrote). */
  readonly indexWriteUnits: Readonly<Record<string, number>>;
}

/** A run's units per delivery by scope: every index of the table it ran on, 0 where it wrote none. */
export function measuredDelivery(run: { readonly delivered: number; readonly dynamodb: DynamoDbUsage }, usage: UsagePerEvent, shape: TableShape): MeasuredDelivery {
  const indexWriteUnits = Object.fromEntries(shape.indexes.map((index) => [index.name, (run.dynamodb.indexWriteUnits[index.name] ?? 0) / run.delivered]));
  return { usage, tableWriteUnits: run.dynamodb.tableWriteUnits / run.delivered, indexWriteUnits };
}

/** The index keyed by a row's shipment (docs/contract.md §20), when the table has one. */
export function shipmentIndexOf(shape: TableShape): string | undefined {
  return shape.indexes.find((index) => index.partitionKey === WIRE_NAMES.shipmentId)?.name;
}

export interface SteadyRow {
  readonly ratePerSecond: number;
  readonly mode: 'on-demand' | 'provisioned';
  readonly cost: CostPerMillion;
  /** Provisioned: the units each scope holds at this rate (write, read). */
  readonly provisioned?: readonly { scope: string; writeUnits: number; readUnits: number }[];
  /** The producer's SendMessage, one event a request. */
  readonly producer: number;
  readonly total: number;
}

/** One SendMessage per event, as a producer sends one event at a time (batches of 10 cost a tenth). */
export const PRODUCER_SEND_PER_MILLION = PRICES.sqsPerMillionRequests;

/** EventBridge, one endpoint per event: the event's ingestion and one API destination invocation. */
export function eventBridgePerMillion(): number {
  return EVENTBRIDGE_PRICES.customEventsPerMillion + EVENTBRIDGE_PRICES.apiDestinationInvocationsPerMillion;
}

export function steadyRows(measured: MeasuredDelivery, rates: readonly number[] = STEADY_RATES_PER_SECOND, utilization = PRICED_TARGET_UTILIZATION): SteadyRow[] {
  const onDemand = costPerMillionEvents(measured.usage);
  const rows: SteadyRow[] = [];
  for (const ratePerSecond of rates) {
    rows.push({ ratePerSecond, mode: 'on-demand', cost: onDemand, producer: PRODUCER_SEND_PER_MILLION, total: onDemand.total + PRODUCER_SEND_PER_MILLION });
    const provisioned = provisionedScopes(measured, ratePerSecond, utilization);
    const perHour = provisioned.reduce(
      (sum, s) => sum + s.writeUnits * PROVISIONED_PRICES.dynamodbPerWriteUnitHour + s.readUnits * PROVISIONED_PRICES.dynamodbPerReadUnitHour,
      0,
    );
    const dynamodb = (perHour / (ratePerSecond * 3600)) * 1_000_000;
    const cost = { ...onDemand, dynamodb, total: onDemand.total - onDemand.dynamodb + dynamodb };
    rows.push({ ratePerSecond, mode: 'provisioned', cost, provisioned, producer: PRODUCER_SEND_PER_MILLION, total: cost.total + PRODUCER_SEND_PER_MILLION });
  }
  return rows;
}

/** Units each scope holds at a steady rate: consumed per second over the target utilization, at least 1. */
export function provisionedScopes(measured: MeasuredDelivery, ratePerSecond: number, utilization: number) {
  const held = (unitsPerDelivery: number) => Math.max(1, Math.ceil((unitsPerDelivery * ratePerSecond) / utilization));
  // The happy path reads nothing; what reads there are (a listing, `handoff status`) are the table's.
  return [
    { scope: 'table', writeUnits: held(measured.tableWriteUnits), readUnits: held(measured.usage.readUnits) },
    ...Object.entries(measured.indexWriteUnits).map(([scope, units]) => ({ scope: `index ${scope}`, writeUnits: held(units), readUnits: held(0) })),
  ];
}

/** Dollars a 30-day month at a steady rate. */
export function perMonth(perMillion: number, ratePerSecond: number): number {
  return (perMillion * ratePerSecond * 30 * 24 * 3600) / 1_000_000;
}
