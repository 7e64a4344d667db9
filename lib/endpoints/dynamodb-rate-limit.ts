/**
 * The rate limit's schedule (rate-limit.ts) on the endpoint registry's table: the attribute
 * `rateNext` (REGISTRY_SCHEMA.attributes.rateNext, epoch ms to the microsecond) on an item of its
 * own (registry-schema.ts `scheduleKey`: `<endpoint>#rate`), so its writes never land on the item
 * health writes (docs/contract.md §20) and never touch an endpoint's fields or `updatedAt`. Each
 * write sets `expiresAt` an hour past the farthest its next slot can be (now and the horizon), so
 * DynamoDB's TTL removes the schedule of an endpoint idle that long, or removed: a schedule needs no
 * endpoint item, and one for a removed endpoint is never read again.
 *
 * No reads on AWS, and no compare-and-swap on a value read: three kinds of conditional write, each
 * one request.
 * - **New or busy** (what this process has not seen yet): `SET rateNext = if_not_exists(rateNext,
 *   now) + k·1000/rate` if `rateNext` is absent, or after now and within the horizon as a busy write
 *   asks. Consumers starting at once on a new schedule all succeed, the first from now, the others
 *   after it, with no refusal; a schedule that has passed refuses it, and the value learnt decides.
 * - **Idle** (the schedule is free now): `SET rateNext = now + k·1000/rate` if `rateNext` is absent
 *   or not after now. Its slots start now.
 * - **Busy** (the schedule is booked ahead): `SET rateNext = rateNext + k·1000/rate` if `rateNext`
 *   is after now and no later than where the k-th slot still lies within the horizon, returning the
 *   new value; its slots are the k before it. The increment is applied by DynamoDB to whatever the
 *   value is when the write lands, so consumers reserving at once all succeed, one after the other,
 *   with no retry: contention costs nothing while the endpoint is busy.
 * A write whose condition is refused learns the value from the refusal
 * (`ReturnValuesOnConditionCheckFailure: ALL_OLD`, free on AWS; a store that does not return it is
 * read with one consistent GetItem instead) and tries the other kind, with as many slots as fit
 * within the horizon: at most `maxRounds` writes. The schedule only ever moves forward, so a value
 * seen is a lower bound of the value now: a consumer that saw the schedule booked beyond the horizon
 * answers "wait" without a request until then. The one exception: a value more than two horizons
 * ahead, which no consumer writes (a clock far ahead did, or a hand), is replaced by a free schedule
 * (conditional on exactly that value), so one bad clock cannot stall an endpoint.
 *
 * The SDK retries a write whose answer was lost; an increment applied twice reserves slots nobody
 * uses: fewer requests than the limit, never more.
 */
import type { AttributeValue, DynamoDBClient, UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, errorName, type Item } from '../dynamodb/conditional-write';
import {
  RATE_HORIZON_MS,
  slotIntervalMs,
  slotsFrom,
  slotsWithin,
  spanMs,
  toScheduleMs,
  waitForHorizon,
  type RateLimiter,
  type Reservation,
} from './rate-limit';
import { RateLimitError } from '../errors';
import { REGISTRY_SCHEMA, scheduleKey } from './registry-schema';

export interface DynamoDbRateLimiterOptions {
  /** The registry table's client; a document client's underlying client is used as it is. */
  readonly client: DynamoDBClient | DynamoDBDocumentClient;
  /** The endpoint registry's table (RESOURCE_ENV.endpointsTable). */
  readonly tableName: string;
  /** How far ahead slots are reserved (RATE_HORIZON_MS). */
  readonly horizonMs?: number;
  /** Conditional writes one reservation may make before giving up with `rate-limit-contention`. */
  readonly maxRounds?: number;
}

/**
 * Writes per reservation: an idle/busy guess that was wrong costs one, a batch that only partly
 * fits before the horizon another; more means the schedule flips between idle and busy under it.
 */
const MAX_ROUNDS = 4;
/**
 * A schedule this process found booked ahead this recently is guessed booked still, though the value
 * it saw has passed: at a rate near the limit the other consumers keep it ahead, and a reservation
 * made in blocks (BlockRateLimiter) sees the value only about once a second.
 */
