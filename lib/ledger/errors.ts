/**
 * The ledger's domain errors. Adapters turn their store's failures (a DynamoDB
 * `ConditionalCheckFailedException`, say) into these; nothing above the adapter knows the store.
 * Each refusal carries the row as it stands, so the caller decides without another lookup.
 */
import type { ClaimRefusal } from './guards';
import { DEFAULT_ENDPOINT, type DeliveryRecord } from './ledger';

export abstract class LedgerError extends Error {
  abstract readonly code: string;
}

/**
 * The event may not be sent now: a conflict, a live lease, not yet due, or already settled. The
 * adapter that refused says why, read once from the row it refused on, with the claim's own clock.
 */
export class ClaimRefusedError extends LedgerError {
  override readonly name = 'ClaimRefusedError';
  readonly code = 'claim-refused';
  constructor(
    readonly record: DeliveryRecord,
    readonly reason: ClaimRefusal,
    options?: ErrorOptions,
  ) {
    super(`claim on ${record.eventId} refused: ${reason}`, options);
  }
}

/** The caller no longer holds the lease it wrote with (or the row moved on without it). */
export class LeaseLostError extends LedgerError {
  override readonly name = 'LeaseLostError';
  readonly code = 'lease-lost';
  constructor(
    readonly record: DeliveryRecord,
    options?: ErrorOptions,
  ) {
    super(`lease on ${record.eventId} lost: row is ${record.state}`, options);
  }
}

export type ReplayRefusal = 'not-found' | 'not-dead' | 'no-event';

export class ReplayRefusedError extends LedgerError {
  override readonly name = 'ReplayRefusedError';
  readonly code = 'replay-refused';
  constructor(
    readonly refusal: ReplayRefusal,
    readonly eventId: string,
    readonly record?: DeliveryRecord,
    options?: ErrorOptions,
  ) {
    super(replayMessage(refusal, eventId, record), options);
  }
}

/** The delivery named in a refusal: the event, and its endpoint unless it is the single-URL settings' `default`. */
function replayMessage(refusal: ReplayRefusal, eventId: string, record?: DeliveryRecord): string {
  const at = record !== undefined && record.endpoint !== DEFAULT_ENDPOINT ? ` at endpoint ${record.endpoint}` : '';
  switch (refusal) {
    case 'not-found':
      return `no delivery record for event ${eventId}`;
    case 'not-dead':
      return `event ${eventId}${at} is ${record?.state}, not dead: only dead records can be replayed`;
    case 'no-event':
      return `event ${eventId}${at} died as an invalid message: there is no valid event to replay`;
  }
}

export type ReleaseRefusal = 'not-found' | 'not-dead' | 'no-event' | 'released';

/** A dead delivery's release (docs/contract.md §13) refused by the ledger. Names the event and endpoint, never the content. */
export class ReleaseRefusedError extends LedgerError {
  override readonly name = 'ReleaseRefusedError';
  readonly code = 'release-refused';
  constructor(
    readonly refusal: ReleaseRefusal,
    readonly eventId: string,
    readonly endpoint: string,
    readonly record?: DeliveryRecord,
    options?: ErrorOptions,
  ) {
    super(releaseMessage(refusal, eventId, endpoint, record), options);
  }
}

function releaseMessage(refusal: ReleaseRefusal, eventId: string, endpoint: string, record?: DeliveryRecord): string {
  const delivery = `event ${eventId} at endpoint ${endpoint}`;
  switch (refusal) {
    case 'not-found':
      return `no delivery record for ${delivery}`;
    case 'not-dead':
      return `${delivery} is ${record?.state}, not dead: only a dead delivery can be released`;
    case 'no-event':
      return `${delivery} died as an invalid message: there is no event to release`;
    case 'released': {
      const at = record?.releasedAt === undefined ? '' : ` at ${new Date(record.releasedAt).toISOString()}`;
      return `${delivery} was released already${at}: a delivery is released once`;
    }
  }
}

/**
 * A write that needs the event's delivery record found none: deleted by its TTL, or never
 * admitted. Not a store failure: the store answered, and the row is not there.
 */
export class RecordMissingError extends LedgerError {
  override readonly name = 'RecordMissingError';
  readonly code = 'record-missing';
  constructor(
    readonly eventId: string,
    options?: ErrorOptions,
  ) {
    super(`no delivery record for event ${eventId} to write to`, options);
  }
}

/** A shipment's events for one endpoint reached the limit (MAX_SEQUENCE): no further event gets a number. */
export class SequenceLimitError extends LedgerError {
  override readonly name = 'SequenceLimitError';
  readonly code = 'sequence-limit';
  constructor(
    readonly shipmentId: string,
    readonly endpoint: string,
    readonly eventId: string,
    readonly max: number,
    options?: ErrorOptions,
  ) {
    // The shipment ID is the producer's data: the message names the event alone.
    super(`event ${eventId} gets no sequence: its shipment has ${max} events for endpoint ${endpoint}, the most it may order`, options);
  }
}

/** The store could not be reached or answered with an error the ledger does not expect. */
export class LedgerUnavailableError extends LedgerError {
  override readonly name = 'LedgerUnavailableError';
  readonly code = 'ledger-unavailable';
}

/**
 * The ledger has no shipment index (docs/contract.md §5): the deployment turned it off
 * (`shipmentIndex: false`, `HANDOFF_SHIPMENT_INDEX=false`), so deliveries cannot be found by shipment.
 */
export class ShipmentIndexOffError extends LedgerError {
  override readonly name = 'ShipmentIndexOffError';
  readonly code = 'shipment-index-off';
  constructor(tableName: string, options?: ErrorOptions) {
    super(
      `ledger ${tableName} has no shipment index: this deployment turned it off (shipmentIndex: false, HANDOFF_SHIPMENT_INDEX=false), so deliveries are found by event ID only`,
      options,
    );
  }
}
