/** What `npm run cost` prints: plain-text tables and the notes under them. */
import { ENDPOINTS_CACHE_MS } from '../../lib/endpoints/registry';
import { costPerMillionEvents, lambdaPerMillion, PRICES, type CostPerMillion, type TableShape, type UsagePerEvent } from './billing';
import { CONSUMER_LABELS, SETTINGS, type ConsumerName } from './consumers';
import { HEALTH_BATCH, HEALTH_EVENT_BYTES, orderingSums, type HealthFigures } from './health';
import type { DynamoDbUsage } from './meter';
import { FAN_OUT_EVENT_BYTES, median, partitionShares, SCENARIO_EVENT_BYTES, type FanOutMetered, type MixResult, type perDelivery, type ScenarioResult, type WorkloadResult } from './runs';

export interface PricedWorkload {
  readonly consumer: ConsumerName;
  readonly eventBytes: number;
  readonly run: WorkloadResult;
  /** Each timed invocation's wall time, ms. */
  readonly durationsMs: readonly number[];
  readonly perEvent: UsagePerEvent;
  readonly cost: CostPerMillion;
}

export interface PricedFanOut {
  readonly metered: FanOutMetered;
  readonly per: ReturnType<typeof perDelivery>;
  readonly cost: CostPerMillion;
  /** One full read of its registry (a consistent Scan of its endpoints, a container's cold start), when it has one. */
  readonly registryReadUnits: number | undefined;
}

export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)));
  const line = (cells: readonly string[]) => cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd();
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

export function describeShape(shape: TableShape): string {
  const key = (k: { partitionKey: string; sortKey?: string }) => (k.sortKey === undefined ? k.partitionKey : `${k.partitionKey}, ${k.sortKey}`);
  const indexes = shape.indexes.map((index) => {
    const projects = index.projects === 'all' ? 'ALL' : index.projects.length === 0 ? 'KEYS_ONLY' : `INCLUDE ${index.projects.join(', ')}`;
    return `${index.name} (${key(index)}; ${projects})`;
  });
  return `${shape.name}: key (${key(shape)}); indexes: ${indexes.length === 0 ? 'none' : indexes.join('; ')}`;
}

/** Index units with their puts, deletes and updates: `byState 3 (2 put, 1 delete)`. */
export function describeIndexWrites(usage: DynamoDbUsage, per = 1): string {
  const parts = Object.entries(usage.indexWriteUnits).map(([index, units]) => {
    const counts = usage.indexWriteCounts[index] ?? { put: 0, delete: 0, update: 0 };
    const ops = (['put', 'delete', 'update'] as const)
      .filter((kind) => counts[kind] > 0)
      .map((kind) => `${fixed(counts[kind] / per)} ${kind}`);
    return `${index} ${fixed(units / per)} (${ops.join(', ')})`;
  });
  return parts.length === 0 ? '0' : parts.join('; ');
}

/** Up to 2 decimals, without trailing zeros. */
export function fixed(n: number, digits = 2): string {
  return String(Number(n.toFixed(digits)));
}

export function dollars(n: number): string {
  return `$${n.toFixed(3)}`;
}

export function percent(share: number): string {
  return `${(share * 100).toFixed(2)}%`;
}

export interface Target {
  readonly name: string;
  readonly goal: string;
  readonly measured: string;
  readonly met: boolean;
  /** A missed target that fails the script (exit 1). */
  readonly failsRun?: boolean;
  /** A figure printed beside the targets, with no goal: its result reads `context`, never MET. */
  readonly context?: boolean;
}

export function formatTargets(targets: readonly Target[]): string {
  return formatTable(
    ['target', 'goal', 'measured', 'result'],
    targets.map((t) => [t.name, t.goal, t.measured, t.context ? 'context' : t.met ? 'MET' : t.failsRun ? 'MISSED (fails the run)' : 'MISSED']),
  );
}

