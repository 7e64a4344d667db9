/**
 * The ordered intake's batch semantics (docs/contract.md §13): records from a FIFO queue, as Lambda's
 * FIFO event source hands them over, handled so that a shipment's order survives a failure.
 *
 * Lambda's contract for a FIFO queue with partial batch responses: the records of one message group
 * arrive in order, and a group's next records are not handed out while earlier ones are in flight.
 * The function must handle a group's records one after another, and once one of them fails it must
 * not handle the group's later records but report them as failures too: had a later record been
 * acknowledged, SQS would deliver the failed one after it. Different groups are independent and run
 * at once. Records without a group (a standard queue's) are not this module's business: each is
 * handled once, as its handler says, at once with the others.
 *
 * The module is pure: the caller supplies what handling a record means and gets, per record, whether
 * to report it as a failure (its `batchItemFailures` entry).
 */
import { createHash } from 'node:crypto';

/** What of an SQS record this module reads (a subset of aws-lambda's `SQSRecord`). */
export interface FifoRecordFields {
  readonly eventSourceARN?: string;
  readonly attributes?: { readonly MessageGroupId?: string };
}

/** Whether a record came from a FIFO queue: its queue's name (the ARN's last part) ends in `.fifo`. */
export function fromFifoQueue(record: FifoRecordFields): boolean {
  return record.eventSourceARN?.endsWith('.fifo') === true;
}

/**
 * The record's message group when it came from a FIFO queue; undefined otherwise (a standard queue's
 * record may carry no group, and one that does is not ordered by it).
 */
export function messageGroupOf(record: FifoRecordFields): string | undefined {
  if (!fromFifoQueue(record)) return undefined;
  const group = record.attributes?.MessageGroupId;
  return group === undefined || group === '' ? undefined : group;
}

/**
 * Handles the batch's records and says, per record in input order, whether to report it as a
 * failure:
 * - a record without a group: `handle(record)`'s answer, handled at once with the others;
 * - a group's records: one after another in batch order (which is the group's order), each started
 *   only once the one before it has settled; different groups at the same time. After the first of
 *   a group that is reported (or whose handler threw), the group's later records are not handled
 *   and are reported too, so they come back after it, in order.
 *
 * A handler that throws counts as a failure of its record (it did not finish, so it must come
 * back); the error goes to `onError` when given and never out of this function. Concurrency across
 * records and groups is the handler's to bound (a p-limit around it, say): this function starts a
 * group's next record only after the previous one settled, whatever the bound.
 */
export async function inGroupOrder<R extends FifoRecordFields>(
  records: readonly R[],
  handle: (record: R, index: number) => Promise<boolean>,
  onError?: (error: unknown, record: R, index: number) => void,
): Promise<boolean[]> {
  const reported = new Array<boolean>(records.length).fill(true);
  const run = async (index: number): Promise<boolean> => {
    const record = records[index]!;
    try {
      return await handle(record, index);
    } catch (error) {
      onError?.(error, record, index);
      return true;
    }
  };
  const groups = new Map<string, number[]>();
  const work: Promise<void>[] = [];
  records.forEach((record, index) => {
    const group = messageGroupOf(record);
    if (group === undefined) {
      work.push(run(index).then((failed) => void (reported[index] = failed)));
      return;
    }
    // Keyed by queue too: two FIFO queues' groups of one name are not one group.
    const key = `${record.eventSourceARN ?? ''}\n${group}`;
    const members = groups.get(key);
    if (members) members.push(index);
    else groups.set(key, [index]);
  });
  for (const members of groups.values()) {
    work.push(
      (async () => {
        for (const index of members) {
          const failed = await run(index);
          reported[index] = failed;
          // The rest stay reported (the initial value): not handled, back on the queue after this one.
          if (failed) return;
        }
      })(),
    );
  }
  await Promise.all(work);
  return reported;
}

/**
 * The records of a batch reported by `inGroupOrder` (or any per-record answer), as Lambda's partial
 * batch response lists them.
 */
export function batchItemFailures<R extends { readonly messageId: string }>(
  records: readonly R[],
  reported: readonly boolean[],
): { itemIdentifier: string }[] {
  return records.filter((_, i) => reported[i]).map((record) => ({ itemIdentifier: record.messageId }));
}

/**
 * What SQS accepts as a `MessageGroupId`: 1–128 of a-z A-Z 0-9 and ASCII punctuation (no space).
 */
export const MESSAGE_GROUP_ID = /^[!-~]{1,128}$/;

/**
 * The ordered intake's `MessageGroupId` for a shipment (docs/contract.md §13): the shipment ID itself
 * when SQS accepts it as a group ID (ASCII letters, digits and punctuation, no space, at most 128);
 * otherwise (an ID with a space or beyond ASCII, which an event may have) `sha256:` and the hex
 * SHA-256 of its UTF-8 bytes, so every event of that shipment still lands in one group.
 */
export function messageGroupIdFor(shipmentId: string): string {
  if (MESSAGE_GROUP_ID.test(shipmentId)) return shipmentId;
  return `sha256:${createHash('sha256').update(shipmentId, 'utf8').digest('hex')}`;
}
