/** What `npm run cost` prints at platform scale (issue 21): cost at a steady load, a container's registry reads. */
import type { TableShape } from './billing';
import { EVENTBRIDGE_PRICES, PRICES, PROVISIONED_PRICES } from './billing';
import { dollars, fixed, formatTable, type Target } from './report';
import { REFRESH_MS, REFRESH_TARGET_READ_UNITS, type ContainerReader, type RegistryReadFigures } from './registry';
import { eventBridgePerMillion, perMonth, PRICED_TARGET_UTILIZATION, type MeasuredDelivery, type SteadyRow } from './steady';

export function printSteady(rows: readonly SteadyRow[], measured: MeasuredDelivery, shape: TableShape, shipmentIndex: string | undefined): void {
  const indexes = Object.entries(measured.indexWriteUnits).map(([name, units]) => `${name} ${fixed(units)}`).join(', ') || 'none';
  console.log(
    `Cost at a steady load: per million deliveries (300-byte events, one endpoint, all accepted), the ledger on demand or\n` +
      `provisioned, beside EventBridge API destinations. Measured per delivery above (${shape.name}): ${fixed(measured.tableWriteUnits)} table WU, ` +
      `index WU ${indexes}; ${fixed(measured.usage.readUnits)} RU\n`,
  );
  const eventBridge = eventBridgePerMillion();
  const table = rows.map((r) => [
    `${r.ratePerSecond.toLocaleString('en-US')}/s`,
    r.mode,
    r.provisioned === undefined ? '-' : r.provisioned.map((s) => `${s.scope} ${s.writeUnits}/${s.readUnits}`).join('; '),
    dollars(r.cost.dynamodb),
    dollars(r.cost.sqs),
    dollars(r.cost.lambda),
    dollars(r.producer),
    dollars(r.total),
    `$${Math.round(perMonth(r.total, r.ratePerSecond)).toLocaleString('en-US')}`,
    `${(r.total / eventBridge).toFixed(2)}x`,
  ]);
  for (const rate of new Set(rows.map((r) => r.ratePerSecond))) {
    table.push([`${rate.toLocaleString('en-US')}/s`, 'EventBridge API destination', '-', '-', '-', '-', '-', dollars(eventBridge), `$${Math.round(perMonth(eventBridge, rate)).toLocaleString('en-US')}`, '1.00x']);
  }
  console.log(
    formatTable(
      ['rate', 'ledger', 'provisioned WU/RU held (table; each index)', 'DynamoDB $/M', 'SQS $/M', 'Lambda $/M', 'producer $/M', 'total $/M', '30 days', 'vs EventBridge'],
      table,
    ),
  );
  console.log(
    [
      '',
      `On demand: $${PRICES.dynamodbPerMillionWriteUnits}/M write units, the same at any rate. Provisioned (${PROVISIONED_PRICES.source}, ${PRICES.region}):`,
      `$${PROVISIONED_PRICES.dynamodbPerWriteUnitHour} a write unit-hour, $${PROVISIONED_PRICES.dynamodbPerReadUnitHour} a read unit-hour; each scope holds its units per second over a`,
      `${PRICED_TARGET_UTILIZATION * 100} % target utilization (30 % headroom, the construct's default), at least 1 of each; no reserved capacity. SQS and Lambda`,
      "as measured above (Lambda at the median batch time against a receiver that answers at once). Producer: one SendMessage",
      `an event ($${PRICES.sqsPerMillionRequests}/M; batches of 10 cost a tenth). EventBridge (${EVENTBRIDGE_PRICES.source}): the event put on a bus`,
      `$${EVENTBRIDGE_PRICES.customEventsPerMillion}/M + one API destination invocation $${EVENTBRIDGE_PRICES.apiDestinationInvocationsPerMillion}/M (each 64 KB one); a retry is another invocation, and EventBridge`,
      'keeps no ledger, no replay, no per-endpoint health or ordering. Auto scaling lags a rise by minutes: a jump past the headroom',
      'is throttled meanwhile (the ledger throttles alarm), which on demand only a hot key or a doubling does.',
      shipmentIndex === undefined
        ? 'The ledger measured has no shipment index: with it (docs/contract.md §20), priced from the design until measured, 1 WU a delivery more.'
        : `The shipment index (${shipmentIndex}) is in the ledger measured: its units are the measured ${fixed(measured.indexWriteUnits[shipmentIndex] ?? 0)} WU a delivery above.`,
      '',
    ].join('\n'),
  );
}

