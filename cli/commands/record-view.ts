/** A ledger row as the operator sees it: everything but the payload, in JSON or in words. */
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { describeOutcome } from '../../lib/outcome';
import { formatDuration, formatInstant, keyValues, table, truncate } from '../format';

/**
 * The row without its body: the CLI prints what happened to an event, never the event's content
 * (the content hash identifies it). Field names and epoch-ms values are the ledger's own.
 */
export function recordJson(record: DeliveryRecord): Omit<DeliveryRecord, 'body'> {
  // The fields docs/contract.md §10 promises first, for a reader skimming the output; the rest follow.
  const { body: _body, eventId, endpoint, state, attempts, maxAttempts, replays, lastOutcome, deadReason, deadDetail, ...rest } =
    record;
  return { eventId, endpoint, state, attempts, maxAttempts, replays, lastOutcome, deadReason, deadDetail, ...rest };
}

export function describeState(record: DeliveryRecord): string {
  if (record.state === 'dead' && record.deadReason) return `dead (${record.deadReason})`;
  // Parked is a marker on a pending row (docs/contract.md §12): its endpoint is disabled.
  return record.state === 'pending' && record.parkedAt !== undefined ? 'pending (parked)' : record.state;
}

/** The full view of one row: fields, attempt history, audit trail. */
export function recordDetails(record: DeliveryRecord, nowMs: number): string {
  const pairs: [string, string][] = [
    ['event', record.eventId],
    ['endpoint', record.endpoint],
    ['state', describeState(record)],
  ];
  if (record.deadDetail) pairs.push(['why', truncate(record.deadDetail, 200)]);
  if (record.eventType) pairs.push(['type', record.eventType]);
  pairs.push(['attempts', `${record.attempts} of ${record.maxAttempts}`]);
  pairs.push(['replays', String(record.replays)]);
  if (record.lastOutcome) pairs.push(['last outcome', describeOutcome(record.lastOutcome)]);
  pairs.push(['created', formatInstant(record.createdAt, nowMs)]);
  if (record.deliveredAt !== undefined) pairs.push(['delivered', formatInstant(record.deliveredAt, nowMs)]);
  if (record.deadAt !== undefined) pairs.push(['died', formatInstant(record.deadAt, nowMs)]);
  // At an endpoint ordered per shipment (docs/contract.md §13): its place in its shipment's order, and
  // whether an operator let the shipment go on without it (`handoff release`).
  if (record.sequence !== undefined) pairs.push(['sequence', `${record.sequence} in its shipment (webhook-sequence)`]);
  if (record.releasedAt !== undefined) pairs.push(['released', `${formatInstant(record.releasedAt, nowMs)}: its shipment went on without it`]);
  if (record.parkedAt !== undefined) pairs.push(['parked', `${formatInstant(record.parkedAt, nowMs)}, until its endpoint is enabled`]);
  if (record.state === 'pending' && record.parkedAt === undefined && record.nextAttemptAt !== undefined) {
    pairs.push(['next attempt', formatInstant(record.nextAttemptAt, nowMs)]);
  }
  if (record.leaseOwner && record.leaseExpiresAt !== undefined && record.leaseExpiresAt > nowMs) {
    pairs.push(['claimed by', `${record.leaseOwner} until ${formatInstant(record.leaseExpiresAt, nowMs)}`]);
  }
  pairs.push(['policy', `${record.policy.version} (${record.policy.maxAttempts} attempts)`]);
  if (record.contentHash) pairs.push(['content hash', record.contentHash]);
  // The trace its first traced attempt was in (docs/contract.md §19): what to look up in X-Ray or an OTLP viewer.
  if (record.traceparent !== undefined) pairs.push(['trace', record.traceparent.split('-')[1] ?? record.traceparent]);

  const sections = [keyValues(pairs)];
  if (record.history.length > 0) {
    const older = record.attempts - record.history.length;
    sections.push(
      (older > 0 ? `history (latest ${record.history.length} attempts; ${older} older not kept)\n` : 'history\n') +
        table(
          [
            { header: '#', align: 'right' },
            { header: 'at' },
            { header: 'outcome' },
            { header: 'status', align: 'right' },
            { header: 'cause' },
            { header: 'took', align: 'right' },
          ],
          record.history.map((a) => [
            String(a.attempt),
            formatInstant(a.at, nowMs),
            a.outcome,
            a.status === undefined ? '' : String(a.status),
            a.cause ?? '',
            formatDuration(a.durationMs),
          ]),
        ),
    );
  }
  if (record.audit.length > 0) {
    sections.push(
      'audit\n' +
        table(
          [{ header: 'at' }, { header: 'action' }, { header: 'operator' }, { header: 'caller' }, { header: 'reason' }],
          // No caller: the replay ran where there is no identity to record (the sandbox).
          record.audit.map((e) => [formatInstant(e.at, nowMs), e.action, e.operator, e.caller ?? '(none)', truncate(e.reason, 80)]),
        ),
    );
  }
  return sections.join('\n\n');
}
