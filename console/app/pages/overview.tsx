/**
 * Overview: each endpoint's state, health, and delivered, retried, dead and parked counts over the
 * last hour and 24 h, and the per-minute chart of deliveries and failures over the last hour. It
 * keeps itself current without a reload while the tab is visible, each part as often as it is
 * worth its cost, and says how often on the page:
 *
 * - the endpoints (`GET /v1/endpoints`, the first page of up to 100; a note says when there are
 *   more: their state, health and parked count) and the chart (`GET /v1/stats/minutes` for every
 *   endpoint together; in portal mode, where the API answers one of the owner's endpoints at a
 *   time, the sum of the owner's endpoints' series): every 10 s;
 * - each endpoint's last hour (`GET /v1/stats?endpoint&since=1h`, also its dead count now): every
 *   minute; its 24 h: every 10 minutes. Each of these reads the ledger's dead rows and the metrics
 *   for one endpoint, so a page of 100 endpoints asks for them 100 at a time, 4 at once.
 *
 * Every read starts again only once the one before has answered, so a slow API is not sent more
 * and more requests; a row shows "…" until its figures first come.
 */
import type { Endpoint } from '../../../api/client/types';
import { api, type Page } from '../api';
import { MinuteChart } from '../components/chart';
import { HealthText } from '../components/health';
import { ErrorNote, StateBadge } from '../components/notes';
import { endpointStats, minuteSeries, settled, summedSeries, type Series, type Stats } from '../figures';
import { formatCount, formatTimeOfDay } from '../format';
import { useEach, useLoad } from '../hooks';
import { endpointHref } from '../routes';
import { useSession } from '../session-context';
import './overview.css';

/** The endpoints and the chart. */
const LIST_EVERY_MS = 10_000;
/** Each endpoint's last hour. */
const HOUR_EVERY_MS = 60_000;
/** Each endpoint's last 24 h. */
const DAY_EVERY_MS = 600_000;
const MAX_ENDPOINTS = 100;
/** Per-endpoint calls in flight at once, for each window. */
const FAN_OUT = 4;

interface Listed {
  readonly endpoints: readonly Endpoint[];
  readonly more: boolean;
  readonly series: Series | Error;
  readonly loadedAt: number;
}

interface Row {
  readonly endpoint: Endpoint;
  readonly hour: Stats | Error | undefined;
  readonly day: Stats | Error | undefined;
}

export function OverviewPage() {
  const { portalOwner } = useSession();
  const listed = useLoad<Listed>(
    async () => {
      const endpoints = api.get<Page<Endpoint>>('/v1/endpoints', { limit: MAX_ENDPOINTS });
      // The operator's chart is every endpoint's together, read alongside the list; a portal's is its endpoints' sum.
      const [page, series] = await Promise.all([
        endpoints,
        portalOwner === undefined ? settled(minuteSeries('1h')) : endpoints.then((p) => settled(summedSeries('1h', p.items.map((e) => e.name)))),
      ]);
      return { endpoints: page.items, more: page.next !== null, series, loadedAt: Date.now() };
    },
    [portalOwner],
    LIST_EVERY_MS,
  );
  const names = listed.data?.endpoints.map((endpoint) => endpoint.name) ?? [];
  const hour = useEach(names, (name) => endpointStats(name, '1h'), HOUR_EVERY_MS, FAN_OUT);
  const day = useEach(names, (name) => endpointStats(name, '24h'), DAY_EVERY_MS, FAN_OUT);
  const data = listed.data;
  const rows: Row[] = (data?.endpoints ?? []).map((endpoint) => ({ endpoint, hour: hour.byKey.get(endpoint.name), day: day.byKey.get(endpoint.name) }));
  const metricsError = firstMetricsError(rows);

  return (
    <>
      <h1 tabIndex={-1}>Overview</h1>
      <p class="overview-status">
        {data === undefined ? (
          listed.loading ? (
            'Loading…'
          ) : (
            ''
          )
        ) : (
          <>
            Updated {formatTimeOfDay(data.loadedAt)} · the endpoints and the chart every 10 s, each endpoint's last hour every minute, its 24 h
            every 10 minutes
          </>
        )}
        {data !== undefined && listed.loading ? <span class="muted"> · updating…</span> : null}
      </p>
      <ErrorNote error={listed.error} />
      {data === undefined ? null : (
        <>
          <section class="panel overview-chart" aria-labelledby="chart-heading">
            <h2 id="chart-heading">
              Deliveries and failures per minute, last hour
              {portalOwner === undefined ? ', all endpoints' : `, ${portalOwner}'s ${rows.length === 1 ? 'endpoint' : `${rows.length} endpoints`} together`}
            </h2>
            <ChartPanel series={data.series} label={portalOwner === undefined ? 'All endpoints' : `${portalOwner}'s endpoints`} />
          </section>

          <section aria-labelledby="endpoints-heading">
            <h2 id="endpoints-heading">Endpoints</h2>
            {metricsError !== undefined ? (
              <p class="error" role="note">
                Metrics unavailable: {metricsError}. Delivered, retried and dead-lettered counts are not shown; dead and parked counts are the ledger's.
              </p>
            ) : null}
            {rows.length === 0 ? (
              <p class="muted">No endpoints{portalOwner === undefined ? '' : ` for ${portalOwner}`}.</p>
            ) : (
              <EndpointTable rows={rows} />
            )}
            {data.more ? (
              <p class="notice">
                The first {MAX_ENDPOINTS} endpoints are shown; there are more. <a href="#/endpoints">Endpoints</a> lists them all.
              </p>
            ) : null}
            <p class="muted overview-notes">
              Delivered: accepted by the receiver. Retried: attempts that were not a delivery's first. Dead: sent to the dead-letter queue in
              the window (an endpoint with recovery <code>drop</code> keeps its dead rows without one). Dead now and parked: the ledger's
              deliveries as they are now. State, health and parked are read every 10 s; each endpoint's last hour and dead now every minute
              {hour.readAt !== undefined ? ` (last at ${formatTimeOfDay(hour.readAt)})` : ''}; its 24 h every 10 minutes
              {day.readAt !== undefined ? ` (last at ${formatTimeOfDay(day.readAt)})` : ''}.
            </p>
          </section>
        </>
      )}
    </>
  );
}

