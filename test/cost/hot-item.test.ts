/**
 * The hot-item simulation (scripts/cost/hot-item.ts), small: an endpoint failing at 200 deliveries a
 * simulated second over 4 consumers, through the real consumer on dynalite behind the meter. What
 * it asserts are counts the design bounds, whatever the machine's speed: every delivery decided
 * once; a ledger row written twice (its claim and its record); the endpoint's registry item written
 * by health at most once a second per consumer (a flush, or the breaker's pause carrying it) and once
 * more for the run's beginning, where one write per failed attempt would be 200.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pointAwsAt } from '../../scripts/cost/consumers';
import { runHotItem, type HotItemResult } from '../../scripts/cost/hot-item';
import { startMeteredDynalite, type MeteredDynalite } from '../helpers/metered-dynalite';

let dynamodb: MeteredDynalite;

beforeAll(async () => {
  dynamodb = await startMeteredDynalite();
  pointAwsAt(dynamodb.meter.endpoint);
});

afterAll(async () => {
  await dynamodb?.close();
});

const small = { perSecond: 200, seconds: 3, consumers: 4 } as const;
const decided = (r: HotItemResult) => Object.values(r.decisions).reduce((sum, n) => sum + n, 0);

describe('Function: runHotItem', () => {
  it('503 without Retry-After: every delivery retried, the registry item written at most once a second per consumer and once for the run', async () => {
    const result = await runHotItem({ meter: dynamodb.meter, direct: dynamodb.direct, prefix: 'hot-test-503', failure: '503', ...small });

    expect(result.decisions).toEqual({ 'retry:temporary': 600 });
    expect(result.ledger.writes).toBe(2);
    expect(result.registry.schedule.writes).toBe(0);
    expect(result.registry.health.writes).toBeGreaterThan(0);
    expect(result.registry.health.writes).toBeLessThanOrEqual(small.consumers + 1);
    expect(result.any.writes).toBe(Math.max(result.registry.all.writes, result.ledger.writes));
  }, 120_000);

  it("connection refused: the breaker holds the rest without attempts, each consumer's pause carrying its run's first failure in one write", async () => {
    const result = await runHotItem({ meter: dynamodb.meter, direct: dynamodb.direct, prefix: 'hot-test-refused', failure: 'refused', ...small });

    expect(decided(result)).toBe(600);
    expect(Object.keys(result.decisions).sort()).toEqual(['retry:paused', 'retry:temporary']);
    expect(result.ledger.writes).toBe(2);
    expect(result.registry.health.writes).toBeLessThanOrEqual(small.consumers + 1);
  }, 120_000);

  it('503 with a rate limit at the delivery rate: the schedule written at most about once a second per consumer too', async () => {
    const result = await runHotItem({ meter: dynamodb.meter, direct: dynamodb.direct, prefix: 'hot-test-limited', failure: '503', rateLimitPerSecond: small.perSecond, ...small });

    expect(decided(result)).toBe(600);
    expect(result.registry.health.writes).toBeLessThanOrEqual(small.consumers + 1);
    expect(result.registry.schedule.writes).toBeGreaterThan(0);
    expect(result.registry.schedule.writes).toBeLessThanOrEqual(4 * small.consumers);
    // Two items: the schedule's writes never add to health's.
    expect(result.registry.schedule.item).not.toBe(result.registry.health.item);
    expect(result.registry.all.writes).toBe(Math.max(result.registry.health.writes, result.registry.schedule.writes));
  }, 120_000);
});
