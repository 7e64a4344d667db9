/**
 * Endpoint health's writes on the registry's items (`HealthStore`, health-rules.ts), made by
 * consumers: each one conditional UpdateItem on an existing item that touches only health's own
 * attributes (HEALTH_ATTRIBUTES), never `fields` or `updatedAt`, so an operator's update is never
 * refused because a consumer counted a failure. Disabling alone writes the state as well.
 */
import type { StateChange } from './endpoint';
import type { EndpointHealth, HealthRecord, HealthStore, ProbeClaim } from './health-rules';
import { EndpointNotFoundError } from '../errors';
import {
  END_RESUME,
  HEALTH_ATTRIBUTES as H,
  healthFrom,
  NAMES,
  STATE_CHANGE_NAMES,
  type Item,
  type RegistryTable,
  type RegistryWriteResult,
} from './dynamodb-registry-table';
import { quoted } from '../terminal';

export class DynamoDbHealthStore implements HealthStore {
  readonly #table: RegistryTable;

  constructor(table: RegistryTable) {
    this.#table = table;
  }

  /** A failed attempt: failures + 1, and failingSince set when unset. @throws EndpointNotFoundError */
  async recordFailure(name: string, nowMs: number): Promise<EndpointHealth> {
    return this.#written(
      name,
      await this.#writeHealth(name, 'record a failure of', {
        UpdateExpression: 'SET #failures = if_not_exists(#failures, :zero) + :one, #failingSince = if_not_exists(#failingSince, :now)',
        ExpressionAttributeNames: { '#failures': H.failures, '#failingSince': H.failingSince },
        ExpressionAttributeValues: { ':zero': 0, ':one': 1, ':now': nowMs },
      }),
    );
  }

  /** The first accepted attempt after failures: failures 0, failingSince removed, lastAcceptedAt. @throws EndpointNotFoundError */
  async recordRecovery(name: string, nowMs: number): Promise<EndpointHealth> {
    return this.#written(
      name,
      await this.#writeHealth(name, 'record the recovery of', {
        UpdateExpression: 'SET #failures = :zero, #lastAcceptedAt = :now REMOVE #failingSince, #probeUntil',
        ExpressionAttributeNames: { '#failures': H.failures, '#failingSince': H.failingSince, '#lastAcceptedAt': H.lastAcceptedAt, '#probeUntil': H.probeUntil },
        ExpressionAttributeValues: { ':zero': 0, ':now': nowMs },
      }),
    );
  }

  /**
   * Pauses until `untilMs`, unless a later pause is set already. Resolves to the pause in force.
   * @throws EndpointNotFoundError
   */
  async pause(name: string, untilMs: number): Promise<number> {
    const result = await this.#writeHealth(
      name,
      'pause',
      {
        UpdateExpression: 'SET #pausedUntil = :until',
        ExpressionAttributeNames: { '#pausedUntil': H.pausedUntil },
        ExpressionAttributeValues: { ':until': untilMs },
      },
      'attribute_not_exists(#pausedUntil) OR #pausedUntil < :until',
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
        UpdateExpression: `SET #state = :disabled, #stateChange = :stateChange, #updatedAt = :updatedAt ${END_RESUME}`,
        ConditionExpression: 'attribute_exists(#name) AND #state = :enabled',
        ExpressionAttributeNames: STATE_CHANGE_NAMES,
        ExpressionAttributeValues: { ':disabled': 'disabled', ':enabled': 'enabled', ':stateChange': stateChange, ':updatedAt': change.at },
      },
    });
    return result.written;
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
          ConditionExpression: `attribute_exists(#name)${condition ? ` AND (${condition})` : ''}`,
          ExpressionAttributeNames: { '#name': NAMES['#name'], ...update.ExpressionAttributeNames },
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
