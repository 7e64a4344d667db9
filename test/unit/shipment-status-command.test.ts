/**
 * `handoff status --shipment ID` over an in-memory ledger (docs/contract.md §10): its JSON, its
 * pages, its usage errors, and the one line an operator gets when the deployment has the shipment
 * index off. The command as a child process against the sandbox: test/e2e/fan-out.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { shipmentStatusCommand, statusOf } from '../../cli/commands/shipment-status';
import type { CommandContext } from '../../cli/context';
import { describeFailure, EXIT, UsageError } from '../../cli/errors';
import { parseEvent } from '../../lib/event';
import { ShipmentIndexOffError } from '../../lib/ledger/errors';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { rejectionOf } from '../helpers/ledger-contract';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);

function contextOver(ledger: MemoryLedger): CommandContext {
  return { now: () => T0 + 60_000, ledger: () => ledger } as unknown as CommandContext;
}

/** A ledger with `count` deliveries of shipment shp_9 (one a second, to carrier-acme), and one of another shipment. */
async function ledgerWith(count: number, options: { shipmentIndex?: boolean } = {}): Promise<MemoryLedger> {
  const ledger = new MemoryLedger({ now: () => T0, ...options });
  const claim = async (id: string, shipmentId: string, nowMs: number) => {
    const parsed = parseEvent(JSON.stringify({ id, shipmentId, status: 'packed', occurredAt: '2026-12-01T10:00:00Z' }));
    if (!parsed.ok) throw parsed.error;
    await ledger.claim({ event: parsed.value, endpoint: 'carrier-acme', owner: 'w', nowMs, leaseMs: 30_000, policy: DEFAULT_RETRY_POLICY, retentionSeconds: 86_400 });
  };
  for (let i = 1; i <= count; i++) await claim(`evt_${i}`, 'shp_9', T0 + i * 1000);
  await claim('evt_other', 'shp_other', T0);
  return ledger;
}

describe('Command: status --shipment', () => {
  it('prints {shipmentId, deliveries, next} newest first, each delivery as status --json prints it', async () => {
    const ctx = contextOver(await ledgerWith(2));

    const result = await shipmentStatusCommand(ctx, 'shp_9', { limit: 20 });

    const json = result.json as { shipmentId: string; deliveries: { eventId: string; endpoint: string; state: string }[]; next: string | null };
    expect(json.shipmentId).toBe('shp_9');
    expect(json.deliveries.map((d) => [d.eventId, d.endpoint, d.state])).toEqual([
      ['evt_2', 'carrier-acme', 'pending'],
      ['evt_1', 'carrier-acme', 'pending'],
    ]);
    expect(json.next).toBeNull();
    expect(result.human).toContain('shipment shp_9: 2 deliveries, newest first');
  });

  it('pages with --limit and --cursor, and prints the command for the next page', async () => {
    const ctx = contextOver(await ledgerWith(3));

    const first = await shipmentStatusCommand(ctx, 'shp_9', { limit: 2 });
    const next = (first.json as { next: string }).next;
    const second = await shipmentStatusCommand(ctx, 'shp_9', { limit: 2, cursor: next });

    expect((first.json as { deliveries: { eventId: string }[] }).deliveries.map((d) => d.eventId)).toEqual(['evt_3', 'evt_2']);
    expect(first.human).toContain(`more: handoff status --shipment shp_9 --limit 2 --cursor ${next}`);
    expect(second.json).toMatchObject({ deliveries: [{ eventId: 'evt_1' }], next: null });
  });

  it('quotes a shipment ID that is not one shell word in the next-page command', async () => {
    const ledger = new MemoryLedger({ now: () => T0 });
    for (const id of ['evt_a', 'evt_b']) {
      const parsed = parseEvent(JSON.stringify({ id, shipmentId: "shp 9's", status: 'packed', occurredAt: '2026-12-01T10:00:00Z' }));
      if (!parsed.ok) throw parsed.error;
      await ledger.claim({ event: parsed.value, endpoint: 'a', owner: 'w', nowMs: T0, leaseMs: 1, policy: DEFAULT_RETRY_POLICY, retentionSeconds: 86_400 });
    }

    const result = await shipmentStatusCommand(contextOver(ledger), "shp 9's", { limit: 1 });

    expect(result.human).toContain("more: handoff status --shipment 'shp 9'\\''s' --limit 1 --cursor ");
  });

  it('is a usage error for a cursor of another shipment, or one it did not issue', async () => {
    const ctx = contextOver(await ledgerWith(3));
    const { next } = (await shipmentStatusCommand(ctx, 'shp_9', { limit: 1 })).json as { next: string };

    const error = await rejectionOf(shipmentStatusCommand(ctx, 'shp_other', { limit: 1, cursor: next }), UsageError);

    expect(error.message).toMatch(/^--cursor: .*; start again without --cursor$/);
  });

  it('fails with one line naming the setting when the deployment has the shipment index off (exit 1)', async () => {
    const ctx = contextOver(await ledgerWith(1, { shipmentIndex: false }));

    const error = await rejectionOf(shipmentStatusCommand(ctx, 'shp_9', { limit: 20 }), ShipmentIndexOffError);
    const failure = describeFailure(error, () => undefined);

    expect(failure.exitCode).toBe(EXIT.failed);
    expect(failure.code).toBe('shipment-index-off');
    expect(failure.message).toContain('has no shipment index: this deployment turned it off (shipmentIndex: false, HANDOFF_SHIPMENT_INDEX=false)');
  });

  it('takes an event ID or --shipment, one of the two, and not --endpoint or --body with --shipment', async () => {
    const ctx = contextOver(await ledgerWith(1));

    for (const [eventId, options] of [
      [undefined, { limit: 20 }],
      ['evt_1', { limit: 20, shipment: 'shp_9' }],
      [undefined, { limit: 20, shipment: 'shp_9', endpoint: 'carrier-acme' }],
      [undefined, { limit: 20, shipment: 'shp_9', body: true }],
      ['evt_1', { limit: 20, cursor: 'x' }],
      [undefined, { limit: 20, shipment: '   ' }],
    ] as const) {
      await rejectionOf(Promise.resolve().then(() => statusOf(ctx, eventId, options)), UsageError);
    }
  });
});
