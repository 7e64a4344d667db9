/** How the page writes times, durations and counts: in the reader's locale and time zone. */

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const shortDateTime = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
const timeOnly = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const timeOfDay = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });
const number = new Intl.NumberFormat();

/** A time from epoch ms or ISO text; an em dash for none. */
export function formatTime(value: number | string | null | undefined): string {
  if (value === null || value === undefined || value === '') return '—';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : dateTime.format(date);
}

/** Hours and minutes: the chart's minutes. */
export function formatClock(value: number | string): string {
  return timeOnly.format(new Date(value));
}

/** Hours, minutes and seconds: when the page last read something. */
export function formatTimeOfDay(value: number | string): string {
  return timeOfDay.format(new Date(value));
}

/**
 * A time in a column of times (an attempt timeline), short enough for a phone's width: the time of
 * day alone when it falls on the same day as `reference` (the row before, or for the first row
 * today), else with its month and day too.
 */
export function formatTimeInColumn(value: number | string, reference: number | string = Date.now()): string {
  const date = new Date(value);
  return date.toDateString() === new Date(reference).toDateString() ? timeOfDay.format(date) : shortDateTime.format(date);
}

/** A duration in ms: `340 ms`, `2.1 s`, `4 min`, `3 h`. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

export function formatCount(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : number.format(value);
}

/** "in 5 min" / "3 min ago" from now. */
export function formatRelative(value: number | string | null | undefined, now = Date.now()): string {
  if (value === null || value === undefined) return '—';
  const at = new Date(value).getTime();
  const delta = at - now;
  const text = formatDuration(Math.abs(delta));
  return delta >= 0 ? `in ${text}` : `${text} ago`;
}

/** `2026-12-05T10:30` in the reader's zone, for a datetime-local input, from an ISO time. */
export function localInputOf(iso: string | undefined): string {
  if (iso === undefined || iso === '') return '';
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return '';
  const two = (n: number) => String(n).padStart(2, '0');
  return `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())}T${two(at.getHours())}:${two(at.getMinutes())}`;
}

/** A datetime-local input's value as an ISO time in UTC, which the API takes and any reader's zone reads alike. */
export function isoOfLocalInput(value: string): string | undefined {
  if (value === '') return undefined;
  // A date-time without a zone is the reader's local time.
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? undefined : at.toISOString();
}