export function printScenarios(results: readonly ScenarioResult[], variant?: string): void {
  console.log(`handoff, one ${SCENARIO_EVENT_BYTES}-byte event per scenario${variant === undefined ? '' : `, ${variant}`}: requests and billed units on AWS\n`);
  const rows = results.map(({ scenario, dynamodb, sqs }) => [
    scenario.name,
    String(scenario.expected.length),
    `${dynamodb.writeRequests}${dynamodb.refusedWrites > 0 ? ` (${dynamodb.refusedWrites} refused)` : ''}`,
    String(dynamodb.readRequests),
    String(dynamodb.tableWriteUnits),
    describeIndexWrites(dynamodb),
    String(dynamodb.writeUnits),
    fixed(dynamodb.readUnits),
    `${sqs.billedRequests} (${Object.entries(sqs.requests)
      .map(([operation, n]) => `${operation.replace(' (event source)', '*')} ${n}`)
      .join(', ')})`,
  ]);
  console.log(
    formatTable(
      ['scenario', 'messages', 'DDB writes', 'DDB reads', 'table WU', 'index WU (ops)', 'total WU', 'RU', 'SQS requests'],
      rows,
    ),
  );
  if (variant !== undefined) return console.log('');
  console.log(
    '\nRefused conditional writes are billed on the item that is there (at least 1 unit) and change no index. AWS returns\n' +
      'the row with a refusal (ALL_OLD) at no read cost, so no GetItem follows (dynalite would need one). * Lambda\'s event\n' +
      'source: a receive per batch and a delete for the records it removes, billed to the same account.\n',
  );
}

export function printWorkloads(priced: readonly PricedWorkload[], memoryMb: number): void {
  console.log(`Per delivered event: ${priced[0]?.run.invocations ?? 0} batches of ${SETTINGS.batchSize} new events per consumer and size, all accepted\n`);
  const powertools = (eventBytes: number) => priced.find((p) => p.consumer === 'powertools' && p.eventBytes === eventBytes);
  const rows = priced.map((p) => {
    const typicalMs = median(p.durationsMs);
    const base = powertools(p.eventBytes);
    return [
      CONSUMER_LABELS[p.consumer],
      p.eventBytes === 2048 ? '2 KB' : `${p.eventBytes} B`,
      fixed(p.run.dynamodb.writeRequests / p.run.delivered),
      `${fixed(p.perEvent.writeUnits)} (${fixed(p.run.dynamodb.tableWriteUnits / p.run.delivered)} + ${fixed(p.run.dynamodb.indexUnits / p.run.delivered)})`,
      fixed(p.perEvent.readUnits),
      p.run.dynamodb.largestItemBytes === 0 ? '-' : String(p.run.dynamodb.largestItemBytes),
      fixed(p.perEvent.sqsRequests),
      typicalMs.toFixed(1),
      (p.perEvent.lambdaGbSeconds * 1e6).toFixed(0),
      dollars(p.cost.dynamodb),
      dollars(p.cost.sqs),
      dollars(p.cost.lambda),
      dollars(p.cost.total),
      base === undefined ? '-' : `${(p.cost.total / base.cost.total).toFixed(2)}x`,
    ];
  });
  console.log(
    formatTable(
      [
        'consumer',
        'event',
        'DDB writes',
        'WU (table + index)',
        'RU',
        'row bytes',
        'SQS req',
        'batch ms (median)',
        `µGB-s @${memoryMb} MB`,
        'DynamoDB $/M',
        'SQS $/M',
        'Lambda $/M',
        'total $/M',
        'vs Powertools',
      ],
      rows,
    ),
  );
  const per100Ms = lambdaPerMillion(100, SETTINGS.batchSize, memoryMb);
  console.log(
    [
      '',
      `$/M: dollars per million delivered events (${PRICES.region}, prices as of ${PRICES.asOf}). WU: table + index write units.`,
      'Lambda: every invocation billed at the median batch wall time of a second, unmetered pass (the consumers taking',
      "turns batch by batch), against dynalite in this process (its CPU stands in for DynamoDB's latency) and a receiver",
      `that answers at once; on AWS the receiver's response time adds to each consumer alike (${dollars(per100Ms)}/M per 100 ms`,
      `per batch of ${SETTINGS.batchSize}). Left out, the same for all three: the producer's SendMessage, the event source's idle polls.`,
      '',
    ].join('\n'),
  );
}

