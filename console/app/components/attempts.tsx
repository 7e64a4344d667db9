/**
 * A delivery's attempt timeline, oldest first: when each attempt started, its outcome, the HTTP
 * status the receiver answered (or why no answer came; both when the status is another server's, the
 * token endpoint's or the proxy's: `auth 503`) and how long it took. The ledger keeps the
 * latest 20 attempts (`history`); `attempts` counts those since the last replay, so a delivery
 * replayed after many attempts can show more entries than its count.
 *
 * Each time is short enough for a phone's width: the time of day, with the date only when it is not
 * the day of the row before (for the first row, today); the full date and time is its tooltip.
 */
import type { AttemptEntry } from '../../../api/client/types';
import { formatDuration, formatTime, formatTimeInColumn } from '../format';
import './attempts.css';

/** How each outcome reads (docs/contract.md §4), and the colour it takes. */
const OUTCOMES: Readonly<Record<AttemptEntry['outcome'], { readonly label: string; readonly tone: string; readonly meaning: string }>> = {
  accepted: { label: 'accepted', tone: 'state-delivered', meaning: 'the receiver answered 2xx' },
  rejected: { label: 'rejected', tone: 'state-dead', meaning: 'the receiver refused it for good' },
  temporary: { label: 'temporary', tone: 'state-retry', meaning: 'to be retried' },
  unknown: { label: 'unknown', tone: 'state-pending', meaning: 'sent, no answer came: retried with the same event ID' },
};

export function AttemptTimeline({ history, attempts, label }: { history: readonly AttemptEntry[]; attempts: number; label: string }) {
  if (history.length === 0) return <p class="muted attempts-none">No attempt yet.</p>;
  const older = attempts - history.length;
  return (
    <div class="table-wrap attempts-wrap">
      <table class="attempts">
        <caption>
          {label}
          {older > 0 ? <span class="muted"> (the latest {history.length}; {older} older not kept)</span> : null}
        </caption>
        <thead>
          <tr>
            <th scope="col" class="num">
              #
            </th>
            <th scope="col">Time</th>
            <th scope="col">Outcome</th>
            <th scope="col">Status</th>
            <th scope="col" class="num">
              Took
            </th>
          </tr>
        </thead>
        <tbody>
          {history.map((entry, index) => {
            const outcome = OUTCOMES[entry.outcome] ?? { label: entry.outcome, tone: '', meaning: '' };
            return (
              // Attempt numbers start again after a replay: the position keys the row.
              <tr key={index}>
                <th scope="row" class="num">
                  {entry.attempt}
                </th>
                <td>
                  <time dateTime={new Date(entry.at).toISOString()} title={formatTime(entry.at)}>
                    {formatTimeInColumn(entry.at, index === 0 ? Date.now() : history[index - 1]!.at)}
                  </time>
                </td>
                <td>
                  <span class={`badge ${outcome.tone}`} title={outcome.meaning}>
                    {outcome.label}
                  </span>
                </td>
                <td>{statusCell(entry)}</td>
                <td class="num">{formatDuration(entry.durationMs)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** The receiver's status; the cause when no answer came; both when a cause comes with another server's status (`auth 503`, `proxy 407`). */
function statusCell(entry: AttemptEntry) {
  if (entry.status === undefined) return entry.cause ?? '—';
  const status = <span class="mono">{entry.status}</span>;
  return entry.cause === undefined ? status : (
    <>
      {entry.cause} {status}
    </>
  );
}
