/**
 * What one endpoint's page shows of its activity: its last hour (figures and the per-minute chart)
 * and its latest dead deliveries, newest first (pages/endpoint.tsx).
 */
import type { Delivery, Page } from '../../../api/client/types';
import { api } from '../api';
import { MinuteChart } from '../components/chart';
import { ErrorNote } from '../components/notes';
import type { endpointStats, minuteSeries } from '../figures';
import { formatCount, formatDuration, formatTime } from '../format';
import { readPages } from '../paging';
import { href } from '../routes';

const HOUR_MS = 3_600_000;
const DEAD_SHOWN = 10;
/** Pages of the dead listing read to reach the newest (it lists oldest death first). */
const DEAD_PAGES = 3;

export function LastHour({ figures, error, name }: { figures: { stats: Awaited<ReturnType<typeof endpointStats>> | Error; series: Awaited<ReturnType<typeof minuteSeries>> | Error } | undefined; error: Error | undefined; name: string }) {
  if (figures === undefined) return error !== undefined ? <ErrorNote error={error} /> : <p class="loading">Loading…</p>;
  const { stats, series } = figures;
  return (
    <>
      {stats instanceof Error ? (
        <ErrorNote error={stats} />
      ) : (
        <>
          {stats.metricsError !== undefined ? (
            <p class="error" role="note">
              Metrics unavailable: {stats.metricsError}
            </p>
          ) : null}
          <dl class="figures">
            <div>
              <dt>Delivered</dt>
              <dd data-figure="delivered-1h">{formatCount(stats.deliveredCount)}</dd>
            </div>
            <div>
              <dt>Retried attempts</dt>
              <dd data-figure="retried-1h">{formatCount(stats.retriedAttempts)}</dd>
            </div>
            <div>
              <dt>Dead-lettered</dt>
              <dd data-figure="dead-1h">{formatCount(stats.deadLettered)}</dd>
            </div>
            <div>
              <dt>Dead now</dt>
              <dd data-figure="dead-now">
                {stats.capped.dead ? '≥ ' : ''}
                {formatCount(stats.deadCount)}
              </dd>
            </div>
            <div>
              <dt>Latency p50 / p99</dt>
              <dd>
                {formatDuration(stats.latencyMs.p50)} / {formatDuration(stats.latencyMs.p99)}
              </dd>
            </div>
          </dl>
        </>
      )}
      {series instanceof Error ? (
        <ErrorNote error={series} />
      ) : series.metricsError !== undefined ? (
        stats instanceof Error || stats.metricsError === undefined ? (
          <p class="error" role="note">
            Metrics unavailable: {series.metricsError}
          </p>
        ) : null
      ) : (
        <MinuteChart points={series.points} label={`${name}, deliveries and failed attempts per minute`} id="endpoint-minutes" />
      )}
    </>
  );
}

export interface LatestDead {
  readonly items: readonly Delivery[];
  /** The window read: the last 24 h, or the last hour when the day held more than the pages read. */
  readonly window: '24 h' | '1 h';
  /** Whether every death of the window was read (so the items shown are the newest). */
  readonly complete: boolean;
  readonly read: number;
}

/**
 * The newest dead deliveries the listing gives. It lists oldest death first, so the page reads the
 * last 24 h to its end (up to DEAD_PAGES pages) and shows the last ones; when the day holds more
 * than that, the last hour the same way; when even the hour does, it says that what it shows are
 * not the newest.
 */
export async function latestDead(name: string): Promise<LatestDead> {
  let last: LatestDead | undefined;
  for (const [window, ms] of [['24 h', 24 * HOUR_MS], ['1 h', HOUR_MS]] as const) {
    const since = new Date(Date.now() - ms).toISOString();
    const read = await readPages((cursor) => api.get<Page<Delivery>>('/v1/dead', { endpoint: name, since, limit: 100, cursor }), { maxRequests: DEAD_PAGES });
    last = { items: read.items.slice(-DEAD_SHOWN).reverse(), window, complete: read.next === null, read: read.items.length };
    if (last.complete) return last;
  }
  return last!;
}

export function DeadList({ name, dead, error, loading }: { name: string; dead: LatestDead | undefined; error: Error | undefined; loading: boolean }) {
  if (dead === undefined) return error !== undefined ? <ErrorNote error={error} /> : loading ? <p class="loading">Loading…</p> : null;
  const all = href('/dead', { endpoint: name });
  return (
    <>
      {dead.items.length === 0 ? (
        <p>No delivery to {name} died in the last {dead.window}.</p>
      ) : (
        <>
          <p class="muted">
            {dead.complete
              ? `The newest ${dead.items.length} of the ${formatCount(dead.read)} that died in the last ${dead.window}, newest first.`
              : `More than ${formatCount(dead.read)} died in the last hour: these are the latest of the first ${formatCount(dead.read)} read, not the newest. Dead letters lists them all.`}
          </p>
          <div class="table-wrap">
            <table class="dead-table">
              <thead>
                <tr>
                  <th scope="col">Died</th>
                  <th scope="col">Event</th>
                  <th scope="col">Type</th>
                  <th scope="col">Reason</th>
                  <th scope="col" class="num">
                    Attempts
                  </th>
                </tr>
              </thead>
              <tbody>
                {dead.items.map((delivery) => (
                  <tr key={delivery.eventId}>
                    <td>{formatTime(delivery.deadAt ?? delivery.stateSince)}</td>
                    <th scope="row">
                      <a href={href('/lookup', { id: delivery.eventId })}>
                        <code>{delivery.eventId}</code>
                      </a>
                    </th>
                    <td>{delivery.eventType ?? <span class="muted">—</span>}</td>
                    <td class="reason">
                      {delivery.deadReason ?? 'dead'}
                      {delivery.deadDetail !== undefined ? <span class="muted">: {delivery.deadDetail}</span> : null}
                    </td>
                    <td class="num">{formatCount(delivery.attempts)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      <p>
        <a href={all}>All dead deliveries of {name}</a> (Dead letters, where they can be replayed).
      </p>
    </>
  );
}
