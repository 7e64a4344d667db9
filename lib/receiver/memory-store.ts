/**
 * The idempotency store in process memory: for one receiver process, tests and the sandbox.
 * Records die with the process and are not shared between processes; use the DynamoDB store
 * for anything that restarts or scales out.
 */
import { randomUUID } from 'node:crypto';
import { ReceiverConfigError } from './errors';
import {
  DEFAULT_LEASE_SECONDS,
  DEFAULT_RETENTION_SECONDS,
  type BeginResult,
  type IdempotencyStore,
  type StoredResponse,
  type StoreOptions,
} from './store';

type Entry =
  | { readonly state: 'running'; readonly token: string; readonly bodyHash: string; readonly leaseExpiresAtMs: number }
  | { readonly state: 'done'; readonly bodyHash: string; readonly response: StoredResponse; readonly expiresAtMs: number };

export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly retentionSeconds: number;
  readonly leaseSeconds: number;
  /** Insertion order is roughly expiry order, so expired entries are swept from the front. */
  private readonly entries = new Map<string, Entry>();

  constructor(options: StoreOptions = {}) {
    this.retentionSeconds = positiveSeconds('retentionSeconds', options.retentionSeconds ?? DEFAULT_RETENTION_SECONDS);
    this.leaseSeconds = positiveSeconds('leaseSeconds', options.leaseSeconds ?? DEFAULT_LEASE_SECONDS);
  }

  async begin(webhookId: string, bodyHash: string, nowMs: number): Promise<BeginResult> {
    this.sweep(nowMs);
    // Check and set in one synchronous step: no other request runs in between.
    const entry = this.entries.get(webhookId);
    if (entry !== undefined && !lapsed(entry, nowMs)) {
      if (entry.bodyHash !== bodyHash) return { kind: 'body-mismatch' };
      return entry.state === 'done' ? { kind: 'completed', response: entry.response } : { kind: 'in-progress' };
    }
    const token = randomUUID();
    this.entries.delete(webhookId);
    this.entries.set(webhookId, { state: 'running', token, bodyHash, leaseExpiresAtMs: nowMs + this.leaseSeconds * 1000 });
    return { kind: 'started', token };
  }

  async complete(webhookId: string, token: string, response: StoredResponse, nowMs: number): Promise<void> {
    const entry = this.entries.get(webhookId);
    if (entry?.state !== 'running' || entry.token !== token) return;
    this.entries.set(webhookId, {
      state: 'done',
      bodyHash: entry.bodyHash,
      response: { ...response },
      expiresAtMs: nowMs + this.retentionSeconds * 1000,
    });
  }

  async release(webhookId: string, token: string): Promise<void> {
    const entry = this.entries.get(webhookId);
    if (entry?.state === 'running' && entry.token === token) this.entries.delete(webhookId);
  }

  /** Records held now, lapsed ones not yet swept included. */
  get size(): number {
    return this.entries.size;
  }

  private sweep(nowMs: number) {
    for (const [webhookId, entry] of this.entries) {
      if (!lapsed(entry, nowMs)) return;
      this.entries.delete(webhookId);
    }
  }
}

function lapsed(entry: Entry, nowMs: number): boolean {
  return entry.state === 'done' ? entry.expiresAtMs <= nowMs : entry.leaseExpiresAtMs <= nowMs;
}

export function positiveSeconds(option: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new ReceiverConfigError(option, `must be a positive whole number of seconds, got ${value}`);
  return value;
}
