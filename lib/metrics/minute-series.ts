/**
 * The consumer's counts minute by minute, as the console charts them: every minute of a window
 * gets one entry, oldest first, a minute nothing was published in as zeros, whatever the source
 * answered with (CloudWatch leaves out a period with no data points; the sandbox's sink keeps only
 * the minutes something happened in). Pure: the metrics readers fill a series from their own
 * figures with `minuteSeries`, and the management API reads it (`GET /v1/stats/minutes`).
 */
import type { MetricsWindow, MinuteMetrics } from './metrics-reader';

export const MINUTE_MS = 60_000;

/** Epoch ms of the start of the minute `ms` falls in. */
export function minuteOf(ms: number): number {
  return Math.floor(ms / MINUTE_MS) * MINUTE_MS;
}

/**
 * The last `minutes` whole minutes at `nowMs`, the last of them the current one (still filling):
 * from the start of the minute `minutes - 1` before the current one to the end of the current one.
 * @throws RangeError for a count that is not a whole number of at least 1
 */
export function lastMinutes(nowMs: number, minutes: number): MetricsWindow {
  if (!Number.isInteger(minutes) || minutes < 1) throw new RangeError(`minutes must be a whole number of at least 1, got ${minutes}`);
  const current = minuteOf(nowMs);
  return { startMs: current - (minutes - 1) * MINUTE_MS, endMs: current + MINUTE_MS };
}

/**
 * One entry for every minute the window touches, from the minute its start falls in to the one
 * its last millisecond falls in, oldest first: the sum of the counts given for that minute (a
 * count is put in the minute its `startMs` falls in; several for one minute are added, as a
 * source's pages may split one), zero where none was given. Counts outside the window are left out.
 */
export function minuteSeries(window: MetricsWindow, counts: Iterable<MinuteMetrics>): MinuteMetrics[] {
  if (window.endMs <= window.startMs) return [];
  const first = minuteOf(window.startMs);
  const last = minuteOf(window.endMs - 1);
  const delivered: number[] = [];
  const attempts: number[] = [];
  for (let at = first; at <= last; at += MINUTE_MS) {
    delivered.push(0);
    attempts.push(0);
  }
  for (const count of counts) {
    const index = (minuteOf(count.startMs) - first) / MINUTE_MS;
    if (index < 0 || index >= delivered.length) continue;
    delivered[index]! += count.delivered;
    attempts[index]! += count.attempts;
  }
  return delivered.map((d, i) => ({ startMs: first + i * MINUTE_MS, delivered: d, attempts: attempts[i]! }));
}

/**
 * The attempts of a minute that did not deliver (a receiver's refusal, a timeout, an error):
 * `Attempts` less `Delivered`. Never below zero: a delivery and its attempt are published in one
 * document, so in one minute, but a count that says otherwise is not read as a negative failure.
 */
export function failedAttempts(minute: Pick<MinuteMetrics, 'delivered' | 'attempts'>): number {
  return Math.max(0, minute.attempts - minute.delivered);
}
