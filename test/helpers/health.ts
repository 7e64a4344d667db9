/**
 * Endpoint health for unit tests (lib/endpoints/health.ts): the registry's health writes in memory,
 * each one listed, and a HealthTracker on them with an injected clock, its log lines and notices kept.
 */
import type { StateChange } from '../../lib/endpoints/endpoint';
import { HealthTracker, type DisabledNotice, type EndpointHealth, type HealthStore } from '../../lib/endpoints/health';
import { createLogger } from '../../lib/observability';

/** The registry's health writes in memory, counting them; `pauseGate` holds pause writes until released. */
export class MemoryHealthStore implements HealthStore {
  readonly health = new Map<string, EndpointHealth>();
  readonly state = new Map<string, { state: 'enabled' | 'disabled'; change?: StateChange }>();
  readonly writes: string[] = [];
  fail = false;
  pauseGate: Promise<void> | undefined;

  async recordFailure(name: string, nowMs: number, count = 1) {
    this.#check(count === 1 ? 'failure' : `failure ×${count}`, name);
    const h = this.health.get(name) ?? { failures: 0 };
    const next = { ...h, failures: h.failures + count, failingSince: h.failingSince ?? nowMs };
    this.health.set(name, next);
    return next;
  }
  async recordRecovery(name: string, nowMs: number) {
    this.#check('recovery', name);
    const { failingSince: _, probeUntil: __, ...h } = this.health.get(name) ?? { failures: 0 };
    const next = { ...h, failures: 0, lastAcceptedAt: nowMs };
    this.health.set(name, next);
    return next;
  }
  async pause(name: string, untilMs: number, nowMs = 0, count = 0) {
    this.#check('pause', name);
    await this.pauseGate;
    const h = this.health.get(name) ?? { failures: 0 };
    if ((h.pausedUntil ?? 0) > untilMs) return h.pausedUntil!;
    const counted = count > 0 ? { failures: h.failures + count, failingSince: h.failingSince ?? nowMs } : {};
    this.health.set(name, { ...h, ...counted, pausedUntil: untilMs });
    return untilMs;
  }
  async claimProbe(name: string, nowMs: number, untilMs: number) {
    this.#check('probe', name);
    const h = this.health.get(name) ?? { failures: 0 };
    const free = h.failingSince !== undefined && (h.pausedUntil ?? 0) <= nowMs && (h.probeUntil ?? 0) <= nowMs;
    if (!free) return { claimed: false, health: h };
    const next = { ...h, probeUntil: untilMs };
    this.health.set(name, next);
    return { claimed: true, health: next };
  }
  async disableIfEnabled(name: string, change: StateChange) {
    this.#check('disable', name);
    if (this.state.get(name)?.state === 'disabled') return false;
    this.state.set(name, { state: 'disabled', change });
    return true;
  }
  #check(write: string, name: string) {
    this.writes.push(`${write} ${name}`);
    if (this.fail) throw new Error('registry unreachable');
  }
}

/** A consumer's tracker on `store`, its clock `clock.now` (epoch ms). */
export function tracker(store: MemoryHealthStore, clock: { now: number }) {
  const notices: DisabledNotice[] = [];
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ service: 'handoff', write: (line) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  const health = new HealthTracker({ store, now: () => clock.now, notify: async (notice) => void notices.push(notice) });
  return { health, notices, lines, logger };
}
