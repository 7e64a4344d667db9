import { describe, expect, it } from 'vitest';
import {
  batchItemFailures,
  fromFifoQueue,
  inGroupOrder,
  messageGroupIdFor,
  messageGroupOf,
  MESSAGE_GROUP_ID,
} from '../../lib/fifo';

const FIFO_ARN = 'arn:aws:sqs:us-east-1:123456789012:Handoff-Ordered.fifo';
const STANDARD_ARN = 'arn:aws:sqs:us-east-1:123456789012:Handoff-Delivery';

interface TestRecord {
  readonly messageId: string;
  readonly eventSourceARN: string;
  readonly attributes: { readonly MessageGroupId?: string };
}

const fifo = (messageId: string, group: string, arn = FIFO_ARN): TestRecord => ({
  messageId,
  eventSourceARN: arn,
  attributes: { MessageGroupId: group },
});
const standard = (messageId: string): TestRecord => ({ messageId, eventSourceARN: STANDARD_ARN, attributes: {} });

/**
 * A handler whose calls the test settles one by one: `started` lists what began, in order, and
 * `settle(id, failed)` ends that call. Lets a test see what runs at once with no timing.
 */
function scripted() {
  const started: string[] = [];
  const pending = new Map<string, (failed: boolean | Error) => void>();
  const waiters: (() => void)[] = [];
  const handle = (record: TestRecord) =>
    new Promise<boolean>((resolve, reject) => {
      started.push(record.messageId);
      pending.set(record.messageId, (answer) => (answer instanceof Error ? reject(answer) : resolve(answer)));
      waiters.splice(0).forEach((wake) => wake());
    });
  /** Resolves once `count` calls have started. */
  const startedCount = async (count: number) => {
    while (started.length < count) await new Promise<void>((wake) => waiters.push(wake));
  };
  const settle = async (id: string, answer: boolean | Error) => {
    const end = pending.get(id);
    if (!end) throw new Error(`${id} has not started`);
    pending.delete(id);
    end(answer);
    // Let the group's next record start, if it is going to.
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { started, handle, settle, startedCount };
}

describe('Function: fromFifoQueue, messageGroupOf', () => {
  it("reads a FIFO record's group, and none from a standard queue's record even if it carries one", () => {
    expect(fromFifoQueue(fifo('m1', 'shp_1'))).toBe(true);
    expect(messageGroupOf(fifo('m1', 'shp_1'))).toBe('shp_1');
    expect(fromFifoQueue(standard('m2'))).toBe(false);
    expect(messageGroupOf({ eventSourceARN: STANDARD_ARN, attributes: { MessageGroupId: 'shp_1' } })).toBeUndefined();
    expect(messageGroupOf({ attributes: { MessageGroupId: 'shp_1' } })).toBeUndefined();
    expect(messageGroupOf({ eventSourceARN: FIFO_ARN, attributes: {} })).toBeUndefined();
  });
});

describe('Function: inGroupOrder', () => {
  it("handles a group's records one after another in batch order, each once the one before has settled", async () => {
    // Prepare
    const h = scripted();
    const records = [fifo('a1', 'A'), fifo('a2', 'A'), fifo('a3', 'A')];

    // Act
    const result = inGroupOrder(records, h.handle);
    await h.startedCount(1);
    const afterFirstStart = [...h.started];
    await h.settle('a1', false);
    const afterFirstSettled = [...h.started];
    await h.settle('a2', false);
    await h.settle('a3', false);

    // Assess
    expect(afterFirstStart).toEqual(['a1']);
    expect(afterFirstSettled).toEqual(['a1', 'a2']);
    expect(await result).toEqual([false, false, false]);
  });

  it('runs different groups at the same time, each in its own order', async () => {
    const h = scripted();
    const records = [fifo('a1', 'A'), fifo('b1', 'B'), fifo('a2', 'A'), fifo('c1', 'C'), fifo('b2', 'B')];

    const result = inGroupOrder(records, h.handle);
    await h.startedCount(3);
    const firstWave = [...h.started].sort();
    await h.settle('b1', false);
    await h.startedCount(4);
    const afterB1 = h.started[3];
    await h.settle('a1', false);
    await h.startedCount(5);
    const afterA1 = h.started[4];
    for (const id of ['c1', 'b2', 'a2']) await h.settle(id, false);

    expect(firstWave).toEqual(['a1', 'b1', 'c1']);
    expect(afterB1).toBe('b2');
    expect(afterA1).toBe('a2');
    expect(await result).toEqual([false, false, false, false, false]);
  });

  it("after a group's first failure reports its later records without handling them; other groups go on", async () => {
    // Prepare
    const h = scripted();
    const records = [fifo('a1', 'A'), fifo('a2', 'A'), fifo('b1', 'B'), fifo('a3', 'A'), fifo('b2', 'B')];

    // Act
    const result = inGroupOrder(records, h.handle);
    await h.startedCount(2);
    await h.settle('a1', false);
    await h.settle('a2', true);
    await h.settle('b1', false);
    await h.settle('b2', false);

    // Assess: a3 never ran, and is reported after a2.
    expect(await result).toEqual([false, true, false, true, false]);
    expect(h.started).not.toContain('a3');
    expect(batchItemFailures(records, await result)).toEqual([{ itemIdentifier: 'a2' }, { itemIdentifier: 'a3' }]);
  });

  it("reports a whole group when its first record fails, and handles none of the rest", async () => {
    const calls: string[] = [];

    const reported = await inGroupOrder([fifo('a1', 'A'), fifo('a2', 'A'), fifo('a3', 'A')], async (record) => {
      calls.push(record.messageId);
      return true;
    });

    expect(reported).toEqual([true, true, true]);
    expect(calls).toEqual(['a1']);
  });

  it('counts a handler that throws as a failure of its record, stops its group, and passes the error on', async () => {
    const errors: [string, string][] = [];

    const reported = await inGroupOrder(
      [fifo('a1', 'A'), fifo('a2', 'A'), fifo('b1', 'B')],
      async (record) => {
        if (record.messageId === 'a1') throw new Error('ledger unavailable');
        return false;
      },
      (error, record) => errors.push([record.messageId, (error as Error).message]),
    );

    expect(reported).toEqual([true, true, false]);
    expect(errors).toEqual([['a1', 'ledger unavailable']]);
  });

  it("leaves records without a group as they are: each handled once, all at once, a failure stopping nothing else", async () => {
    // Prepare
    const h = scripted();
    const records = [standard('s1'), standard('s2'), standard('s3')];

    // Act: all three start before any settles.
    const result = inGroupOrder(records, h.handle);
    await h.startedCount(3);
    await h.settle('s1', true);
    await h.settle('s2', false);
    await h.settle('s3', false);

    // Assess
    expect([...h.started].sort()).toEqual(['s1', 's2', 's3']);
    expect(await result).toEqual([true, false, false]);
  });

  it('keeps groups of the same name on two FIFO queues apart', async () => {
    const other = 'arn:aws:sqs:us-east-1:123456789012:Other.fifo';
    const calls: string[] = [];

    const reported = await inGroupOrder([fifo('q1', 'A'), fifo('r1', 'A', other), fifo('q2', 'A')], async (record) => {
      calls.push(record.messageId);
      return record.messageId === 'q1';
    });

    expect(reported).toEqual([true, false, true]);
    expect(calls.sort()).toEqual(['q1', 'r1']);
  });

  it('answers an empty batch with an empty list, and a non-FIFO record with a group is handled on its own', async () => {
    expect(await inGroupOrder([], async () => true)).toEqual([]);
    const withGroup = { messageId: 'x', eventSourceARN: STANDARD_ARN, attributes: { MessageGroupId: 'A' } };
    const calls: string[] = [];
    const reported = await inGroupOrder([withGroup, { ...withGroup, messageId: 'y' }], async (record) => {
      calls.push(record.messageId);
      return record.messageId === 'x';
    });
    expect(reported).toEqual([true, false]);
    expect(calls).toEqual(['x', 'y']);
  });
});

describe('Function: messageGroupIdFor', () => {
  it('is the shipment ID itself where SQS accepts it as a group ID', () => {
    for (const id of ['shp_1', 'SHP-2026/12:03.x', '!#$%&()*+,-./:;<=>?@[]^_`{|}~', 'a'.repeat(128)]) {
      expect(messageGroupIdFor(id)).toBe(id);
    }
  });

  it('is sha256: and the hex digest for an ID with a space, beyond ASCII, or longer than 128', () => {
    const ids = ['shp 1', 'shp_ü', 'a'.repeat(129)];
    const groups = ids.map(messageGroupIdFor);

    for (const group of groups) {
      expect(group).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(group).toMatch(MESSAGE_GROUP_ID);
    }
    // Stable: every event of the shipment lands in the same group; different shipments apart.
    expect(ids.map(messageGroupIdFor)).toEqual(groups);
    expect(new Set(groups).size).toBe(3);
    // The known digest of "shp 1", so a producer in another language can compute the same group.
    expect(messageGroupIdFor('shp 1')).toBe('sha256:5638c4084405e507d7fc75c151a895e85a78e7d216472b9b3554b2dcf45db185');
  });
});
