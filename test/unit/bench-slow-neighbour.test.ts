/**
 * The slow-neighbour bench's pure parts (bench/slow-neighbour.ts): where the neighbour's events sit
 * in a send of ten, the healthy endpoint's ratio, and the table.
 */
import { describe, expect, it } from 'vitest';
import { neighbourRatio, neighbourSlots, SLOW_NEIGHBOUR_DEFAULTS, slowNeighbourMarkdown, type NeighbourRun } from '../../bench/slow-neighbour';

describe('Function: neighbourSlots', () => {
  it('spreads the neighbour\'s events over the ten of a send', () => {
    expect([...neighbourSlots(2)]).toEqual([2, 7]);
    expect([...neighbourSlots(1)]).toEqual([5]);
    expect([...neighbourSlots(5)]).toEqual([1, 3, 5, 7, 9]);
    expect(neighbourSlots(0).size).toBe(0);
    expect(neighbourSlots(10).size).toBe(10);
  });
});

describe('Function: neighbourRatio and slowNeighbourMarkdown', () => {
  const run = (mode: NeighbourRun['mode'], perSecond: number, late: number): NeighbourRun => ({
    mode,
    seconds: 40,
    healthySent: perSecond * 40 + 100,
    healthyDelivered: perSecond * 40,
    healthyPerSecond: perSecond,
    healthyPerSecondLate: late,
    neighbourSent: perSecond * 10,
    neighbourRequests: mode === 'answers' ? perSecond * 10 : 40,
    neighbourDelivered: mode === 'answers' ? perSecond * 10 : 0,
    batches: { count: 600, medianMs: 120, p90Ms: 300, atLeastTimeout: mode === 'answers' ? 0 : 20 },
    pausedLines: mode === 'answers' ? 0 : 9,
    timeline: { healthyPerTenSeconds: [], slowBatchesAt: [] },
    perHealthyDelivery: { dynamodbWrites: 2.5, dynamodbReads: 0, dynamodbBytesSent: 900, dynamodbBytesReceived: 300, handlerSqs: 0.1, pollerSqs: 0.2, handlerCpuMs: 6 },
    requests: { handler: {}, poller: {}, producer: {}, setup: {} },
    repeats: 0,
    failedBatches: 0,
  });

  it('is the rate with the timing-out neighbour over the rate with the answering one, whole window or second half', () => {
    const runs = [run('answers', 120, 125), run('times-out', 108, 120)];

    expect(neighbourRatio(runs)).toBeCloseTo(0.9);
    expect(neighbourRatio(runs, (r) => r.healthyPerSecondLate)).toBeCloseTo(0.96);
    expect(neighbourRatio([runs[0]!])).toBeNaN();
  });

  it('prints both runs side by side and the verdict against 0.8', () => {
    const table = slowNeighbourMarkdown({ options: SLOW_NEIGHBOUR_DEFAULTS, runs: [run('answers', 120, 125), run('times-out', 90, 100)], ratio: 0.75, ratioLate: 0.8 });

    expect(table).toContain('| answers 200 | 4800/4900 | 120 | 125 |');
    expect(table).toContain('| times out (1000 ms) | 3600/3700 | 90 | 100 | 40 / 900 | 600 (20) | 120 / 300 | 9 |');
    expect(table).toContain('0.75x (target ≥ 0.80: MISSED); second half 0.80x (target ≥ 0.80: met)');
  });
});
