/**
 * An endpoint's health as the consumers last wrote it (docs/contract.md §12): paused by
 * back-pressure until a time, failing since a time, or fine; in words, with the times in full.
 */
import type { EndpointHealth } from '../../../api/client/types';
import { formatCount, formatRelative, formatTime } from '../format';
import './health.css';

/** The health in one short phrase: what a table cell or a heading's line says. */
export function healthWords(health: EndpointHealth, now = Date.now()): { tone: 'ok' | 'paused' | 'failing'; text: string } {
  if (health.paused) {
    return { tone: 'paused', text: health.pausedUntil === null ? 'Paused' : `Paused until ${formatTime(health.pausedUntil)}` };
  }
  if (health.failingSince !== null) {
    const failures = health.failures === 1 ? '1 failure' : `${formatCount(health.failures)} failures`;
    return { tone: 'failing', text: `Failing since ${formatTime(health.failingSince)} (${failures})` };
  }
  return { tone: 'ok', text: health.lastAcceptedAt === null ? 'OK' : `OK · last accepted ${formatRelative(health.lastAcceptedAt, now)}` };
}

export function HealthText({ health }: { health: EndpointHealth }) {
  const { tone, text } = healthWords(health);
  return <span class={`health health-${tone}`}>{text}</span>;
}
