/**
 * The replay use case (docs/contract.md §6): an operator returns a dead record to `pending` and the event
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

/**
 * The audit entry's texts are bounded, so a row stays small and an entry stays readable: the
 * name the operator typed, why, and the caller identity (an STS ARN is at most 2048 characters).
 * Lengths count characters (code points), not bytes.
 */
export const OPERATOR_MAX_CHARS = 128;
export const REASON_MAX_CHARS = 512;
export const CALLER_MAX_CHARS = 2048;

const AUDIT_TEXT_LIMITS = { operator: OPERATOR_MAX_CHARS, reason: REASON_MAX_CHARS, caller: CALLER_MAX_CHARS } as const;
export type AuditTextField = keyof typeof AUDIT_TEXT_LIMITS;

/**
 * Control characters, format characters (bidi overrides, zero-width) and line separators: an audit
 * entry is shown to the next operator, and must read as what it says.
 */
const HIDDEN_OR_CONTROL = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

/** An operator name, reason or caller that an audit entry cannot keep. Its message names the field. */
export class ReplayInputError extends Error {
  override readonly name = 'ReplayInputError';
  readonly code = 'invalid-replay-input';
  constructor(
    readonly field: AuditTextField,
    problem: string,
  ) {
    super(`${field} ${problem}`);
  }
}

/** Why an audit text is refused (`"is empty"`, `"is 600 characters, …"`), or undefined if it may be kept. */
export function auditTextProblem(field: AuditTextField, value: string): string | undefined {
  if (value.trim() === '') return 'is empty';
  const length = [...value].length;
  const max = AUDIT_TEXT_LIMITS[field];
  if (length > max) return `is ${length} characters, over the ${max}-character limit`;
  if (HIDDEN_OR_CONTROL.test(value)) return 'contains a control or invisible formatting character';
  return undefined;
}

/** @throws ReplayInputError naming the first field that cannot be kept */
export function checkReplayInput(input: Pick<ReplayInput, 'operator' | 'reason' | 'caller'>): void {
  const fields: [AuditTextField, string | undefined][] = [
    ['operator', input.operator],
    ['reason', input.reason],
    ['caller', input.caller],
  ];
  for (const [field, value] of fields) {
    if (value === undefined && field === 'caller') continue;
    const problem = auditTextProblem(field, value ?? '');
    if (problem) throw new ReplayInputError(field, problem);
  }
}

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
 * @throws ReplayInputError before anything is written, when the operator, reason or caller cannot be kept.
 * @throws ReplayRefusedError from the ledger when the record is missing, not dead, or has no event.
 * @throws ReplayEnqueueError when the row was replayed but the enqueue failed.
 */
export async function replayDelivery(input: ReplayInput, deps: ReplayDeps): Promise<DeliveryRecord> {
  checkReplayInput(input);
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
