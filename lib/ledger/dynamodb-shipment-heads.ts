/**
 * Shipment heads (`shipment-heads.ts`) on the ledger table: one item per (shipment, endpoint),
 * partition `#<shipmentId>`, sort key the endpoint's name, attributes `HEAD_WIRE_NAMES`. Every
 * write is one conditional UpdateItem with the condition and update `shipment-heads.ts` defines; a
 * refused condition becomes the domain answer, any other store failure `LedgerUnavailableError`.
 *
 * Expiry: the head's TTL attribute is removed by each assignment and set by the advance that
 * settles it (`shipment-heads.ts` says why a head expires only then).
 *
 * Requests, on AWS (no reads on any path but `get`):
 *   assign    one UpdateItem, the head's first included (it creates the item). Answers with the
 *             updated attributes only. Refused because the event has its number: the head comes
 *             back with the refusal (`ReturnValuesOnConditionCheckFailure: ALL_OLD`), no read.
 *   wait      one UpdateItem; refused, nothing more is needed (the answer is false).
 *   advance   one UpdateItem answering with the head after (ALL_NEW), the one that settles the head
 *             (its last number); refused because later numbers are assigned, the plain advance
 *             follows, knowing so from the head the refusal came back with (ALL_OLD): two then,
 *             the first refused. Refused otherwise, the head as it is answers.
 *   get       one consistent GetItem.
 * A store that does not return the item with a refusal costs a consistent GetItem after a refused
 * assign or advance, as `dynamodb-ledger.ts` falls back.
 *
 * What each write costs, by the head's size: docs/design.md (Shipment heads: size and cost).
 */
import type { AttributeValue, DynamoDBClient, GetItemCommandInput, ReturnValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, errorName, readItem, type ConditionalWriteResult, type Item } from '../dynamodb/conditional-write';
import { HEAD_WIRE_NAMES } from './dynamodb-schema';
import { LedgerUnavailableError, SequenceLimitError } from './errors';
import {
  ADVANCE,
  ASSIGN,
  checkEventId,
  checkHeadKey,
  checkMaxSequence,
  checkSequence,
  conditionOf,
  DEFAULT_HEAD_RETENTION_SECONDS,
  HEAD_PARTITION_PREFIX,
  headPartition,
  refusalOf,
  SETTLE,
  WAIT,
  type Assignment,
  type HeadWrite,
  type ShipmentHead,
  type ShipmentHeads,
  type WaitAnswer,
} from './shipment-heads';
export interface DynamoDbShipmentHeadsOptions {
  /** A DynamoDB client (a document client is one, with the same configuration). */
  readonly client: DynamoDBDocumentClient | DynamoDBClient;
  /** The ledger table. */
  readonly tableName: string;
  /** Sequences per head at most: MAX_SEQUENCE unless less is given. */
  readonly maxSequence?: number;
  /** Epoch ms: the settling advance's time, which the head's expiry counts from. Defaults to the system clock. */
  readonly now?: () => number;
  /** A settled head's retention, stored by each assignment: the rows' (DEFAULT_HEAD_RETENTION_SECONDS unless given). */
  readonly retentionSeconds?: number;
}

const H = HEAD_WIRE_NAMES;

/** Assignments retried after a refusal the head as read does not explain (never expected: heads only grow). */
const MAX_WRITE_ROUNDS = 3;

export class DynamoDbShipmentHeads implements ShipmentHeads {
  readonly #client: DynamoDBClient;
  readonly #tableName: string;
  readonly #max: number;
  readonly #now: () => number;
  readonly #retentionSeconds: number;

  constructor(options: DynamoDbShipmentHeadsOptions) {
    this.#client = options.client as DynamoDBClient;
    this.#tableName = options.tableName;
    this.#max = checkMaxSequence(options.maxSequence);
    this.#now = options.now ?? Date.now;
    this.#retentionSeconds = options.retentionSeconds ?? DEFAULT_HEAD_RETENTION_SECONDS;
  }

