/**
 * Output: aligned columns, durations a person reads at a glance, and nothing that came from
 * outside (an event's keys, a receiver's response, a ledger row) reaching the terminal raw.
 *
 * Every byte the command writes passes `safe` (human text, error lines, commander's own messages)
 * or `jsonText` (`--json`), both in cli/main.ts; the table helpers apply `safe` per cell too, so a
 * cell stays one line and the columns stay aligned. The sanitiser itself is lib/terminal.ts's,
 * shared with the sandbox.
 */
import { escapeUnsafeInJson, safe } from '../lib/terminal';

export type Align = 'left' | 'right';

export interface Column {
  readonly header: string;
  readonly align?: Align;
}

/** Columns padded to their widest cell, two spaces apart, no trailing spaces. */
export function table(columns: readonly Column[], rows: readonly (readonly string[])[]): string {
  const cells = [columns.map((c) => c.header), ...rows.map((row) => row.map((cell) => safe(cell)))];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => width(row[i] ?? ''))));
  return cells
    .map((row) =>
      columns
        .map((column, i) => pad(row[i] ?? '', widths[i] ?? 0, column.align ?? 'left'))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** `label  value` lines with the values aligned. */
export function keyValues(pairs: readonly (readonly [string, string])[]): string {
  const labelWidth = Math.max(0, ...pairs.map(([label]) => width(label)));
  return pairs.map(([label, value]) => `${pad(label, labelWidth, 'left')}  ${safe(value)}`.trimEnd()).join('\n');
}

/** 850 ms, 12.3 s, 4 min 5 s, 2 h 3 min, 3 d 4 h. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} s`;
  const s = Math.floor(seconds);
  if (s < 3600) return joinUnits(Math.floor(s / 60), 'min', s % 60, 's');
  if (s < 86_400) return joinUnits(Math.floor(s / 3600), 'h', Math.floor((s % 3600) / 60), 'min');
  return joinUnits(Math.floor(s / 86_400), 'd', Math.floor((s % 86_400) / 3600), 'h');
}

/** An instant as ISO-8601 UTC to the second, with how long ago it was. */
export function formatInstant(epochMs: number, nowMs: number): string {
  const iso = new Date(epochMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const delta = nowMs - epochMs;
  return delta >= 0 ? `${iso} (${formatDuration(delta)} ago)` : `${iso} (in ${formatDuration(-delta)})`;
}

export function formatPercent(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

/** Shortens to `max` characters, marking the cut. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

/** `--json` output: pretty-printed, with `escapeUnsafeInJson` applied. */
export function jsonText(value: unknown): string {
  return escapeUnsafeInJson(JSON.stringify(value, null, 2) ?? 'null');
}

function joinUnits(major: number, majorUnit: string, minor: number, minorUnit: string): string {
  return minor === 0 ? `${major} ${majorUnit}` : `${major} ${majorUnit} ${minor} ${minorUnit}`;
}

function width(text: string): number {
  return [...text].length;
}

function pad(text: string, to: number, align: Align): string {
  const fill = ' '.repeat(Math.max(0, to - width(text)));
  return align === 'right' ? fill + text : text + fill;
}