export function printMixes(mixes: readonly MixResult[]): void {
  console.log('Hot partitions: write units per partition key value, for the table and each index (docs/contract.md §5)\n');
  for (const mix of mixes) {
    const { total, scopes } = partitionShares(mix.dynamodb);
    console.log(
      `${mix.deliveries.toLocaleString('en-US')} deliveries (${mix.delivered - mix.retried} delivered, ${mix.retried} after a 503, ` +
        `${mix.dead} dead), ${SETTINGS.maxConcurrency} batches at once: ${mix.seconds.toFixed(1)} s; ${total} write units, ` +
        `${fixed(mix.dynamodb.writeUnits / mix.deliveries)} per delivery`,
    );
    console.log(
      formatTable(
        ['table / index', 'write units', 'key values', 'busiest value', 'its units', 'share of all writes'],
        scopes.map((s) => [s.scope, String(s.units), String(s.values), truncate(s.largestValue), String(s.largestUnits), percent(s.largestUnits / total)]),
      ),
    );
    console.log('');
  }
}

export function printCapacityCheck(usages: readonly DynamoDbUsage[]): void {
  const agrees = usages.reduce((sum, u) => sum + u.capacityAgrees, 0);
  const differs = usages.reduce((sum, u) => sum + u.capacityDiffers, 0);
  const first = usages.find((u) => u.firstCapacityDifference !== undefined)?.firstCapacityDifference;
  console.log(
    `Table write units checked against dynalite's ConsumedCapacity (TOTAL): ${agrees} writes agree, ${differs} differ` +
      `${first === undefined ? '' : ` (first: ${first})`}. dynalite reports the table only: index units are the model's alone.`,
  );
}

