/**
 * The cost arithmetic of `npm run cost` (scripts/cost/prices.ts): SQS's 64 KB billing chunks,
 * Lambda's GB-seconds at the stack's memory size, and dollars per million delivered events, worked
 * out by hand.
 */
import { describe, expect, it } from 'vitest';
import { costPerMillionEvents, lambdaGbSeconds, PRICES, sqsBilledRequests } from '../../scripts/cost/prices';

describe('Function: sqsBilledRequests', () => {
  it('bills each started 64 KB of payload as one request, and at least one', () => {
    expect([sqsBilledRequests(0), sqsBilledRequests(65_536), sqsBilledRequests(65_537), sqsBilledRequests(200_000)]).toEqual([
      1, 1, 2, 4,
    ]);
  });
});

describe('Function: lambdaGbSeconds', () => {
  it('rounds each invocation up to the millisecond and scales by memory', () => {
    // (11 + 20) ms at 256 MB = 0.031 s × 0.25 GB.
    expect(lambdaGbSeconds([10.2, 20], 256)).toBeCloseTo(0.00775, 12);
  });
});

describe('Function: costPerMillionEvents', () => {
  it('prices each service at the published rates', () => {
    const cost = costPerMillionEvents({
      writeUnits: 2,
      readUnits: 4,
      sqsRequests: 0.2,
      lambdaGbSeconds: 0.00075,
      lambdaInvocations: 0.1,
    });
    // DynamoDB: 2 × 0.625 + 4 × 0.125 = 1.75. SQS: 0.2 × 0.40 = 0.08.
    // Lambda: 750 GB-s per million × 0.0000133334 = 0.01000005, plus 100,000 invocations × 0.20 / 1e6 = 0.02.
    expect(cost.dynamodb).toBeCloseTo(1.75, 10);
    expect(cost.sqs).toBeCloseTo(0.08, 10);
    expect(cost.lambda).toBeCloseTo(0.03000005, 10);
    expect(cost.total).toBeCloseTo(1.86000005, 10);
  });

  it('names the region and the date of its prices', () => {
    expect(PRICES.region).toBe('us-east-1');
    expect(PRICES.asOf).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });
});
