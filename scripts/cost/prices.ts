/**
 * Published on-demand prices, and what a delivered event costs at them. The figures are AWS's
 * list prices for one region on one date: name both wherever a cost is shown.
 */

export const PRICES = {
  region: 'us-east-1',
  /** When these were the published prices (DynamoDB's on-demand rates since its November 2024 cut). */
  asOf: '2026-12-02',
  dynamodbPerMillionWriteUnits: 0.625,
  dynamodbPerMillionReadUnits: 0.125,
  /** Standard queues. A request carries up to 10 messages; each 64 KB of payload is one request. */
  sqsPerMillionRequests: 0.4,
  /** arm64, the stack's architecture. */
  lambdaPerGbSecond: 0.0000133334,
  lambdaPerMillionInvocations: 0.2,
} as const;

export type Prices = Omit<typeof PRICES, 'region' | 'asOf'>;

/** SQS bills each started 64 KB of a request's payload as one request. */
export const SQS_BILLING_CHUNK_BYTES = 64 * 1024;

export function sqsBilledRequests(payloadBytes: number): number {
  return Math.max(1, Math.ceil(payloadBytes / SQS_BILLING_CHUNK_BYTES));
}

/** What one delivered event used, on average: every figure per event. */
export interface UsagePerEvent {
  readonly writeUnits: number;
  readonly readUnits: number;
  readonly sqsRequests: number;
  readonly lambdaGbSeconds: number;
  readonly lambdaInvocations: number;
}

export interface CostPerMillion {
  readonly dynamodb: number;
  readonly sqs: number;
  readonly lambda: number;
  readonly total: number;
}

/** Dollars per million delivered events. */
export function costPerMillionEvents(usage: UsagePerEvent, prices: Prices = PRICES): CostPerMillion {
  const dynamodb = usage.writeUnits * prices.dynamodbPerMillionWriteUnits + usage.readUnits * prices.dynamodbPerMillionReadUnits;
  const sqs = usage.sqsRequests * prices.sqsPerMillionRequests;
  const lambda =
    usage.lambdaGbSeconds * prices.lambdaPerGbSecond * 1_000_000 + usage.lambdaInvocations * prices.lambdaPerMillionInvocations;
  return { dynamodb, sqs, lambda, total: dynamodb + sqs + lambda };
}

/**
 * GB-seconds Lambda bills for invocations of these durations at this memory size: each
 * invocation's duration rounded up to the millisecond.
 */
export function lambdaGbSeconds(durationsMs: readonly number[], memoryMb: number): number {
  const billedMs = durationsMs.reduce((sum, ms) => sum + Math.ceil(ms), 0);
  return (billedMs / 1000) * (memoryMb / 1024);
}