export function printFanOuts(fanOuts: readonly PricedFanOut[], memoryMb: number): void {
  const base = fanOuts.find((f) => !f.metered.run.registry);
  const first = fanOuts[0];
  console.log(
    `Fan-out: per (event, endpoint) delivered, ${FAN_OUT_EVENT_BYTES}-byte events, ${first?.metered.events ?? 0} events per run ` +
      `(${(first?.metered.events ?? 0) / SETTINGS.batchSize} batches of ${SETTINGS.batchSize}), every endpoint subscribed to every event, all accepted\n`,
  );
  const operations = ['SendMessageBatch', 'ReceiveMessage*', 'DeleteMessageBatch*', 'ChangeMessageVisibility'];
  const rows = fanOuts.map((f) => {
    const { metered, per, cost } = f;
    const d = metered.dynamodb;
    return [
      metered.run.label,
      String(metered.deliveries),
      `${fixed(per.usage.writeUnits)} (${fixed(d.tableWriteUnits / metered.deliveries)} + ${fixed(d.indexUnits / metered.deliveries)})`,
      fixed(per.usage.readUnits, 3),
      `${fixed(per.usage.sqsRequests, 3)} (${operations.map((op) => fixed(per.sqsByOperation[op] ?? 0, 3)).join(' / ')})`,
      fixed(per.usage.lambdaInvocations, 3),
      `${per.producerMedianMs.toFixed(1)}${metered.endpointInvocations > 0 ? ` / ${per.endpointMedianMs.toFixed(1)}` : ''}`,
      (per.usage.lambdaGbSeconds * 1e6).toFixed(0),
      dollars(cost.dynamodb),
      dollars(cost.sqs),
      dollars(cost.lambda),
      dollars(cost.total),
      base === undefined ? '-' : `${(cost.total / base.cost.total).toFixed(2)}x`,
    ];
  });
  console.log(
    formatTable(
      [
        'run',
        'deliveries',
        'WU (table + index)',
        'RU',
        'SQS req (send batch / receive* / delete* / visibility)',
        'invocations',
        'batch ms (producer / per-endpoint)',
        `µGB-s @${memoryMb} MB`,
        'DynamoDB $/M',
        'SQS $/M',
        'Lambda $/M',
        'total $/M',
        'vs single-URL',
      ],
      rows,
    ),
  );
  const reads = fanOuts
    .filter((f) => f.registryReadUnits !== undefined)
    .map((f) => `${f.metered.run.endpoints}: ${fixed(f.registryReadUnits!, 2)} RU`)
    .join(', ');
  console.log(
    [
      '',
      `Every figure per (event, endpoint) delivered; $/M: dollars per million deliveries. * Lambda's event source. With 2 or more`,
      "endpoints a producer's batch is routed (one SendMessageBatch per 10 endpoint messages), then each endpoint message is",
      'received, delivered and deleted on its own; with 1 the message is delivered as it is. Lambda: each invocation billed at',
      'its kind\'s median batch time (producer batches and per-endpoint batches), from a pass with the runs taking turns.',
      `The registry is read in full at a container's cold start (a consistent Scan; by endpoints: ${reads}), then by change at most`,
      `once per ${ENDPOINTS_CACHE_MS / 1000} s (below), not per delivery: any read inside the metered rounds is in RU. The meter answers SQS at once: on AWS a routing invocation also`,
      `waits for its SendMessageBatch calls (sent at once), ${dollars(lambdaPerMillion(10, SETTINGS.batchSize * 3, memoryMb))}/M deliveries per 10 ms they add to a batch routed to 3`,
      "endpoints. Left out, as above: the producer's SendMessage, the event source's idle polls.",
      '',
    ].join('\n'),
  );
}

export function printHealth(rows: readonly HealthFigures[], memoryMb: number): void {
  console.log(
    `Endpoint health: per delivery, ${HEALTH_EVENT_BYTES}-byte events, batches of ${HEALTH_BATCH} (one for the 429), one endpoint ` +
      'in a registry (docs/contract.md §12)\n',
  );
  console.log(healthTable(rows));
  const waitCost = lambdaPerMillion(1000, HEALTH_BATCH, memoryMb);
  console.log(
    [
      '',
      `Every figure per delivery; $/M: dollars per million deliveries (${PRICES.region}, prices as of ${PRICES.asOf}),`,
      "DynamoDB and SQS only: Lambda's time is in the tables above (a held or parked delivery sends no request, so its",
      `invocation is shorter; a rate-limited batch waits in the invocation for slots up to a second away: ${dollars(waitCost)}/M`,
      `deliveries per second waited, at ${memoryMb} MB and ${HEALTH_BATCH} per batch). * Lambda's event source.`,
      `Each consumer reads the registry once per container per ${ENDPOINTS_CACHE_MS / 1000} s, before metering here. A held`,
      "delivery costs the 'paused' row's requests at every receive until the pause ends (its visibility is set to what is left). The",
      "release is two runs of the scheduled recovery: each scans the registry's resume attributes and queries the endpoint's",
      `16 parked shards (a cost per run, not per delivery: spread over ${HEALTH_BATCH} here); the first takes its window (one`,
      'registry write), unparks each row (listed pending until delivered) and sends its message; the second ends the release',
      "(one registry write). Rate-limited: one reservation (a registry write) per batch and endpoint; a delivery put back",
      "carries its slot and is not reserved again. A parked delivery received again (ApproximateReceiveCount > 1) is a",
      "producer's message: routing reads its rows first (one Query); its first park write is refused, being for a new row.",
      '',
    ].join('\n'),
  );
}

