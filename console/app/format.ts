/** How the page writes times, durations and counts: in the reader's locale and time zone. */

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const timeOnly = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const number = new Intl.NumberFormat();

/** A time from epoch ms or ISO text; an em dash for none. */
export function formatTime(value: number | string | null | undefined): string {
  if (value === null || value === undefined || value === '') return '—';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : dateTime.format(date);
}

export function formatClock(value: number | string): string {
  return timeOnly.format(new Date(value));
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
