/**
 * The replay use case (SPEC §6): an operator returns a dead record to `pending` and the event
 * goes on the queue again, with its original ID and body.
 *
 * Order matters: the ledger first, then the queue. A message enqueued before the row is pending
 * could be received while the row is still dead, be treated as settled work and acknowledged:
 * the replay would be lost. Done this way round, a failed enqueue leaves a pending row and no
 * message, which `ReplayEnqueueError` reports so the operator can send the event again (its body is
 * on the row: the consumer treats it as the same event, since the content is the same).
 */
import type { DeliveryQueue } from './queue/queue';
import type { DeliveryRecord, Ledger, ReplayInput } from './ledger/ledger';

export interface ReplayDeps {
  readonly ledger: Pick<Ledger, 'replay'>;
  readonly queue: Pick<DeliveryQueue, 'enqueue'>;
}

/** The ledger recorded the replay, but the event could not be put on the queue. */
export class ReplayEnqueueError extends Error {
  override readonly name = 'ReplayEnqueueError';
  readonly code = 'replay-enqueue-failed';
  constructor(
    readonly record: DeliveryRecord,
    options?: ErrorOptions,
  ) {
    super(
      `event ${record.eventId} is pending again (replay ${record.replays} recorded) but could not be enqueued`,
      options,
    );
  }
}

/**
 * Replays a dead record and enqueues its event. Returns the row as the ledger left it (pending).
 * @throws ReplayRefusedError from the ledger when the record is missing, not dead, or has no event.
 * @throws ReplayEnqueueError when the row was replayed but the enqueue failed.
 */
export async function replayDelivery(input: ReplayInput, deps: ReplayDeps): Promise<DeliveryRecord> {
  const record = await deps.ledger.replay(input);
  // The ledger refuses rows without a body (`no-event`), so a replayed row always has one.
  const body = record.body;
  if (body === undefined) throw new ReplayEnqueueError(record);
  try {
    await deps.queue.enqueue(body);
  } catch (error) {
    throw new ReplayEnqueueError(record, { cause: error });
  }
  return record;
}