  async assign(shipmentId: string, endpoint: string, eventId: string): Promise<Assignment> {
    checkHeadKey(shipmentId, endpoint);
    checkEventId(eventId);
    const context = { eventId, max: this.#max, retentionSeconds: this.#retentionSeconds };
    const entry = seqName(eventId);
    const names = { '#assigned': H.assigned, '#next': H.next, '#seqEntry': entry, '#retention': H.retentionSeconds, '#expiry': H.expiresAt };
    const values = { ':zero': 0, ':one': 1, ':max': this.#max, ':retention': this.#retentionSeconds };
    for (let round = 1; round <= MAX_WRITE_ROUNDS; round++) {
      const result = await this.#write(shipmentId, endpoint, ASSIGN, names, values, 'UPDATED_NEW', true);
      if (result.written) return { sequence: numberOf(result.item[entry]), next: numberOf(result.item[H.next]) };
      const head = result.current;
      const refusal = refusalOf(ASSIGN, head, context);
      // The event has its number: the answer, with nothing written. This is also what a store
      // client's retry of an assignment whose answer was lost meets.
      if (refusal === 'assigned' && head !== undefined) return { sequence: head.seq[eventId] ?? 0, next: head.next };
      if (refusal === 'full') throw new SequenceLimitError(shipmentId, endpoint, eventId, this.#max, { cause: result.cause });
    }
    throw new LedgerUnavailableError(`shipment head for event ${eventId} at endpoint ${endpoint} kept changing during the write`);
  }

  async wait(shipmentId: string, endpoint: string, sequence: number, eventId: string): Promise<WaitAnswer> {
    checkHeadKey(shipmentId, endpoint);
    checkSequence(sequence);
    checkEventId(eventId);
    const names = { '#next': H.next, '#seqEntry': seqName(eventId), '#waitingEntry': waitingName(sequence) };
    const values = { ':sequence': sequence, ':eventId': eventId };
    const result = await this.#write(shipmentId, endpoint, WAIT, names, values, 'NONE', true);
    if (result.written) return 'waiting';
    return refusalOf(WAIT, result.current, { sequence, eventId }) === 'turn' ? 'its-turn' : 'not-its-number';
  }

  async advance(shipmentId: string, endpoint: string, sequence: number, eventId: string): Promise<ShipmentHead | undefined> {
    checkHeadKey(shipmentId, endpoint);
    checkSequence(sequence);
    checkEventId(eventId);
    const context = { sequence, eventId, nowMs: this.#now() };
    const names = {
      '#next': H.next,
      '#assigned': H.assigned,
      '#seqEntry': seqName(eventId),
      '#waitingEntry': waitingName(sequence),
      '#expiry': H.expiresAt,
      '#retention': H.retentionSeconds,
    };
    const values = { ':sequence': sequence, ':following': sequence + 1, ':nowSeconds': Math.floor(context.nowMs / 1000), ':retention': this.#retentionSeconds };
    const settled = await this.#write(shipmentId, endpoint, SETTLE, names, values, 'ALL_NEW', true);
    if (settled.written) return headFromItem(settled.item);
    // Later numbers are assigned: the plain advance, which leaves the head without an expiry.
    if (refusalOf(SETTLE, settled.current, context) !== 'last') return settled.current;
    const result = await this.#write(shipmentId, endpoint, ADVANCE, names, values, 'ALL_NEW', true);
    // Refused: already advanced (or no head). The head as it is, so the caller wakes what is next.
    return result.written ? headFromItem(result.item) : result.current;
  }

  async get(shipmentId: string, endpoint: string): Promise<ShipmentHead | undefined> {
    checkHeadKey(shipmentId, endpoint);
    return this.#read(shipmentId, endpoint);
  }

  /**
   * One conditional UpdateItem of `write`, sending only the placeholders its expressions use. A
   * refusal answers with the head as it stands: from the refusal (ALL_OLD), else, if `readRefused`,
   * read consistently.
   */
  async #write(
    shipmentId: string,
    endpoint: string,
    write: HeadWrite<never>,
    names: Record<string, string>,
    values: Record<string, number | string>,
    returns: ReturnValue,
    readRefused: boolean,
  ): Promise<ConditionalWriteResult<ShipmentHead>> {
    const condition = conditionOf(write);
    const text = `${write.update} ${condition}`;
    const usedNames = Object.fromEntries(Object.entries(names).filter(([placeholder]) => mentions(text, placeholder)));
    const usedValues: Item = {};
    for (const [placeholder, value] of Object.entries(values)) {
      if (mentions(text, placeholder)) usedValues[placeholder] = typeof value === 'number' ? { N: String(value) } : { S: value };
    }
    const update = {
      TableName: this.#tableName,
      Key: keyOf(shipmentId, endpoint),
      UpdateExpression: write.update,
      ConditionExpression: condition,
      ExpressionAttributeNames: usedNames,
      ExpressionAttributeValues: usedValues,
      ReturnValues: returns,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
    return conditionalWrite(this.#client, { update }, {
      unavailable: this.#unavailable(endpoint),
      decode: headFromItem,
      ...(readRefused ? { read: this.#readInput(shipmentId, endpoint) } : {}),
    });
  }

  async #read(shipmentId: string, endpoint: string): Promise<ShipmentHead | undefined> {
    const item = await readItem(this.#client, this.#readInput(shipmentId, endpoint), this.#unavailable(endpoint));
    return item === undefined ? undefined : headFromItem(item);
  }

  #readInput(shipmentId: string, endpoint: string): GetItemCommandInput {
    return { TableName: this.#tableName, Key: keyOf(shipmentId, endpoint), ConsistentRead: true };
  }

  /** Any failure but a refused condition is the store being unavailable. Messages name the endpoint, never the shipment (the producer's data). */
  #unavailable(endpoint: string): (error: unknown) => LedgerUnavailableError {
    return (error) => {
      return new LedgerUnavailableError(`ledger ${this.#tableName} failed for a shipment head of endpoint ${endpoint}: ${errorName(error)}`, { cause: error });
    };
  }
}

function keyOf(shipmentId: string, endpoint: string): Item {
  return { [H.eventId]: { S: headPartition(shipmentId) }, [H.endpoint]: { S: endpoint } };
}

function seqName(eventId: string): string {
  return `${H.seqPrefix}${eventId}`;
}

function waitingName(sequence: number): string {
  return `${H.waitingPrefix}${sequence}`;
}

/** Whether an expression uses a placeholder (`#next` does not mention `#n`). */
function mentions(text: string, placeholder: string): boolean {
  return new RegExp(`${placeholder}(?!\\w)`).test(text);
}

function numberOf(value: AttributeValue | undefined): number {
  return Number(value?.N ?? Number.NaN);
}

/** A head as its item stores it: the counters, and each prefixed attribute as an entry. */
export function headFromItem(item: Item): ShipmentHead {
  const seq: Record<string, number> = {};
  const waiting: Record<number, string> = {};
  for (const [name, value] of Object.entries(item)) {
    if (name.startsWith(H.seqPrefix)) seq[name.slice(H.seqPrefix.length)] = numberOf(value);
    else if (name.startsWith(H.waitingPrefix)) waiting[Number(name.slice(H.waitingPrefix.length))] = value.S ?? '';
  }
  return {
    shipmentId: (item[H.eventId]?.S ?? '').slice(HEAD_PARTITION_PREFIX.length),
    endpoint: item[H.endpoint]?.S ?? '',
    assigned: item[H.assigned] === undefined ? 0 : numberOf(item[H.assigned]),
    next: item[H.next] === undefined ? 1 : numberOf(item[H.next]),
    seq,
    waiting,
    ...(item[H.expiresAt] === undefined ? {} : { expiresAt: numberOf(item[H.expiresAt]) }),
  };
}