export function printRegistry(figures: readonly RegistryReadFigures[], readers: readonly ContainerReader[]): void {
  console.log("The registry's reads per consumer container, nothing changing during the minute (docs/contract.md §20)\n");
  const history = (f: RegistryReadFigures) => (f.history === 'quiet' ? 'last change 1 h before' : 'all added at once 2 h before');
  console.log(
    formatTable(
      ['reader', 'endpoints', 'history', 'item bytes', 'cold start RU (requests)', 'RU per refresh (requests)', 'RU per container-minute', '$ per container-day', 'how'],
      figures.map((f) => [
        f.reader,
        f.endpoints.toLocaleString('en-US'),
        history(f),
        f.itemBytes.toFixed(0),
        `${fixed(f.coldStart.readUnits)} (${fixed(f.coldStart.requests)})`,
        `${fixed(f.perRefresh.readUnits)} (${fixed(f.perRefresh.requests)})`,
        fixed(f.perMinuteReadUnits),
        dollars((f.perMinuteReadUnits * 60 * 24 * PRICES.dynamodbPerMillionReadUnits) / 1_000_000),
        f.derivedFrom === undefined ? 'measured' : `derived: ${f.derivedFrom}`,
      ]),
    ),
  );
  console.log(
    [
      '',
      ...readers.map((reader) => `${reader.name}: ${reader.label}.`),
      `A refresh every ${REFRESH_MS / 1000} s, ${60_000 / REFRESH_MS} a minute, after the cold start, on a simulated clock; the endpoints seeded through the adapter`,
      `(four event types, a secret by ARN). RU billed from the items each request returned: a consistent read 4 KB a unit, an`,
      `eventually consistent one (an index) half, each request rounded up on its own. $ per container-day: ${PRICES.region} on-demand reads, one warm container.`,
      '',
    ].join('\n'),
  );
}

/** The target holds a reader by change to it (a reader of every item grows with the registry by design). */
export function registryTargets(figures: readonly RegistryReadFigures[], readers: readonly ContainerReader[]): Target[] {
  const byChange = readers.filter((reader) => reader.byChange).map((reader) => reader.name);
  const groups = [...new Set(figures.filter((f) => byChange.includes(f.reader)).map((f) => `${f.reader}\n${f.history}`))];
  return groups.map((group) => {
    const [reader, history] = group.split('\n');
    const rows = figures.filter((f) => f.reader === reader && f.history === history).sort((a, b) => a.endpoints - b.endpoints);
    const worst = Math.max(...rows.map((f) => f.perRefresh.readUnits));
    const [first, last] = [rows[0], rows[rows.length - 1]];
    const flat = first !== undefined && last !== undefined && last.perRefresh.readUnits <= first.perRefresh.readUnits + 1e-9;
    return {
      name: `Registry read units per refresh (${reader}), nothing changing${history === 'bulk' ? ' since a bulk add 2 h before' : ''}`,
      goal: `≤ ${REFRESH_TARGET_READ_UNITS}, flat from ${first?.endpoints.toLocaleString('en-US')} to ${last?.endpoints.toLocaleString('en-US')} endpoints`,
      measured: rows.map((f) => `${fixed(f.perRefresh.readUnits)} at ${f.endpoints.toLocaleString('en-US')}${f.derivedFrom === undefined ? '' : ' (derived)'}`).join(', '),
      met: worst <= REFRESH_TARGET_READ_UNITS && flat,
    };
  });
}