function firstMetricsError(rows: readonly Row[]): string | undefined {
  for (const row of rows) {
    for (const stats of [row.hour, row.day]) {
      if (stats !== undefined && !(stats instanceof Error) && stats.metricsError !== undefined) return stats.metricsError;
    }
  }
  return undefined;
}

function ChartPanel({ series, label }: { series: Series | Error; label: string }) {
  if (series instanceof Error) return <ErrorNote error={series} />;
  if (series.metricsError !== undefined) {
    return (
      <p class="error" role="note">
        Metrics unavailable: {series.metricsError}
      </p>
    );
  }
  if (series.points.length === 0) return <p class="muted">No endpoint to chart.</p>;
  return (
    <>
      <MinuteChart points={series.points} label={`${label}, deliveries and failed attempts per minute`} id="overview-minutes" />
      {series.source !== '' ? <p class="muted chart-source">Source: {series.source}</p> : null}
    </>
  );
}

function EndpointTable({ rows }: { rows: readonly Row[] }) {
  return (
    <div class="table-wrap">
      <table class="overview-table">
        <colgroup>
          <col />
          <col />
          <col />
        </colgroup>
        <colgroup span={2} />
        <colgroup span={2} />
        <colgroup span={2} />
        <colgroup span={2} />
        <thead>
          <tr>
            <th scope="col" rowSpan={2}>
              Endpoint
            </th>
            <th scope="col" rowSpan={2}>
              State
            </th>
            <th scope="col" rowSpan={2}>
              Health
            </th>
            <th scope="colgroup" colSpan={2} class="group">
              Delivered
            </th>
            <th scope="colgroup" colSpan={2} class="group">
              Retried
            </th>
            <th scope="colgroup" colSpan={2} class="group">
              Dead
            </th>
            <th scope="colgroup" colSpan={2} class="group">
              Now
            </th>
          </tr>
          <tr>
            <th scope="col" class="num">1 h</th>
            <th scope="col" class="num">24 h</th>
            <th scope="col" class="num">1 h</th>
            <th scope="col" class="num">24 h</th>
            <th scope="col" class="num">1 h</th>
            <th scope="col" class="num">24 h</th>
            <th scope="col" class="num">Dead</th>
            <th scope="col" class="num">Parked</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.endpoint.name} data-endpoint={row.endpoint.name}>
              <th scope="row">
                <a href={endpointHref(row.endpoint.name)}>{row.endpoint.name}</a>
                {row.endpoint.owner !== null ? <span class="muted owner"> {row.endpoint.owner}</span> : null}
              </th>
              <td>
                <StateBadge state={row.endpoint.state} />
              </td>
              <td>
                <HealthText health={row.endpoint.health} />
              </td>
              <Figure stats={row.hour} pick={(s) => s.deliveredCount} name="delivered-1h" />
              <Figure stats={row.day} pick={(s) => s.deliveredCount} name="delivered-24h" />
              <Figure stats={row.hour} pick={(s) => s.retriedAttempts} name="retried-1h" />
              <Figure stats={row.day} pick={(s) => s.retriedAttempts} name="retried-24h" />
              <Figure stats={row.hour} pick={(s) => s.deadLettered} name="dead-1h" />
              <Figure stats={row.day} pick={(s) => s.deadLettered} name="dead-24h" />
              <Figure stats={row.hour} pick={(s) => s.deadCount} name="dead-now" atLeast={(s) => s.capped.dead} />
              <Parked row={row} />
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The parked count: the list's (read every 10 s), else the last hour's stats'. */
function Parked({ row }: { row: Row }) {
  if (row.endpoint.parked !== null) {
    return (
      <td class="num" data-figure="parked">
        {formatCount(row.endpoint.parked)}
      </td>
    );
  }
  return <Figure stats={row.hour} pick={(s) => s.parkedCount} name="parked" />;
}

/** One figure of a row: the count, "n/a" when its source could not be read, "…" before the first read. */
function Figure(props: {
  stats: Stats | Error | undefined;
  pick: (stats: Stats) => number | null;
  name: string;
  atLeast?: (stats: Stats) => boolean;
}) {
  const { stats } = props;
  if (stats === undefined) return <td class="num muted" data-figure={props.name}>…</td>;
  if (stats instanceof Error) {
    return (
      <td class="num muted" data-figure={props.name} title={stats.message}>
        n/a
      </td>
    );
  }
  const value = props.pick(stats);
  if (value === null) {
    return (
      <td class="num muted" data-figure={props.name} title={stats.metricsError ?? 'not counted'}>
        n/a
      </td>
    );
  }
  return (
    <td class="num" data-figure={props.name}>
      {props.atLeast?.(stats) ? '≥ ' : ''}
      {formatCount(value)}
    </td>
  );
}
