import { describe, expect, it } from 'vitest';
import { admitByGroup, isFifoSource, settle } from '../../sandbox/poller';

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

describe('Function: isFifoSource', () => {
  it('tells a FIFO queue by the `.fifo` ending of its name', () => {
    expect(isFifoSource({ queueArn: 'arn:aws:sqs:us-east-1:000000000000:handoff-ordered.fifo' })).toBe(true);
    expect(isFifoSource({ queueArn: 'arn:aws:sqs:us-east-1:000000000000:handoff-deliveries' })).toBe(false);
  });
});

describe('Function: admitByGroup (one batch per message group in flight)', () => {
  const message = (id: string, group?: string) => ({
    MessageId: id,
    ...(group !== undefined ? { Attributes: { MessageGroupId: group } } : {}),
  });

  it('hands over every message when none of their groups is in a batch in flight', () => {
    const received = [message('a1', 'A'), message('a2', 'A'), message('b1', 'B')];

    const { admitted, returned } = admitByGroup(received, new Set(['C']));

    expect(admitted.map((m) => m.MessageId)).toEqual(['a1', 'a2', 'b1']);
    expect(returned).toEqual([]);
  });

  it("puts back all of a busy group's messages, keeping the others in their order", () => {
    const received = [message('a1', 'A'), message('b1', 'B'), message('a2', 'A'), message('c1', 'C'), message('x')];

    const { admitted, returned } = admitByGroup(received, new Set(['A']));

    expect(admitted.map((m) => m.MessageId)).toEqual(['b1', 'c1', 'x']);
    expect(returned.map((m) => m.MessageId)).toEqual(['a1', 'a2']);
  });
});
