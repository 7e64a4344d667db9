import { describe, expect, it } from 'vitest';
import { settle } from '../../sandbox/poller';

const ids = ['m1', 'm2', 'm3'];

describe('Function: settle (Lambda reading a partial batch response)', () => {
  it('deletes every record not listed as a failure and keeps the listed ones', () => {
    // Act
    const settlement = settle(ids, { kind: 'returned', response: { batchItemFailures: [{ itemIdentifier: 'm2' }] } });

    // Assess
    expect(settlement).toEqual({ kind: 'settled', deleteIds: ['m1', 'm3'], keptIds: ['m2'] });
  });

  it.each([
    ['an empty failure list', { batchItemFailures: [] }],
    ['a null failure list', { batchItemFailures: null }],
    ['an empty response', {}],
    ['a null response', null],
  ])('reads %s as complete success', (_, response) => {
    expect(settle(ids, { kind: 'returned', response })).toEqual({ kind: 'settled', deleteIds: ids, keptIds: [] });
  });

  it.each([
    ['an empty itemIdentifier', { batchItemFailures: [{ itemIdentifier: '' }] }],
    ['a null itemIdentifier', { batchItemFailures: [{ itemIdentifier: null }] }],
    ['a missing itemIdentifier', { batchItemFailures: [{ id: 'm1' }] }],
    ['an unknown itemIdentifier', { batchItemFailures: [{ itemIdentifier: 'm1' }, { itemIdentifier: 'elsewhere' }] }],
    ['a failure list that is not a list', { batchItemFailures: 'm1' }],
    ['a response that is not an object', 'ok'],
  ])('fails the whole batch on %s', (_, response) => {
    expect(settle(ids, { kind: 'returned', response }).kind).toBe('batch-failed');
  });

  it.each([
    [{ kind: 'threw', error: 'Error: boom' }],
    [{ kind: 'timed-out' }],
    [{ kind: 'worker-died', detail: 'killed by SIGKILL' }],
  ] as const)('fails the whole batch when the invocation ended as %o', (invocation) => {
    expect(settle(ids, invocation).kind).toBe('batch-failed');
  });
});