const BUSY_GUESS_MS = 2_000;

const KEY = REGISTRY_SCHEMA.partitionKey;
const NEXT = REGISTRY_SCHEMA.attributes.rateNext;
const NAMES = { '#next': NEXT, '#expiresAt': REGISTRY_SCHEMA.attributes.expiresAt } as const;
/** How long past the farthest its next slot can be a schedule's item is kept (its `expiresAt`). */
const SCHEDULE_TTL_SECONDS = 60 * 60;

type Write = { readonly written: true; readonly next: number } | { readonly written: false; readonly current: number | undefined };

export class DynamoDbRateLimiter implements RateLimiter {
  readonly #client: DynamoDBClient;
  readonly #tableName: string;
  readonly #horizonMs: number;
  readonly #maxRounds: number;
  /** Per endpoint, the latest value of its schedule this process saw: a lower bound of the value now. */
  readonly #seen = new Map<string, number>();
  /** Per endpoint, when this process last reserved on it booked ahead. */
  readonly #busyAt = new Map<string, number>();

  constructor(options: DynamoDbRateLimiterOptions) {
    // Attribute values are built here: the low-level client is all that is used.
    this.#client = options.client as DynamoDBClient;
    this.#tableName = options.tableName;
    this.#horizonMs = options.horizonMs ?? RATE_HORIZON_MS;
    this.#maxRounds = options.maxRounds ?? MAX_ROUNDS;
  }

  async reserve(endpoint: string, count: number, perSecond: number, nowMs: number): Promise<Reservation> {
    if (!Number.isInteger(count) || count < 1) throw new RangeError(`count must be a whole number from 1, got ${count}`);
    const interval = slotIntervalMs(perSecond);
    let known = this.#seen.get(endpoint);
    for (let round = 1; round <= this.#maxRounds; round++) {
      // No consumer reserves beyond its own horizon, so a schedule booked past two horizons from now
      // was written by a clock far ahead (or by hand): it is taken as free, replacing exactly that value.
      const implausible = known !== undefined && known > nowMs + 2 * this.#horizonMs;
      const stillBusy = round === 1 && nowMs - (this.#busyAt.get(endpoint) ?? -Infinity) <= BUSY_GUESS_MS;
      const unseen = known === undefined;
      const idle = !unseen && (implausible || (known! <= nowMs && !stillBusy));
      const base = unseen || idle ? nowMs : Math.max(known!, nowMs);
      const reserved = slotsWithin(base, count, perSecond, nowMs, this.#horizonMs);
      // Booked beyond the horizon already (the value only grows): nothing to ask the table.
      if (reserved === 0) return { slots: [], waitMs: waitForHorizon(base, nowMs, this.#horizonMs) };
      const span = spanMs(reserved, perSecond);
      const latest = number(toScheduleMs(nowMs + this.#horizonMs - (reserved - 1) * interval));
      const result = implausible
        ? await this.#write(endpoint, nowMs, {
            UpdateExpression: 'SET #next = :next',
            ConditionExpression: '#next = :seen',
            ExpressionAttributeValues: { ':next': number(toScheduleMs(nowMs + span)), ':seen': number(known!) },
          })
        : unseen
        ? await this.#write(endpoint, nowMs, {
            UpdateExpression: 'SET #next = if_not_exists(#next, :now) + :span',
            ConditionExpression: 'attribute_not_exists(#next) OR (#next > :now AND #next <= :latest)',
            ExpressionAttributeValues: { ':span': number(span), ':now': number(nowMs), ':latest': latest },
          })
        : idle
        ? await this.#write(endpoint, nowMs, {
            UpdateExpression: 'SET #next = :next',
            ConditionExpression: 'attribute_not_exists(#next) OR #next <= :now',
            ExpressionAttributeValues: { ':next': number(toScheduleMs(nowMs + span)), ':now': number(nowMs) },
          })
        : await this.#write(endpoint, nowMs, {
            UpdateExpression: 'SET #next = #next + :span',
            ConditionExpression: '#next > :now AND #next <= :latest',
            ExpressionAttributeValues: { ':span': number(span), ':now': number(nowMs), ':latest': latest },
          });
      if (result.written) {
        this.#note(endpoint, result.next);
        const first = toScheduleMs(result.next - span);
        // Slots after now: others had booked it ahead, so they likely still do. From now: it was free,
        // but one this write made new is guessed busy too (consumers starting with it reserve after it).
        if (first > nowMs || unseen) this.#busyAt.set(endpoint, nowMs);
        else this.#busyAt.delete(endpoint);
        const slots = slotsFrom(first, reserved, perSecond);
        return reserved === count ? { slots } : { slots, waitMs: waitForHorizon(result.next, nowMs, this.#horizonMs) };
      }
      // Refused: the schedule's value learnt (none: its item went, by TTL, meanwhile, and is new again).
      known = result.current;
      if (known !== undefined) this.#note(endpoint, known);
    }
    throw new RateLimitError(
      'rate-limit-contention',
      endpoint,
      `rate limit of endpoint ${JSON.stringify(endpoint)}: its schedule changed under each of ${this.#maxRounds} writes`,
    );
  }

