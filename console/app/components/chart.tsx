/**
 * The per-minute chart of deliveries and failures: an inline SVG drawn from the points, no library.
 * Deliveries are bars, failures a dashed line with dots, so the two differ by shape as well as by
 * colour. The SVG is drawn at the width it is shown at (a ResizeObserver follows it), so its text
 * stays readable on a phone rather than shrinking with a scaled drawing. A screen reader gets the
 * totals (its label and `<title>`), and every minute's figures are in a table under "Show as table".
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { formatClock, formatCount } from '../format';
import './chart.css';

/** One minute: when it started, and what the consumer did in it. */
export interface ChartPoint {
  /** The minute's start (epoch ms). */
  readonly at: number;
  readonly delivered: number;
  readonly failed: number;
}

const HEIGHT = 220;
const MARGIN = { top: 14, right: 14, bottom: 44, left: 52 };
const MINUTE_STEPS = [1, 5, 10, 15, 30, 60, 120, 180, 360, 720];

/** The sums of a series, for its label and a page's own summary. */
export function chartTotals(points: readonly ChartPoint[]): { delivered: number; failed: number } {
  let delivered = 0;
  let failed = 0;
  for (const point of points) {
    delivered += point.delivered;
    failed += point.failed;
  }
  return { delivered, failed };
}

/** The smallest 1, 2 or 5 × 10ⁿ step giving at most `ticks` steps up to `max`, and the axis top it makes. */
function yScale(max: number, ticks = 4): { top: number; step: number } {
  if (max <= 0) return { top: 1, step: 1 };
  const rough = max / ticks;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((f) => f * power).find((s) => s >= rough) ?? 10 * power;
  const whole = Math.max(1, Math.round(step));
  return { top: Math.ceil(max / whole) * whole, step: whole };
}

export function MinuteChart({ points, label, id }: { points: readonly ChartPoint[]; label: string; id: string }) {
  const box = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(720);
  useEffect(() => {
    const element = box.current;
    if (element === null || typeof ResizeObserver === 'undefined') return undefined;
    const observer = new ResizeObserver(([entry]) => {
      const next = Math.round(entry?.contentRect.width ?? 0);
      if (next > 0) setWidth(next);
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, []);

  const totals = chartTotals(points);
  const minutes = points.length;
  const summary =
    `${label}: ${formatCount(totals.delivered)} delivered and ${formatCount(totals.failed)} failed attempts ` +
    `over the last ${minutes} minute${minutes === 1 ? '' : 's'}` +
    (minutes > 0 ? `, ${formatClock(points[0]!.at)} to ${formatClock(points[minutes - 1]!.at)}` : '');

  const plotW = Math.max(60, width - MARGIN.left - MARGIN.right);
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const max = points.reduce((m, p) => Math.max(m, p.delivered, p.failed), 0);
  const { top, step } = yScale(max);
  const slot = minutes > 0 ? plotW / minutes : plotW;
  const x = (i: number) => MARGIN.left + slot * i + slot / 2;
  const y = (value: number) => MARGIN.top + plotH - (value / top) * plotH;
  const barW = Math.max(1, slot * 0.7);

  const yTicks: number[] = [];
  for (let v = 0; v <= top; v += step) yTicks.push(v);
  // Label the minutes on a round step (every 10 min, every hour …), as many as fit.
  const fit = Math.max(2, Math.floor(plotW / 64));
  const every = MINUTE_STEPS.find((s) => minutes / s <= fit) ?? MINUTE_STEPS[MINUTE_STEPS.length - 1]!;
  const xTicks = points
    .map((p, i) => ({ i, at: p.at }))
    .filter(({ at }) => Math.round(at / 60_000) % every === 0);

  const failedPath = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(i).toFixed(1)},${y(p.failed).toFixed(1)}`).join(' ');

  return (
    <figure class="chart-figure">
      <div ref={box} class="chart-box">
        <svg class="chart" width={width} height={HEIGHT} viewBox={`0 0 ${width} ${HEIGHT}`} role="img" aria-label={summary}>
          <title>{summary}</title>
          <g class="axis" aria-hidden="true">
            {yTicks.map((v) => (
              <g key={`y${v}`}>
                <line class="grid" x1={MARGIN.left} x2={MARGIN.left + plotW} y1={y(v)} y2={y(v)} />
                <text x={MARGIN.left - 6} y={y(v)} dy="0.32em" text-anchor="end">
                  {formatCount(v)}
                </text>
              </g>
            ))}
            <line class="baseline" x1={MARGIN.left} x2={MARGIN.left + plotW} y1={y(0)} y2={y(0)} />
            {xTicks.map(({ i, at }) => (
              <g key={`x${at}`}>
                <line class="tick" x1={x(i)} x2={x(i)} y1={y(0)} y2={y(0) + 4} />
                <text x={x(i)} y={y(0) + 16} text-anchor="middle">
                  {formatClock(at)}
                </text>
              </g>
            ))}
            <text class="axis-title" x={MARGIN.left + plotW / 2} y={HEIGHT - 6} text-anchor="middle">
              Time (minute started)
            </text>
            <text class="axis-title" transform={`translate(14 ${MARGIN.top + plotH / 2}) rotate(-90)`} text-anchor="middle">
              Per minute
            </text>
          </g>
          <g class="series-delivered" aria-hidden="true">
            {points.map((p, i) =>
              p.delivered > 0 ? <rect key={p.at} x={x(i) - barW / 2} y={y(p.delivered)} width={barW} height={y(0) - y(p.delivered)} /> : null,
            )}
          </g>
          <g class="series-failed" aria-hidden="true">
            {minutes > 1 ? <path d={failedPath} /> : null}
            {points.map((p, i) => (p.failed > 0 ? <circle key={p.at} cx={x(i)} cy={y(p.failed)} r={3} /> : null))}
          </g>
          <g class="hover" aria-hidden="true">
            {points.map((p, i) => (
              <rect key={p.at} x={x(i) - slot / 2} y={MARGIN.top} width={slot} height={plotH}>
                <title>{`${formatClock(p.at)}: ${formatCount(p.delivered)} delivered, ${formatCount(p.failed)} failed`}</title>
              </rect>
            ))}
          </g>
        </svg>
      </div>
      <figcaption class="legend">
        <span>
          <span class="swatch delivered" aria-hidden="true" />
          Delivered ({formatCount(totals.delivered)})
        </span>
        <span>
          <span class="swatch failed" aria-hidden="true" />
          Failed attempts ({formatCount(totals.failed)})
        </span>
      </figcaption>
      <details class="chart-table">
        <summary>Show as table</summary>
        <div class="table-wrap">
          <table id={id}>
            <caption class="visually-hidden">{label}, per minute</caption>
            <thead>
              <tr>
                <th scope="col">Minute</th>
                <th scope="col" class="num">
                  Delivered
                </th>
                <th scope="col" class="num">
                  Failed attempts
                </th>
              </tr>
            </thead>
            <tbody>
              {points.map((p) => (
                <tr key={p.at}>
                  <th scope="row">{formatClock(p.at)}</th>
                  <td class="num">{formatCount(p.delivered)}</td>
                  <td class="num">{formatCount(p.failed)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
