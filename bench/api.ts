/**
 * What the management API (docs/contract.md §16) adds over the use cases it runs: in one run, N
 * calls of each of two operations, three ways, taking turns so machine noise falls on each alike:
 *
 * - **use case**: the command's function called directly with a CommandContext for the sandbox
 *   (`endpointShowCommand`, `parseEvent` + `sendEvents`), as `handoff` runs it;
 * - **handler**: the API's handler (`createApiHandler(ROUTES, deps)`) called in this process with
 *   the event API Gateway would hand it: routing, the body, the route's checks, the answer's JSON;
 * - **HTTP**: the same request to the running sandbox's API (`npm start`'s server, another process)
 *   over loopback with its bearer token.
 *
 * Operations: reading one endpoint (`GET /v1/endpoints/{name}`) and posting one event
 * (`POST /v1/events`, a `packed` event no demo endpoint takes, so the consumer acknowledges it
 * unrouted and the workers stay quiet), without and with an `Idempotency-Key` (a new one each
 * time: two conditional writes to the ledger table, the claim and the answer kept, as a client
 * that may retry sends it). Target (issue 22): the handler adds at most 20 ms p50.
 * Not a test: it asserts nothing but that every call succeeded.
 *
 *   npm run bench -- --api [--calls N]
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { endpointShowCommand } from '../cli/commands/endpoint-read';
import { sendEvents } from '../cli/commands/send-events';
import { CommandContext, DISCARDED_OUTPUT } from '../cli/context';
import { targetOfSandboxState } from '../cli/target';
import { DynamoDbIdempotencyStore } from '../api/dynamodb-idempotency';
import { createApiHandler } from '../api/router';
import { ROUTES } from '../api/routes';
import { parseEvent } from '../lib/event';
import { createLogger } from '../lib/observability';
import { apiEventOf } from '../sandbox/api-server';
import { SandboxClients } from '../test/helpers/sandbox-clients';
import { startSandboxProcess } from '../test/helpers/sandbox';
import { fixed, table } from './report';

export const API_BENCH_DEFAULTS = { calls: 200, warmUp: 20 };
/** The bound: the handler adds at most this much to a call's p50. */
export const API_OVERHEAD_GOAL_MS = 20;
/** A demo endpoint the bench reads (the sandbox's demo, no endpoints file). */
const ENDPOINT = 'carrier-acme';

const WAYS = ['use case', 'handler', 'HTTP'] as const;
type Way = (typeof WAYS)[number];
const OPERATIONS = ['GET /v1/endpoints/{name}', 'POST /v1/events', 'POST /v1/events + Idempotency-Key'] as const;
type Operation = (typeof OPERATIONS)[number];

export interface ApiBenchRow {
  readonly operation: Operation;
  readonly way: Way;
  readonly p50Ms: number;
  readonly p95Ms: number;
}

export interface ApiBenchResult {
  readonly calls: number;
  readonly rows: readonly ApiBenchRow[];
  /** Per operation: the handler's p50 and HTTP's, each less the use case's. */
  readonly overheadP50Ms: Readonly<Record<Operation, { readonly handler: number; readonly http: number }>>;
}

/** The value below which `q` of the sorted values lie (nearest rank). Pure. */
export function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
}

function packedEvent(): string {
  const id = `evt_bench_${randomUUID()}`;
  return JSON.stringify({ id, shipmentId: `shp_${id}`, status: 'packed', occurredAt: new Date().toISOString(), data: { carrier: 'bench' } });
}

function refuse(what: string, status: number, body: string | undefined): never {
  throw new Error(`${what} answered ${status}: ${(body ?? '').slice(0, 200)}`);
}

