/**
 * Overview: each endpoint's state, health, and delivered, retried, dead and parked counts over the
 * last hour and 24 h, and the per-minute chart of deliveries and failures over the last hour. It
 * loads again every 10 s while the tab is visible, without a reload, and says when it last did.
 *
 * The endpoints are the first page of `GET /v1/endpoints` (up to 100; a note says when there are
 * more). Each row's figures are `GET /v1/stats?endpoint&since`: the last hour's every 10 s, the last
 * 24 h's once a minute (they move slowly, and each is a read of the metrics per endpoint). The chart
 * is `GET /v1/stats/minutes` for every endpoint together; in portal mode, where the API answers one
 * of the owner's endpoints at a time, the sum of the owner's endpoints' series.
 */
import { useRef } from 'preact/hooks';
import type { Endpoint } from '../../../api/client/types';
import { api, type Page } from '../api';
import { MinuteChart } from '../components/chart';
import { endpointStats, mapLimit, minuteSeries, settled, summedSeries, type Series, type Stats } from '../components/figures';
import { HealthText } from '../components/health';
import { ErrorNote, StateBadge } from '../components/notes';
import { formatCount, formatTime } from '../format';
import { useLoad } from '../hooks';
import { endpointHref } from '../routes';
import { useSession } from '../session-context';
import './overview.css';

const REFRESH_MS = 10_000;
const DAY_REFRESH_MS = 60_000;
const MAX_ENDPOINTS = 100;
/** Per-endpoint calls in flight at once. */
const FAN_OUT = 4;

interface Row {
  readonly endpoint: Endpoint;
  readonly hour: Stats | Error;
  readonly day: Stats | Error | undefined;
}

interface Overview {
  readonly rows: readonly Row[];
  readonly more: boolean;
  readonly series: Series | Error;
  readonly loadedAt: number;
  readonly dayAt: number;
}

export function OverviewPage() {
  const { portalOwner } = useSession();
  // The 24 h figures, kept between loads and read again once a minute.
  const day = useRef<{ at: number; byName: Map<string, Stats | Error> }>({ at: 0, byName: new Map() });
  const loaded = useLoad<Overview>(
    async () => {
      const page = await api.get<Page<Endpoint>>('/v1/endpoints', { limit: MAX_ENDPOINTS });
      const names = page.items.map((endpoint) => endpoint.name);
      const now = Date.now();
      const dayDue = now - day.current.at >= DAY_REFRESH_MS || names.some((name) => !day.current.byName.has(name));
      const [hours, days, series] = await Promise.all([
        mapLimit(names, FAN_OUT, (name) => settled(endpointStats(name, '1h'))),
        dayDue ? mapLimit(names, FAN_OUT, (name) => settled(endpointStats(name, '24h'))) : undefined,
        settled(portalOwner === undefined ? minuteSeries('1h') : summedSeries('1h', names)),
      ]);
      if (days !== undefined) day.current = { at: now, byName: new Map(names.map((name, i) => [name, days[i]!])) };
      return {
        rows: page.items.map((endpoint, i) => ({ endpoint, hour: hours[i]!, day: day.current.byName.get(endpoint.name) })),
        more: page.next !== null,
        series,
        loadedAt: Date.now(),
        dayAt: day.current.at,
      };
    },
    [portalOwner],
    REFRESH_MS,
  );
  const data = loaded.data;
  const metricsError = data === undefined ? undefined : firstMetricsError(data);

  return (
    <>
      <h1 tabIndex={-1}>Overview</h1>
      <p class="overview-status">
        {data === undefined ? (loaded.loading ? 'Loading…' : '') : <>Updated {clock.format(data.loadedAt)} · every 10 s</>}
        {data !== undefined && loaded.loading ? <span class="muted"> · updating…</span> : null}
      </p>
      <ErrorNote error={loaded.error} />
      {data === undefined ? null : (
        <>
          <section class="panel overview-chart" aria-labelledby="chart-heading">
            <h2 id="chart-heading">
              Deliveries and failures per minute, last hour
              {portalOwner === undefined ? ', all endpoints' : `, ${portalOwner}'s ${data.rows.length === 1 ? 'endpoint' : `${data.rows.length} endpoints`} together`}
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
            {data.rows.length === 0 ? (
              <p class="muted">No endpoints{portalOwner === undefined ? '' : ` for ${portalOwner}`}.</p>
            ) : (
              <EndpointTable rows={data.rows} />
            )}
            {data.more ? (
              <p class="notice">
                The first {MAX_ENDPOINTS} endpoints are shown; there are more. <a href="#/endpoints">Endpoints</a> lists them all.
              </p>
            ) : null}
            <p class="muted overview-notes">
              Delivered: accepted by the receiver. Retried: attempts that were not a delivery's first. Dead: sent to the dead-letter queue in
              the window (an endpoint with recovery <code>drop</code> keeps its dead rows without one). Dead now and parked: the ledger's
              deliveries as they are now. The last hour's figures are read every 10 s, the 24 h figures every minute
              {data.dayAt > 0 ? ` (last at ${formatTime(data.dayAt)})` : ''}.
            </p>
          </section>
        </>
      )}
    </>
  );
}

const clock = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });

function firstMetricsError(data: Overview): string | undefined {
  for (const row of data.rows) {
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
              <Figure stats={row.hour} pick={(s) => s.parkedCount ?? row.endpoint.parked} name="parked" />
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
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
