/**
 * The send use case, the command's (`handoff send`, cli/commands/send.ts) and the management API's
 * (`POST /v1/events`, api/routes/events.ts): events already parsed put on the delivery queue, or on
 * the ordered intake, with the same SQS calls whoever asks (docs/contract.md §2, §13).
 *
 * Ordered: each event with `MessageGroupId` = its shipment ID (lib/fifo.ts `messageGroupIdFor`) and
 * `MessageDeduplicationId` = its event ID, so SQS keeps each shipment's events in input order and
 * drops a second copy sent within its five-minute deduplication window. To keep that order
 * whatever fails: batches go one at a time in input order, a batch holds at most one event per
 * shipment, and once an event is not sent its shipment's later events are not sent either
 * (`held-back`), so sending the same events again sends the rest in order.
 */
import { SendMessageBatchCommand, type SendMessageBatchRequestEntry } from '@aws-sdk/client-sqs';
import pLimit from 'p-limit';
import { readSettings } from '../../lib/config';
import type { ParsedEvent } from '../../lib/event';
import { messageGroupIdFor } from '../../lib/fifo';
import type { CommandContext } from '../context';
import { requireName, requireOrderedQueue, type Target } from '../target';

/** SQS takes at most 10 entries per batch call. */
export const BATCH_ENTRIES = 10;
/** Keep a batch call under SQS's total-size limit, whichever generation of limit the queue has. */
const BATCH_BYTES = 256 * 1024;
const CONCURRENT_BATCHES = 4;

export interface PayloadLimit {
  readonly bytes: number;
  /** Whose limit it is, for messages: the target's description, the variable, or the default. */
  readonly source: string;
  readonly fromTarget: boolean;
}

/** The code of an event not sent because an earlier event of its shipment was not. */
export const HELD_BACK = 'held-back';

/** The target's payload limit, else `HANDOFF_PAYLOAD_LIMIT_BYTES` from `env`, else the default. @throws ConfigError */
export function payloadLimitFor(target: Pick<Target, 'payloadLimitBytes' | 'description'>, env: NodeJS.ProcessEnv): PayloadLimit {
  if (target.payloadLimitBytes !== undefined) {
    return { bytes: target.payloadLimitBytes, source: target.description, fromTarget: true };
  }
  const variable = env.HANDOFF_PAYLOAD_LIMIT_BYTES;
  // Only this one variable: the operator's other settings are not the command's business.
  const { payloadLimitBytes } = readSettings({ HANDOFF_PAYLOAD_LIMIT_BYTES: variable });
  return { bytes: payloadLimitBytes, source: variable ? 'HANDOFF_PAYLOAD_LIMIT_BYTES' : 'the default', fromTarget: false };
}

export interface SentEvent {
  readonly eventId: string;
  readonly messageId: string;
}

export interface UnsentEvent {
  readonly eventId: string;
  readonly code: string;
  readonly message: string;
}

export interface SendEventsOptions {
  /** To the ordered intake (docs/contract.md §13), in input order per shipment. */
  readonly ordered?: boolean;
  /** Called as each batch is settled, with how many of the events it took (sent, failed or held back). */
  readonly onProgress?: (settled: number) => void;
}

/** What became of each event given to `sendEvents`; `position` is its index in the events given. */
export interface SendOutcome {
  /** In input order. */
  readonly sent: readonly (SentEvent & { readonly position: number })[];
  /** In input order. */
  readonly unsent: readonly (UnsentEvent & { readonly position: number })[];
}

/**
 * The send use case, the command's and the management API's (`POST /v1/events`): events already
 * parsed put on the delivery queue, or with `ordered` the ordered intake, with the same SQS calls
 * whoever asks. Every event is either sent or unsent (with SQS's code, or `held-back`), never both;
 * a failed batch call makes its events unsent and does not stop the others.
 * @throws UsageError, CommandFailedError when the target names no such queue: nothing is sent
 */
