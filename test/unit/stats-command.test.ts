import type { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from 'commander';
import { describeSince, parseSince, statsCommand } from '../../cli/commands/stats';
import { sinceOption } from '../../cli/main';
import type { CommandContext } from '../../cli/context';
import type { DeliveryRecord, DeliveryState, ListOptions, Page } from '../../lib/ledger/ledger';
import {
  MetricsUnavailableError,
  type MetricsReader,
  type MetricsReadOptions,
  type MetricsWindow,
  type DeliveryMetrics,
} from '../../lib/metrics/metrics-reader';
import { deliveryMetrics } from '../helpers/delivery-metrics';

describe('Function: parseSince', () => {
  it('reads minutes, hours and days', () => {
    expect(parseSince('30m')).toBe(30 * 60_000);
    expect(parseSince('24h')).toBe(24 * 3_600_000);
    expect(parseSince(' 7d ')).toBe(7 * 86_400_000);
  });

  it.each(['', '24', '1s', '0m', '16d', 'h', '1.5h', '-1h'])('refuses "%s" saying the form it wants', (text) => {
    expect(() => parseSince(text)).toThrow(new RangeError('must be a duration like 30m, 24h or 7d, from 1m to 15d.'));
  });
});

describe('Function: sinceOption', () => {
  it('refuses a bad duration as commander\'s invalid argument, so the CLI names the option (exit 2)', () => {
    expect(() => sinceOption('1s')).toThrow(InvalidArgumentError);
    expect(sinceOption('6h')).toBe(6 * 3_600_000);
  });
});

describe('Function: describeSince', () => {
  it('says a window in its largest whole unit, hours up to a day', () => {
    expect(describeSince(24 * 3_600_000)).toBe('24 h');
    expect(describeSince(7 * 86_400_000)).toBe('7 d');
    expect(describeSince(90 * 60_000)).toBe('90 min');
    expect(describeSince(36 * 3_600_000)).toBe('36 h');
  });
});

describe('Function: statsCommand', () => {
  const NOW_MS = Date.UTC(2026, 11, 2, 12, 0, 0);
  const HOUR_MS = 3_600_000;
  const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/1/handoff-deliveries';
  const REDRIVE_URL = 'https://sqs.eu-west-1.amazonaws.com/1/handoff-redrive';
  const DLQ_URL = 'https://sqs.eu-west-1.amazonaws.com/1/handoff-dead-letters';

  /**
   * A context over a ledger listing, a metrics reader and the queues' attributes. With `registry`,
   * the target names an endpoint registry holding those endpoints, and `parked` is each endpoint's
   * parked count as the ledger's countByState gives it. With `queues`, the target names those
   * queues (by URL) and SQS answers their depths; without, it names none, so no SQS call.
   */
  function context(
    reader: Partial<MetricsReader> & Pick<MetricsReader, 'read'>,
    setup: { registry?: string[]; parked?: Record<string, number>; queues?: Record<string, Record<string, string>>; deadRows?: Partial<DeliveryRecord>[] } = {},
  ) {
    const windows: MetricsWindow[] = [];
    const reads: MetricsReadOptions[] = [];
    const listed: DeliveryState[] = [];
    const listOptions: ListOptions[] = [];
    const counted: { state: string; endpoint: string | undefined }[] = [];
    const askedQueues: string[] = [];
    const rows: Partial<Record<DeliveryState, Partial<DeliveryRecord>[]>> = {
      pending: [{ stateSince: NOW_MS - 5_000, endpoint: 'billing' }],
      dead: setup.deadRows ?? [{ endpoint: 'billing' }, { endpoint: 'crm' }],
    };
    const queues = setup.queues ?? {};
    const names = {
      ...(queues[QUEUE_URL] ? { queueUrl: QUEUE_URL } : {}),
      ...(queues[REDRIVE_URL] ? { redriveQueueUrl: REDRIVE_URL } : {}),
      ...(queues[DLQ_URL] ? { deadLetterQueueUrl: DLQ_URL } : {}),
    };
    const ctx = {
      now: () => NOW_MS,
      target: { description: 'a test', connection: { kind: 'aws' }, ...names, ...(setup.registry !== undefined ? { endpointsTable: 'handoff-endpoints' } : {}) },
      sqs: () => ({
        send: async (command: GetQueueAttributesCommand) => {
          askedQueues.push(command.input.QueueUrl!);
          return { Attributes: queues[command.input.QueueUrl!] };
        },
      }),
      registry: () => ({
        scan: async () => ({ records: (setup.registry ?? []).map((name) => ({ fields: { name } })), unreadable: [] }),
      }),
      ledger: () => ({
        listByState: async (state: DeliveryState, options: ListOptions = {}): Promise<Page> => {
          listed.push(state);
          listOptions.push(options);
          const all = (rows[state] ?? []).filter((r) => options.endpoint === undefined || r.endpoint === options.endpoint);
          // Pages of `limit`, the cursor an offset.
          const from = Number(options.cursor ?? 0);
          const to = from + (options.limit ?? all.length);
          return { records: all.slice(from, to) as DeliveryRecord[], ...(to < all.length ? { cursor: String(to) } : {}) };
        },
        countByState: async (state: string, options: { endpoint?: string } = {}): Promise<number> => {
          counted.push({ state, endpoint: options.endpoint });
          return state === 'parked' && options.endpoint !== undefined ? (setup.parked?.[options.endpoint] ?? 0) : 0;
        },
      }),
      metrics: (): MetricsReader => ({
        source: 'the test reader',
        percentileMethod: 'exact',
        maxWindowMs: 24 * HOUR_MS,
        readMinutes: async () => [],
        ...reader,
        read: (window, options = {}) => (windows.push(window), reads.push(options), reader.read(window)),
      }),
    } as unknown as CommandContext;
    return { ctx, windows, listed, listOptions, reads, counted, askedQueues };
  }

  const metrics = deliveryMetrics({ delivered: 8, attempts: 10, retriedAttempts: 2, deadLettered: 1, latency: [8, 50, 900], oldestPendingAgeMs: 185_000 });
  const depth = (visible: number, inFlight: number, delayed: number) => ({
    ApproximateNumberOfMessages: String(visible),
    ApproximateNumberOfMessagesNotVisible: String(inFlight),
    ApproximateNumberOfMessagesDelayed: String(delayed),
  });

  it('lists only dead rows, and reads the delivery figures and the oldest message received from the metrics over the window', async () => {
    const { ctx, windows, listed } = context({ read: async () => metrics });

    const result = await statsCommand(ctx, { maxRowsPerState: 100, sinceMs: 6 * HOUR_MS });

    expect(listed).toEqual(['dead']);
    expect(windows).toEqual([{ startMs: NOW_MS - 6 * HOUR_MS, endMs: NOW_MS }]);
    expect(result.failure).toBeUndefined();
    expect(result.json).toMatchObject({
      oldestPendingAgeMs: 185_000,
      deadCount: 2,
      capped: { dead: false },
      deliveredCount: 8,
      retryRate: 0.2,
      latencyMs: { p50: 50, p99: 900 },
      sources: { metrics: 'the test reader', dead: "the ledger's dead rows" },
      window: { since: '6h' },
    });
    const lines = result.human.split('\n');
    expect(lines).toContainEqual(expect.stringMatching(/^oldest received +3 min 5 s old \(the oldest message the consumer received in the last 6 h\)$/));
    expect(lines).toContain('delivered, retry rate, latency, oldest received: the test reader, the last 6 h; percentiles over 8 deliveries, exact');
    expect(lines).toContain(
      'oldest received: the largest PendingAge (how long a message had been on the queue when the consumer received it); a message not yet received is not in it',
    );
  });

  it("counts pending from SQS: every message on the delivery and redrive queues, retrying ones in flight included, and says what it counts", async () => {
    const { ctx, askedQueues } = context(
      { read: async () => metrics },
      { queues: { [QUEUE_URL]: depth(2, 3, 1), [REDRIVE_URL]: depth(1, 0, 0), [DLQ_URL]: depth(4, 0, 0) } },
    );

    const result = await statsCommand(ctx, { maxRowsPerState: 100 });

    expect(new Set(askedQueues)).toEqual(new Set([QUEUE_URL, REDRIVE_URL, DLQ_URL]));
    expect(result.json).toMatchObject({
      pendingCount: 7,
      queue: { visible: 2, inFlight: 3, delayed: 1 },
      redriveQueue: { visible: 1, inFlight: 0, delayed: 0 },
      deadLetterQueue: { visible: 4, inFlight: 0, delayed: 0 },
    });
    const lines = result.human.split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^pending +7$/),
        expect.stringMatching(/^queue +2 waiting, 3 in flight, 1 delayed$/),
        expect.stringMatching(/^redrive queue +1 waiting, 0 in flight, 0 delayed$/),
        expect.stringMatching(/^dead-letter queue +4 waiting, 0 in flight, 0 delayed$/),
        "pending: the messages on the delivery queue and the redrive queue (waiting, in flight, delayed): SQS's approximate counts, now; " +
          "a producer's message not yet routed counts once whatever its endpoints; parked deliveries are on no queue (parked, on its own line)",
      ]),
    );
    expect((result.json as { sources: { pending: string } }).sources.pending).toMatch(/^the messages on the delivery queue and the redrive queue/);
  });

  it('counts the delivery queue alone, and says so, when the target names no redrive queue', async () => {
    const { ctx } = context({ read: async () => metrics }, { queues: { [QUEUE_URL]: depth(0, 1, 0) } });

    const result = await statsCommand(ctx, { maxRowsPerState: 100 });

    expect(result.json).toMatchObject({ pendingCount: 1, redriveQueue: null, deadLetterQueue: null });
    expect(result.human).toMatch(/^redrive queue +n\/a \(the target names no redrive queue\)$/m);
    expect(result.human).toMatch(/^pending: the messages on the delivery queue \(waiting, in flight, delayed; the target names no redrive queue\)/m);
  });

  it('gives no pending count (null) when the target names no delivery queue', async () => {
    const { ctx } = context({ read: async () => metrics });

    const result = await statsCommand(ctx, { maxRowsPerState: 100 });

    expect(result.json).toMatchObject({ pendingCount: null, queue: null });
    expect(result.human).toMatch(/^pending +n\/a \(the target names no delivery queue\)$/m);
  });

  it("with an endpoint, reads that endpoint's dead rows and metrics only, and gives no pending count: the queues are shared", async () => {
    const { ctx, listOptions, reads } = context({ read: async () => metrics }, { queues: { [QUEUE_URL]: depth(5, 0, 0), [REDRIVE_URL]: depth(0, 0, 0) } });

    const result = await statsCommand(ctx, { maxRowsPerState: 100, endpoint: 'billing' });

    expect(listOptions.map((o) => o.endpoint)).toEqual(['billing']);
    expect(reads).toEqual([{ endpoint: 'billing' }]);
    expect(result.json).toMatchObject({
      endpoint: 'billing',
      pendingCount: null,
      oldestPendingAgeMs: 185_000,
      deadCount: 1,
      deliveredCount: 8,
      queue: { visible: 5 },
      sources: {
        pending: 'n/a with an endpoint: the queues are shared by every endpoint',
        dead: "the ledger's dead rows of endpoint billing",
        metrics: 'the test reader, endpoint billing only',
        queues: "SQS's approximate counts of the whole queues, which every endpoint shares",
      },
    });
    expect(result.json).not.toHaveProperty('byEndpoint');
    const lines = result.human.split('\n');
    expect(lines[0]).toMatch(/^endpoint +billing$/);
    expect(lines[1]).toMatch(/^pending +n\/a \(the queues are shared by every endpoint\)$/);
  });

  it('without an endpoint, gives the totals and splits the dead count by endpoint from the rows it read', async () => {
    const { ctx, listOptions, reads } = context({ read: async () => metrics });

    const result = await statsCommand(ctx, { maxRowsPerState: 100 });

    expect(listOptions.map((o) => o.endpoint)).toEqual([undefined]);
    expect(reads).toEqual([{}]);
    expect(result.json).toMatchObject({ endpoint: null, deadCount: 2, byEndpoint: { billing: { deadCount: 1 }, crm: { deadCount: 1 } } });
    expect(result.human.split('\n')).toEqual(expect.arrayContaining([expect.stringMatching(/^ {2}billing +1 dead$/), expect.stringMatching(/^ {2}crm +1 dead$/)]));
  });

  it('says when it stopped reading dead rows at --max-rows', async () => {
    const { ctx } = context({ read: async () => metrics }, { deadRows: [{ endpoint: 'a' }, { endpoint: 'a' }, { endpoint: 'b' }] });

    const result = await statsCommand(ctx, { maxRowsPerState: 2 });

    expect(result.json).toMatchObject({ deadCount: 2, capped: { dead: true }, maxRowsPerState: 2 });
    expect(result.human).toMatch(/^dead +at least 2$/m);
    expect(result.human).toContain('note: read at most 2 dead rows; raise --max-rows for an exact figure');
  });

  it("counts each registry endpoint's parked deliveries from the parked listing, beside its dead ones, with an endpoint parked only", async () => {
    const { ctx, counted } = context({ read: async () => metrics }, { registry: ['billing', 'crm', 'ops'], parked: { billing: 3, ops: 2 } });

    const result = await statsCommand(ctx, { maxRowsPerState: 100 });

    expect(counted).toEqual([
      { state: 'parked', endpoint: 'billing' },
      { state: 'parked', endpoint: 'crm' },
      { state: 'parked', endpoint: 'ops' },
    ]);
    expect(result.json).toMatchObject({
      parkedCount: 5,
      byEndpoint: {
        billing: { deadCount: 1, parkedCount: 3 },
        crm: { deadCount: 1, parkedCount: 0 },
        ops: { deadCount: 0, parkedCount: 2 },
      },
      sources: { parked: "the ledger's parked listing of each endpoint in the registry" },
    });
    const lines = result.human.split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^parked +5$/),
        expect.stringMatching(/^ {2}billing +1 dead, 3 parked$/),
        expect.stringMatching(/^ {2}ops +0 dead, 2 parked$/),
        "parked: the ledger's parked listing of each endpoint in the registry, now",
      ]),
    );
  });

  it("with an endpoint, counts that endpoint's parked deliveries alone, without reading the registry", async () => {
    const { ctx, counted } = context({ read: async () => metrics }, { parked: { billing: 4, crm: 9 } });

    const result = await statsCommand(ctx, { maxRowsPerState: 100, endpoint: 'billing' });

    expect(counted).toEqual([{ state: 'parked', endpoint: 'billing' }]);
    expect(result.json).toMatchObject({ endpoint: 'billing', parkedCount: 4, sources: { parked: "the ledger's parked listing of endpoint billing" } });
    expect(result.human).toMatch(/^parked +4$/m);
  });

  it('says parked is n/a (JSON null) when the target names no endpoint registry', async () => {
    const { ctx, counted } = context({ read: async () => metrics });

    const result = await statsCommand(ctx, { maxRowsPerState: 100 });

    expect(counted).toEqual([]);
    expect(result.json).toMatchObject({ parkedCount: null, byEndpoint: { billing: { deadCount: 1 } } });
    expect(result.human).toMatch(/^parked +n\/a \(no endpoint registry in the target\)$/m);
  });

  it('says the oldest message received is n/a (JSON null) when none was received in the window', async () => {
    const { ctx } = context({ read: async () => ({ ...metrics, oldestPendingAgeMs: null }) });

    const result = await statsCommand(ctx, { maxRowsPerState: 100 });

    expect(result.json).toMatchObject({ oldestPendingAgeMs: null });
    expect(result.human).toMatch(/^oldest received +n\/a \(no message received in the last 24 h\)$/m);
  });

  it('shortens a window longer than the source keeps, and says so', async () => {
    const { ctx, windows } = context({ read: async () => metrics });

    const result = await statsCommand(ctx, { maxRowsPerState: 100, sinceMs: 7 * 24 * HOUR_MS });

    expect(windows).toEqual([{ startMs: NOW_MS - 24 * HOUR_MS, endMs: NOW_MS }]);
    expect(result.human).toContain('note: the metrics cover the last 24 h, not 7 d: the test reader keeps no more');
  });

  it('prints the dead count and the queues with the metrics figures n/a, and fails naming why, when the metrics cannot be read', async () => {
    const { ctx } = context({ read: async () => Promise.reject(new MetricsUnavailableError('no permission')) }, { queues: { [QUEUE_URL]: depth(0, 2, 0) } });

    const result = await statsCommand(ctx, { maxRowsPerState: 100 });

    expect(result.failure).toBe('metrics unavailable: no permission');
    expect(result.json).toMatchObject({ pendingCount: 2, oldestPendingAgeMs: null, deadCount: 2, deliveredCount: null, retryRate: null, metricsError: 'no permission' });
    expect(result.human).toMatch(/^delivered\s+n\/a$/m);
    expect(result.human).toMatch(/^oldest received\s+n\/a$/m);
  });
});