export function printOrdering(steps: readonly HealthFigures[]): void {
  console.log(
    `Per-shipment ordering: per delivery, ${HEALTH_EVENT_BYTES}-byte events on the standard intake, batches of ${HEALTH_BATCH}, ` +
      'each event of a shipment of its own, one endpoint in a registry (docs/contract.md §13)\n',
  );
  const rows = [...steps, ...orderingSums(steps)];
  console.log(healthTable(rows));
  const find = (prefix: string) => rows.find((f) => f.name.startsWith(prefix));
  const base = find('unordered: delivered');
  const inTurn = find('ordered: in its turn, delivered');
  const waited = find('= a waiting event in all');
  const over = (f: HealthFigures | undefined) =>
    base === undefined || f === undefined
      ? '-'
      : `+${fixed(f.ledger.writeUnits - base.ledger.writeUnits)} WU, +${fixed(f.ledger.readUnits - base.ledger.readUnits, 3)} RU, ` +
        `+${fixed(f.sqsRequests - base.sqsRequests, 3)} SQS requests, +${dollars(f.cost.total - base.cost.total)}/M ` +
        `(${dollars(f.cost.total)}/M, ${(f.cost.total / base.cost.total).toFixed(2)}x)`;
  console.log(
    [
      '',
      `Overhead over the unordered delivery (${base === undefined ? '-' : dollars(base.cost.total)}/M): in its turn ${over(inTurn)};`,
      `an event that waited and was woken, in all ${over(waited)}.`,
      "The shipment head is an item of the ledger's table (no index entry): taking a number and passing the turn are a write",
      'each; the number is not asked for again (a second receive reads it from its claimed row, a woken or fanned-out',
      'delivery carries it on its message). The wake-up row is the waking step less its twin with nothing waiting. On the',
      'ordered (FIFO) intake the number is taken at routing and travels on the endpoint message: the same head writes.',
      "$/M: DynamoDB and SQS per million deliveries; Lambda apart. * Lambda's event source.",
      '',
    ].join('\n'),
  );
}

/** The per-delivery table of endpoint health and ordering steps. */
function healthTable(rows: readonly HealthFigures[]): string {
  const sqsText = (f: HealthFigures) =>
    `${fixed(f.sqsRequests, 3)} (${Object.entries(f.sqsByOperation)
      .map(([operation, n]) => `${operation} ${fixed(n, 3)}`)
      .join(', ')})`;
  const ops = (f: HealthFigures) =>
    (['put', 'delete', 'update'] as const)
      .filter((kind) => f.indexOps[kind] > 0)
      .map((kind) => `${fixed(f.indexOps[kind])} ${kind}`)
      .join(', ') || '-';
  return formatTable(
      ['scenario', 'decisions', 'ledger writes / reads', 'ledger WU (table + index)', 'index entries', 'ledger RU', 'registry WU', 'registry RU', 'SQS requests', 'DynamoDB $/M', 'SQS $/M', 'total $/M'],
      rows.map((f) => [
        f.name,
        f.decisions === undefined ? '-' : Object.entries(f.decisions).map(([d, n]) => `${d}${n === f.deliveries ? '' : ` x${n}`}`).join(', '),
        `${fixed(f.ledger.writeRequests)} / ${fixed(f.ledger.readRequests)}`,
        `${fixed(f.ledger.writeUnits)} (${fixed(f.ledger.writeUnits - f.ledger.indexUnits)} + ${fixed(f.ledger.indexUnits)})${f.refusedWrites > 0 ? `, ${fixed(f.refusedWrites)} refused` : ''}`,
        ops(f),
        fixed(f.ledger.readUnits, 3),
        fixed(f.registry.writeUnits, 3),
        fixed(f.registry.readUnits, 3),
        sqsText(f),
        dollars(f.cost.dynamodb),
        dollars(f.cost.sqs),
        dollars(f.cost.total),
      ]),
    );
}


export function truncate(text: string, length = 32): string {
  return text.length <= length ? text : `${text.slice(0, length - 1)}…`;
}