export async function runApiBench(options: { calls: number; warmUp: number }, log: (line: string) => void): Promise<ApiBenchResult> {
  log('starting the sandbox (npm start)');
  const sandbox = await startSandboxProcess({ endpointsCacheMs: 1000 });
  const { ready } = sandbox;
  const context = new CommandContext(targetOfSandboxState(ready, sandbox.stateFile), DISCARDED_OUTPUT);
  const clients = new SandboxClients(ready);
  const handler = createApiHandler(ROUTES, {
    context,
    idempotency: new DynamoDbIdempotencyStore({ client: clients.documents, tableName: ready.ledgerTable }),
    now: Date.now,
    logger: createLogger({ service: 'handoff-api-bench', write: () => {} }),
  });
  const keyed = (withKey: boolean): Record<string, string> => (withKey ? { 'idempotency-key': randomUUID() } : {});
  const event = (method: string, url: string, body?: string, withKey = false) =>
    apiEventOf(
      { method, url, headers: { host: '127.0.0.1', 'content-type': 'application/json', ...keyed(withKey) }, sourceIp: '127.0.0.1', body: Buffer.from(body ?? ''), overflowed: false },
      true,
      randomUUID(),
      Date.now(),
    );
  const http = async (method: string, path: string, body?: string, withKey = false) => {
    const response = await fetch(`${ready.apiUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${ready.apiToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...keyed(withKey) },
      body,
    });
    const text = await response.text();
    if (response.status >= 300) refuse(`HTTP ${method} ${path}`, response.status, text);
  };

  const sendOne = async () => {
    const parsed = parseEvent(packedEvent());
    if (!parsed.ok) throw parsed.error;
    const outcome = await sendEvents(context, [parsed.value]);
    if (outcome.sent.length !== 1) throw new Error(`the use case sent ${outcome.sent.length} events`);
  };
  const postThroughHandler = async (withKey: boolean) => {
    const result = await handler(event('POST', '/v1/events', packedEvent(), withKey));
    if (result.statusCode !== 202) refuse('the handler', result.statusCode ?? 500, result.body);
  };
  const calls: Record<Operation, Record<Way, () => Promise<void>>> = {
    'GET /v1/endpoints/{name}': {
      'use case': async () => void (await endpointShowCommand(context, ENDPOINT)),
      handler: async () => {
        const result = await handler(event('GET', `/v1/endpoints/${ENDPOINT}`));
        if ((result.statusCode ?? 500) >= 300) refuse('the handler', result.statusCode ?? 500, result.body);
      },
      HTTP: () => http('GET', `/v1/endpoints/${ENDPOINT}`),
    },
    'POST /v1/events': {
      'use case': sendOne,
      handler: () => postThroughHandler(false),
      HTTP: () => http('POST', '/v1/events', packedEvent()),
    },
    'POST /v1/events + Idempotency-Key': {
      'use case': sendOne,
      handler: () => postThroughHandler(true),
      HTTP: () => http('POST', '/v1/events', packedEvent(), true),
    },
  };

  const times = Object.fromEntries(OPERATIONS.map((op) => [op, Object.fromEntries(WAYS.map((way) => [way, [] as number[]]))])) as Record<
    Operation,
    Record<Way, number[]>
  >;
  try {
    for (let round = 0; round < options.warmUp + options.calls; round += 1) {
      for (const operation of OPERATIONS) {
        for (const way of WAYS) {
          const startedAt = performance.now();
          await calls[operation][way]();
          if (round >= options.warmUp) times[operation][way].push(performance.now() - startedAt);
        }
      }
      if ((round + 1) % 50 === 0) log(`api bench: ${round + 1}/${options.warmUp + options.calls} rounds`);
    }
  } finally {
    context.close();
    clients.close();
    await sandbox.stop('SIGKILL');
  }

  const rows: ApiBenchRow[] = OPERATIONS.flatMap((operation) =>
    WAYS.map((way) => ({ operation, way, p50Ms: percentile(times[operation][way], 0.5), p95Ms: percentile(times[operation][way], 0.95) })),
  );
  const p50 = (operation: Operation, way: Way) => rows.find((r) => r.operation === operation && r.way === way)!.p50Ms;
  const overheadP50Ms = Object.fromEntries(
    OPERATIONS.map((op) => [op, { handler: p50(op, 'handler') - p50(op, 'use case'), http: p50(op, 'HTTP') - p50(op, 'use case') }]),
  ) as ApiBenchResult['overheadP50Ms'];
  return { calls: options.calls, rows, overheadP50Ms };
}

/** The result as the bench prints it. Pure. */
export function apiBenchMarkdown(result: ApiBenchResult, machine: { date: string; loadAverage: readonly number[] }): string {
  const [f1] = [fixed(1)];
  const lines = [
    `## The management API's overhead (${result.calls} calls of each, ${machine.date})`,
    '',
    ...table(
      ['operation', 'use case p50 / p95 (ms)', 'handler p50 / p95 (ms)', 'HTTP p50 / p95 (ms)', 'added p50: handler / HTTP (ms)'],
      OPERATIONS.map((operation) => {
        const cell = (way: Way) => {
          const row = result.rows.find((r) => r.operation === operation && r.way === way)!;
          return `${f1(row.p50Ms)} / ${f1(row.p95Ms)}`;
        };
        const added = result.overheadP50Ms[operation];
        return [`\`${operation}\``, cell('use case'), cell('handler'), cell('HTTP'), `${f1(added.handler)} / ${f1(added.http)}`];
      }),
    ),
    '',
  ];
  for (const operation of OPERATIONS) {
    const added = result.overheadP50Ms[operation];
    const worst = Math.max(added.handler, added.http);
    lines.push(`- \`${operation}\`: at most ${API_OVERHEAD_GOAL_MS} ms p50 added: ${worst <= API_OVERHEAD_GOAL_MS ? 'met' : 'missed'} (${f1(worst)} ms).`);
  }
  lines.push('', `Load average at start ${machine.loadAverage.map((n) => n.toFixed(2)).join(' ')}.`, '');
  return lines.join('\n');
}