  #note(endpoint: string, next: number): void {
    this.#seen.set(endpoint, next);
  }

  /** One conditional UpdateItem on the endpoint's schedule item, refreshing its `expiresAt`; a refusal answers with the value it met. */
  async #write(
    endpoint: string,
    nowMs: number,
    update: Pick<UpdateItemCommandInput, 'UpdateExpression' | 'ConditionExpression' | 'ExpressionAttributeValues'>,
  ): Promise<Write> {
    const key = { [KEY]: { S: scheduleKey(endpoint) } };
    const expiresAt = Math.floor((nowMs + this.#horizonMs) / 1000) + SCHEDULE_TTL_SECONDS;
    const result = await conditionalWrite(
      this.#client,
      {
        update: {
          TableName: this.#tableName,
          Key: key,
          ...update,
          UpdateExpression: `${update.UpdateExpression}, #expiresAt = :expiresAt`,
          ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ':expiresAt': number(expiresAt) },
          ExpressionAttributeNames: NAMES,
          ReturnValues: 'UPDATED_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      {
        unavailable: (error, call) => this.#unavailable(endpoint, call === 'write' ? 'reserve slots for' : 'read the schedule of', error),
        decode: (item) => ({ next: valueOf(item) }),
        // AWS returns the item with the refusal; where a store does not, one consistent read tells the value.
        read: { TableName: this.#tableName, Key: key, ConsistentRead: true, ProjectionExpression: '#next', ExpressionAttributeNames: { '#next': NEXT } },
      },
    );
    if (result.written) {
      const next = valueOf(result.item);
      if (next === undefined) throw this.#unreadable(endpoint);
      return { written: true, next };
    }
    return { written: false, current: result.current?.next };
  }

  #unreadable(endpoint: string): RateLimitError {
    return new RateLimitError(
      'rate-limit-unavailable',
      endpoint,
      `rate limit: the table ${this.#tableName} returned no number ${NEXT} for endpoint ${JSON.stringify(endpoint)}`,
    );
  }

  /** Any failure but a refused condition is the schedule's store being unavailable. */
  #unavailable(endpoint: string, what: string, error: unknown): RateLimitError {
    return new RateLimitError(
      'rate-limit-unavailable',
      endpoint,
      `rate limit: endpoint registry ${this.#tableName} failed to ${what} endpoint ${JSON.stringify(endpoint)}: ${errorName(error)}`,
      { cause: error },
    );
  }
}

function number(value: number): AttributeValue {
  return { N: String(value) };
}

/** The schedule's value in an item (or an update's returned attributes); undefined when absent or not a number. */
function valueOf(item: Item): number | undefined {
  const raw = item[NEXT]?.N;
  if (raw === undefined) return undefined;
  const value = Number(raw);
  return Number.isFinite(value) ? value : undefined;
}
