/**
 * What Dead letters says of a replay (pages/dead-letters.tsx): what it will do before it asks for a
 * reason (the selection, or the dry run's count of everything matching), how far it got, and what
 * came of it, the API's own words for each refusal.
 */
import { formatCount, formatTime } from '../format';
import { BEGINNING, type ReplayOutcome, type ReplayPlan } from '../replay';

export function PlanSummary({ plan }: { plan: ReplayPlan }) {
  if (plan.kind === 'selected') {
    return (
      <p>
        {plan.count === 1 ? 'The selected delivery is' : `The ${formatCount(plan.count)} selected deliveries are each`} sent again
        now, with the same event ID and body, its attempts starting over. The reason is kept in each delivery's audit.
      </p>
    );
  }
  return (
    <>
      <p>
        A dry run counted {formatCount(plan.count)} dead {plan.count === 1 ? 'delivery' : 'deliveries'} matching the filter
        {plan.deadReason === undefined ? '' : ` (${plan.deadReason})`}, dead{' '}
        {plan.deadSince === BEGINNING ? `before ${formatTime(plan.until)}` : `from ${formatTime(plan.deadSince)} to ${formatTime(plan.until)}`}
        {plan.parts.length === 1 ? (
          <>
            , at <strong>{plan.parts[0]!.endpoint}</strong>
          </>
        ) : (
          `, at ${plan.parts.length} endpoints`
        )}
        . They are sent again paced (about 10 a second), each with its own audit entry of this reason.
      </p>
      {plan.parts.length > 1 ? (
        <ul class="plan-parts">
          {plan.parts.map((part) => (
            <li key={part.endpoint}>
              {part.endpoint}: {formatCount(part.matched)}
            </li>
          ))}
        </ul>
      ) : null}
      {plan.withoutEvent > 0 ? (
        <p class="muted">
          {formatCount(plan.withoutEvent)} invalid {plan.withoutEvent === 1 ? 'message is' : 'messages are'} left out: no event to send.
        </p>
      ) : null}
    </>
  );
}

export function Progress({ done, total }: { done: number; total: number }) {
  return (
    <div class="notice replay-progress" role="status">
      <span>
        Replaying: {formatCount(done)} of {formatCount(total)}
      </span>
      <progress max={total} value={done} aria-hidden="true" />
    </div>
  );
}

export function OutcomeNote({ outcome }: { outcome: ReplayOutcome }) {
  const failed = outcome.refused.length > 0 || outcome.enqueueFailed.length > 0;
  return (
    <div class={`dead-outcome ${failed ? 'error' : 'notice'}`} role="status">
      <p class="outcome-line">
        Replayed {formatCount(outcome.replayed)} of {formatCount(outcome.total)} dead {outcome.total === 1 ? 'delivery' : 'deliveries'}.
        {outcome.noLongerDead > 0 ? ` ${formatCount(outcome.noLongerDead)} no longer dead (replayed or delivered by something else first).` : ''}
      </p>
      {outcome.refused.length > 0 ? (
        <>
          <p class="outcome-line">Refused:</p>
          <ul>
            {outcome.refused.map((refusal, index) => (
              <li key={index}>
                {refusal.what}: {refusal.message}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {outcome.enqueueFailed.length > 0 ? (
        <p class="outcome-line">
          Pending again, but their message could not be sent (send these events again): {outcome.enqueueFailed.join(', ')}
        </p>
      ) : null}
    </div>
  );
}