export async function sendEvents(ctx: Pick<CommandContext, 'sqs' | 'target'>, events: readonly ParsedEvent[], options: SendEventsOptions = {}): Promise<SendOutcome> {
  const ordered = options.ordered === true;
  const queueUrl = ordered ? requireOrderedQueue(ctx.target) : requireName(ctx.target, 'queueUrl');
  const sqs = ctx.sqs();
  const progress = options.onProgress ?? (() => {});

  const sent: (SentEvent & { position: number })[] = [];
  const unsent: (UnsentEvent & { position: number })[] = [];
  // Ordered: one batch at a time, in input order (below).
  const limit = pLimit(ordered ? 1 : CONCURRENT_BATCHES);
  /** Ordered: each shipment with an event not sent, by the first such event's ID. */
  const stopped = new Map<string, string>();
  await Promise.all(
    (ordered ? orderedBatches(events) : batches(events)).map((whole) =>
      limit(async () => {
        // Ordered: a shipment with an earlier event not sent sends no later one (its order would break).
        const batch = whole.filter((item) => {
          const earlier = ordered ? stopped.get(item.event.event.shipmentId) : undefined;
          if (earlier === undefined) return true;
          unsent.push({
            eventId: item.event.event.id,
            code: HELD_BACK,
            message: `not sent: an earlier event of its shipment (${earlier}) was not sent`,
            position: item.position,
          });
          return false;
        });
        const notSent = (item: Positioned) => {
          if (ordered && !stopped.has(item.event.event.shipmentId)) stopped.set(item.event.event.shipmentId, item.event.event.id);
        };
        if (batch.length === 0) {
          progress(whole.length);
          return;
        }
        // Entry IDs are positions in the batch, not event IDs: a file may hold one event twice
        // (a duplicate the consumer delivers once), and SQS refuses repeated entry IDs.
        const entries: SendMessageBatchRequestEntry[] = batch.map((item, i) => ({
          Id: `e${i}`,
          MessageBody: item.event.body,
          ...(ordered
            ? { MessageGroupId: messageGroupIdFor(item.event.event.shipmentId), MessageDeduplicationId: item.event.event.id }
            : {}),
        }));
        try {
          const response = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
          for (const ok of response.Successful ?? []) {
            const item = batch[entryIndex(ok.Id)];
            if (item) sent.push({ eventId: item.event.event.id, messageId: ok.MessageId ?? '', position: item.position });
          }
          for (const failed of response.Failed ?? []) {
            const item = batch[entryIndex(failed.Id)];
            if (item) {
              notSent(item);
              unsent.push({
                eventId: item.event.event.id,
                code: failed.Code ?? 'failed',
                message: failed.Message ?? '',
                position: item.position,
              });
            }
          }
        } catch (error) {
          const e = error instanceof Error ? error : new Error(String(error));
          for (const item of batch) {
            notSent(item);
            unsent.push({ eventId: item.event.event.id, code: e.name, message: e.message, position: item.position });
          }
        }
        progress(whole.length);
      }),
    ),
  );

  // In input order, whatever order the batches finished in.
  const byPosition = (a: { position: number }, b: { position: number }) => a.position - b.position;
  return { sent: sent.sort(byPosition), unsent: unsent.sort(byPosition) };
}

interface Positioned {
  readonly event: ParsedEvent;
  readonly position: number;
}

/** Groups events into SQS batches by count and total size, each remembering its input position. */
function batches(events: readonly ParsedEvent[]): Positioned[][] {
  const result: Positioned[][] = [];
  let current: Positioned[] = [];
  let bytes = 0;
  for (const [position, event] of events.entries()) {
    const size = Buffer.byteLength(event.body, 'utf8');
    if (current.length === BATCH_ENTRIES || (current.length > 0 && bytes + size > BATCH_BYTES)) {
      result.push(current);
      current = [];
      bytes = 0;
    }
    current.push({ event, position });
    bytes += size;
  }
  if (current.length > 0) result.push(current);
  return result;
}

/**
 * The ordered intake's batches: by count and size as `batches`, in input order, and never two events
 * of one shipment in a batch, so an entry SQS refuses has no later event of its shipment sent beside it.
 */
function orderedBatches(events: readonly ParsedEvent[]): Positioned[][] {
  const result: Positioned[][] = [];
  let current: Positioned[] = [];
  let shipments = new Set<string>();
  let bytes = 0;
  for (const [position, event] of events.entries()) {
    const size = Buffer.byteLength(event.body, 'utf8');
    const shipment = event.event.shipmentId;
    if (current.length === BATCH_ENTRIES || shipments.has(shipment) || (current.length > 0 && bytes + size > BATCH_BYTES)) {
      result.push(current);
      current = [];
      shipments = new Set();
      bytes = 0;
    }
    current.push({ event, position });
    shipments.add(shipment);
    bytes += size;
  }
  if (current.length > 0) result.push(current);
  return result;
}

function entryIndex(id: string | undefined): number {
  return Number(id?.slice(1) ?? -1);
}
