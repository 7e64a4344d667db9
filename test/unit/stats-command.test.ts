import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from 'commander';
import { describeSince, parseSince, sinceOption, statsCommand } from '../../cli/commands/stats';
import type { CommandContext } from '../../cli/context';
import type { DeliveryRecord, DeliveryState, ListOptions, Page } from '../../lib/ledger/ledger';
import {
  MetricsUnavailableError,
  type DeliveryMetrics,
  type MetricsReader,
  type MetricsReadOptions,
  type MetricsWindow,
} from '../../lib/metrics/metrics-reader';

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

  /**
   * A context over a ledger listing and a metrics reader; no queue URLs, so no SQS call. With
   * `registry`, the target names an endpoint registry holding those endpoints, and `parked` is each
   * endpoint's parked count as the ledger's countByState gives it.
   */
  function context(reader: Partial<MetricsReader> & Pick<MetricsReader, 'read'>, parking: { registry?: string[]; parked?: Record<string, number> } = {}) {
    const windows: MetricsWindow[] = [];
    const reads: MetricsReadOptions[] = [];
    const listed: DeliveryState[] = [];
    const listOptions: ListOptions[] = [];
    const counted: { state: string; endpoint: string | undefined }[] = [];
    const rows: Partial<Record<DeliveryState, Partial<DeliveryRecord>[]>> = {
      pending: [{ stateSince: NOW_MS - 5_000, endpoint: 'billing' }],
      dead: [{ endpoint: 'billing' }, { endpoint: 'crm' }],
    };
    const ctx = {
      now: () => NOW_MS,
      target: { description: 'a test', connection: { kind: 'aws' }, ...(parking.registry !== undefined ? { endpointsTable: 'handoff-endpoints' } : {}) },
      registry: () => ({
        scan: async () => ({ records: (parking.registry ?? []).map((name) => ({ fields: { name } })), unreadable: [] }),
      }),
      ledger: () => ({
        listByState: async (state: DeliveryState, options: ListOptions = {}): Promise<Page> => {
          listed.push(state);
          listOptions.push(options);
          const records = (rows[state] ?? []).filter((r) => options.endpoint === undefined || r.endpoint === options.endpoint);
          return { records: records as DeliveryRecord[] };
        },
        countByState: async (state: string, options: { endpoint?: string } = {}): Promise<number> => {
          counted.push({ state, endpoint: options.endpoint });
          return state === 'parked' && options.endpoint !== undefined ? (parking.parked?.[options.endpoint] ?? 0) : 0;
        },
      }),
      metrics: (): MetricsReader => ({
        source: 'the test reader',
        percentileMethod: 'exact',
        maxWindowMs: 24 * HOUR_MS,
        ...reader,
        read: (window, options = {}) => (windows.push(window), reads.push(options), reader.read(window)),
      }),
    } as unknown as CommandContext;
    return { ctx, windows, listed, listOptions, reads, counted };
  }

  const metrics: DeliveryMetrics = { delivered: 8, attempts: 10, retriedAttempts: 2, deadLettered: 1, latency: { samples: 8, p50Ms: 50, p99Ms: 900 } };

  it('lists only pending and dead rows, and reads the delivery figures from the metrics over the window', async () => {
    const { ctx, windows, listed } = context({ read: async () => metrics });

    const result = await statsCommand(ctx, { maxRowsPerState: 100, sinceMs: 6 * HOUR_MS });

    expect(new Set(listed)).toEqual(new Set(['pending', 'dead']));
    expect(windows).toEqual([{ startMs: NOW_MS - 6 * HOUR_MS, endMs: NOW_MS }]);
    expect(result.failure).toBeUndefined();
    expect(result.json).toMatchObject({
      pendingCount: 1,
      oldestPendingAgeMs: 5_000,
      deadCount: 2,
      deliveredCount: 8,
      retryRate: 0.2,
      latencyMs: { p50: 50, p99: 900 },
      sources: { metrics: 'the test reader' },
      window: { since: '6h' },
    });
    expect(result.human).toContain('delivered, retry rate, latency: the test reader, the last 6 h; percentiles over 8 deliveries, exact');
  });

  it("with an endpoint, reads that endpoint's rows and metrics only, and says the queues' depths are the whole queues'", async () => {
    const { ctx, listOptions, reads } = context({ read: async () => metrics });

    const result = await statsCommand(ctx, { maxRowsPerState: 100, endpoint: 'billing' });

    expect(listOptions.map((o) => o.endpoint)).toEqual(['billing', 'billing']);
    expect(reads).toEqual([{ endpoint: 'billing' }]);
    expect(result.json).toMatchObject({
      endpoint: 'billing',
      pendingCount: 1,
      deadCount: 1,
      deliveredCount: 8,
      sources: {
        backlog: "the ledger's pending and dead rows of endpoint billing",
        metrics: 'the test reader, endpoint billing only',
        queues: "SQS's approximate counts of the whole queues, which every endpoint shares",
      },
    });
    expect(result.json).not.toHaveProperty('byEndpoint');
    expect(result.human.split('\n')[0]).toMatch(/^endpoint +billing$/);
  });

  it('without an endpoint, gives the totals and splits the backlog by endpoint from the rows it read', async () => {
    const { ctx, listOptions, reads } = context({ read: async () => metrics });

    const result = await statsCommand(ctx, { maxRowsPerState: 100 });

    expect(listOptions.map((o) => o.endpoint)).toEqual([undefined, undefined]);
    expect(reads).toEqual([{}]);
    expect(result.json).toMatchObject({
      endpoint: null,
      pendingCount: 1,
      deadCount: 2,
      byEndpoint: { billing: { pendingCount: 1, deadCount: 1 }, crm: { pendingCount: 0, deadCount: 1 } },
    });
    expect(result.human.split('\n')).toEqual(expect.arrayContaining([expect.stringMatching(/^ {2}billing +1 pending, 1 dead$/), expect.stringMatching(/^ {2}crm +0 pending, 1 dead$/)]));
  });

  it("counts each registry endpoint's parked deliveries from the parked listing, apart from pending, with an endpoint parked only", async () => {
    const { ctx, counted } = context({ read: async () => metrics }, { registry: ['billing', 'crm', 'ops'], parked: { billing: 3, ops: 2 } });

    const result = await statsCommand(ctx, { maxRowsPerState: 100 });

    expect(counted).toEqual([
      { state: 'parked', endpoint: 'billing' },
      { state: 'parked', endpoint: 'crm' },
      { state: 'parked', endpoint: 'ops' },
    ]);
    expect(result.json).toMatchObject({
      pendingCount: 1,
      parkedCount: 5,
      byEndpoint: {
        billing: { pendingCount: 1, deadCount: 1, parkedCount: 3 },
        crm: { pendingCount: 0, deadCount: 1, parkedCount: 0 },
        ops: { pendingCount: 0, deadCount: 0, parkedCount: 2 },
      },
      sources: { parked: "the ledger's parked listing of each endpoint in the registry" },
    });
    const lines = result.human.split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^parked +5$/),
        expect.stringMatching(/^ {2}billing +1 pending, 1 dead, 3 parked$/),
        expect.stringMatching(/^ {2}ops +0 pending, 0 dead, 2 parked$/),
        "parked: the ledger's parked listing of each endpoint in the registry, now",
      ]),
    );
  });

  it("with an endpoint, counts that endpoint's parked deliveries alone, without reading the registry", async () => {
    const { ctx, counted } = context({ read: async () => metrics }, { parked: { billing: 4, crm: 9 } });

    const result = await statsCommand(ctx, { maxRowsPerState: 100, endpoint: 'billing' });

    expect(counted).toEqual([{ state: 'parked', endpoint: 'billing' }]);
    expect(result.json).toMatchObject({ endpoint: 'billing', pendingCount: 1, parkedCount: 4, sources: { parked: "the ledger's parked listing of endpoint billing" } });
    expect(result.human).toMatch(/^parked +4$/m);
  });

  it('says parked is n/a (JSON null) when the target names no endpoint registry', async () => {
    const { ctx, counted } = context({ read: async () => metrics });

    const result = await statsCommand(ctx, { maxRowsPerState: 100 });

    expect(counted).toEqual([]);
    expect(result.json).toMatchObject({ parkedCount: null, byEndpoint: { billing: { pendingCount: 1, deadCount: 1 } } });
    expect(result.human).toMatch(/^parked +n\/a \(no endpoint registry in the target\)$/m);
  });

  it('shortens a window longer than the source keeps, and says so', async () => {
    const { ctx, windows } = context({ read: async () => metrics });

    const result = await statsCommand(ctx, { maxRowsPerState: 100, sinceMs: 7 * 24 * HOUR_MS });

    expect(windows).toEqual([{ startMs: NOW_MS - 24 * HOUR_MS, endMs: NOW_MS }]);
    expect(result.human).toContain('note: the metrics cover the last 24 h, not 7 d: the test reader keeps no more');
  });

  it('prints the backlog with the delivery figures n/a, and fails naming why, when the metrics cannot be read', async () => {
    const { ctx } = context({ read: async () => Promise.reject(new MetricsUnavailableError('no permission')) });

    const result = await statsCommand(ctx, { maxRowsPerState: 100 });

    expect(result.failure).toBe('metrics unavailable: no permission');
    expect(result.json).toMatchObject({ deadCount: 2, deliveredCount: null, retryRate: null, metricsError: 'no permission' });
    expect(result.human).toMatch(/^delivered\s+n\/a$/m);
  });
});
