/**
 * Endpoint health's writes on the registry's items (`HealthStore`, health-rules.ts), made by
 * consumers: each one conditional UpdateItem on an existing item that touches only health's own
 * attributes (HEALTH_ATTRIBUTES), never `fields` or `updatedAt`, so an operator's update is never
 * refused because a consumer counted a failure. Disabling alone writes the state as well.
 *
 * The change index (registry-schema.ts `changedAt`, `feed`): the writes other consumers must see
 * mark the item changed, so every copy of the registry reads it again: a pause, a recovery, a
 * disabling, and the write that begins a run of failures. Counting (`recordFailure`, a consumer's
 * flush, about once a second in an outage) and probe claims never do, or every copy would re-read
 * the item each second. Which flush begins a run is known only from its answer (the item holds its
 * count alone, since its own time), so that flush is followed by one small write of the mark: once
 * per run, not per flush, even when consumers flush in the same millisecond.
 */
import type { StateChange } from './endpoint';
import type { EndpointHealth, HealthRecord, HealthStore, ProbeClaim } from './health-rules';
import { EndpointNotFoundError } from '../errors';
import {
  CHANGE_NAMES,
  changeValues,
  END_RESUME,
  SET_CHANGE,
  HEALTH_ATTRIBUTES as H,
  healthFrom,
  NAMES,
  STATE_CHANGE_NAMES,
  type Item,
  type RegistryTable,
  type RegistryWriteResult,
} from './dynamodb-registry-table';
import { REGISTRY_SCHEMA } from './registry-schema';
import { quoted } from '../terminal';

/** Failed attempts added (`:count`), and the run begun at `:now` if none is. */
const ADD_FAILURES = '#failures = if_not_exists(#failures, :zero) + :count, #failingSince = if_not_exists(#failingSince, :now)';
const FAILURE_NAMES = { '#failures': H.failures, '#failingSince': H.failingSince } as const;

export class DynamoDbHealthStore implements HealthStore {
  readonly #table: RegistryTable;

  constructor(table: RegistryTable) {
    this.#table = table;
  }

  /**
   * `count` failed attempts (a consumer's flush): failures + count, failingSince = nowMs when unset.
   * Not a change for the index, unless it began the run: then one more write marks it.
   * @throws EndpointNotFoundError
   */
  async recordFailure(name: string, nowMs: number, count = 1): Promise<EndpointHealth> {
    const health = this.#written(
      name,
      await this.#writeHealth(name, 'record failures of', {
        UpdateExpression: `SET ${ADD_FAILURES}`,
        ExpressionAttributeNames: FAILURE_NAMES,
        ExpressionAttributeValues: { ':zero': 0, ':count': count, ':now': nowMs },
      }),
    );
    // It began the run if the item had no failures before it: its count is all there is, from its time.
    if (health.failingSince === nowMs && health.failures === count) await this.#markRunBegun(name, nowMs);
    return health;
  }

  /** The first accepted attempt after failures: failures 0, failingSince removed, lastAcceptedAt; a change. @throws EndpointNotFoundError */
  async recordRecovery(name: string, nowMs: number): Promise<EndpointHealth> {
    return this.#written(
      name,
      await this.#writeHealth(name, 'record the recovery of', {
        UpdateExpression: `SET #failures = :zero, #lastAcceptedAt = :now, ${SET_CHANGE} REMOVE #failingSince, #probeUntil`,
        ExpressionAttributeNames: { '#failures': H.failures, '#failingSince': H.failingSince, '#lastAcceptedAt': H.lastAcceptedAt, '#probeUntil': H.probeUntil, ...CHANGE_NAMES },
        ExpressionAttributeValues: { ':zero': 0, ':now': nowMs, ...changeValues(nowMs) },
      }),
    );
  }

  /**
   * Pauses until `untilMs`, unless a later pause is set already: a shorter pause never overwrites a
   * longer one (an equal one is written again, so that `count`, the failed attempts it carries, is
   * added exactly when the pause is written). A change, at `nowMs`. Resolves to the pause in force:
   * `untilMs` when written. @throws EndpointNotFoundError
   */
  async pause(name: string, untilMs: number, nowMs = Date.now(), count = 0): Promise<number> {
    const counting = count > 0;
    const result = await this.#writeHealth(
      name,
      'pause',
      {
        UpdateExpression: `SET #pausedUntil = :until, ${SET_CHANGE}${counting ? `, ${ADD_FAILURES}` : ''}`,
        ExpressionAttributeNames: { '#pausedUntil': H.pausedUntil, ...CHANGE_NAMES, ...(counting ? FAILURE_NAMES : {}) },
        ExpressionAttributeValues: { ':until': untilMs, ...changeValues(nowMs), ...(counting ? { ':zero': 0, ':count': count, ':now': nowMs } : {}) },
      },
      'attribute_not_exists(#pausedUntil) OR #pausedUntil <= :until',
    );
    // Refused: the endpoint is gone, or a later pause is set (read: not every DynamoDB returns the item).
    const health = result.written ? healthOf(result.item) : this.#current(name, result).health;
    return health?.pausedUntil ?? untilMs;
  }

  /**
   * The half-open breaker's probe, for one consumer at a time: `probeUntil` set while the endpoint is
   * failing, not paused, and no other consumer's probe runs. The health after the claim, or the
   * item's health as it refused it. @throws EndpointNotFoundError
   */
  async claimProbe(name: string, nowMs: number, untilMs: number): Promise<ProbeClaim> {
    const result = await this.#writeHealth(
      name,
      'claim the probe of',
      {
        UpdateExpression: 'SET #probeUntil = :until',
        ExpressionAttributeNames: { '#probeUntil': H.probeUntil, '#pausedUntil': H.pausedUntil, '#failingSince': H.failingSince },
        ExpressionAttributeValues: { ':until': untilMs, ':now': nowMs },
      },
      'attribute_exists(#failingSince) AND (attribute_not_exists(#pausedUntil) OR #pausedUntil <= :now) AND (attribute_not_exists(#probeUntil) OR #probeUntil <= :now)',
    );
    if (result.written) return { claimed: true, health: healthOf(result.item) };
    // Refused: the endpoint is gone, or recovered, paused or probed by another consumer (read which).
    return { claimed: false, health: this.#current(name, result).health ?? { failures: 0 } };
  }

  /**
   * Disables the endpoint with who, why and when, only while it is enabled: of consumers that decide
   * to disable it at once, one does (and tells operators). False when it was not enabled or is gone.
   */
  async disableIfEnabled(name: string, change: StateChange): Promise<boolean> {
    const stateChange: StateChange = { by: change.by, reason: change.reason, at: change.at };
    const result = await this.#table.write(name, `disable endpoint ${quoted(name)}`, {
      update: {
        UpdateExpression: `SET #state = :disabled, #stateChange = :stateChange, #updatedAt = :updatedAt, ${SET_CHANGE} ${END_RESUME}`,
        ConditionExpression: 'attribute_exists(#name) AND #state = :enabled',
        ExpressionAttributeNames: { ...STATE_CHANGE_NAMES, ...CHANGE_NAMES },
        ExpressionAttributeValues: { ':disabled': 'disabled', ':enabled': 'enabled', ':stateChange': stateChange, ':updatedAt': change.at, ...changeValues(change.at) },
      },
    });
    return result.written;
  }

  /**
   * The change index learns of a run of failures begun at `sinceMs`, while it lasts: refused (and
   * left so) when a recovery ended it meanwhile, which marked the item itself.
   */
  async #markRunBegun(name: string, sinceMs: number): Promise<void> {
    await this.#table.write(name, `mark the failures of endpoint ${quoted(name)}`, {
      update: {
        UpdateExpression: `SET ${SET_CHANGE}`,
        ConditionExpression: 'attribute_exists(#name) AND #failingSince = :since',
        ExpressionAttributeNames: { '#name': NAMES['#name'], '#failingSince': H.failingSince, ...CHANGE_NAMES },
        ExpressionAttributeValues: { ':since': sinceMs, ...changeValues(sinceMs) },
      },
    });
  }

  /**
   * One health write: an UpdateItem on an existing item that touches only health attributes. With a
   * `condition` of its own, a refusal reads the endpoint, to tell a gone endpoint from that condition.
   */
  #writeHealth(
    name: string,
    what: string,
    update: { UpdateExpression: string; ExpressionAttributeNames: Record<string, string>; ExpressionAttributeValues: Record<string, unknown> },
    condition?: string,
  ): Promise<RegistryWriteResult> {
    return this.#table.write(
      name,
      `${what} endpoint ${quoted(name)}`,
      {
        update: {
          UpdateExpression: update.UpdateExpression,
          // An endpoint's item, never a removed one's tombstone (registry-schema.ts `removedAt`).
          ConditionExpression: `attribute_exists(#name) AND attribute_not_exists(#removedAt)${condition ? ` AND (${condition})` : ''}`,
          ExpressionAttributeNames: { '#name': NAMES['#name'], '#removedAt': REGISTRY_SCHEMA.attributes.removedAt, ...update.ExpressionAttributeNames },
          ExpressionAttributeValues: update.ExpressionAttributeValues,
          ReturnValues: 'ALL_NEW',
        },
      },
      condition !== undefined,
    );
  }

  /** The health a write left. @throws EndpointNotFoundError where the write was refused (only the item's existence was its condition) */
  #written(name: string, result: RegistryWriteResult): EndpointHealth {
    if (!result.written) throw new EndpointNotFoundError(name, { cause: result.cause });
    return healthOf(result.item);
  }

  /** The endpoint a refused write met. @throws EndpointNotFoundError where there is none */
  #current(name: string, result: Extract<RegistryWriteResult, { written: false }>): HealthRecord {
    if (result.current === undefined) throw new EndpointNotFoundError(name, { cause: result.cause });
    return result.current;
  }
}

function healthOf(item: Item): EndpointHealth {
  return healthFrom(item) ?? { failures: 0 };
}
