/**
 * The console's Dead letters page in a real headless Chromium against a real sandbox
 * (test/helpers/console-browser.ts): its filters are kept in the route, so a link opens the same
 * list; filtered by endpoint, rows picked one by one are replayed after a dialog that states their
 * count and asks a reason, and they leave the list; "All matching the filter" is counted by the
 * API's dry run before the same dialog, then replayed in bulk over the window the dry run counted
 * (its part after part, `next` followed: test/console/replay.test.ts), and only when the filter
 * names an endpoint or an owner. Each replayed delivery reaches its receiver once more; the other
 * endpoint's dead delivery is left as it was.
 *
 * The endpoints are made through the API and take event types the sandbox's demo endpoints do not
 * (returned, packed). The tests share one sandbox and run in order.
 */
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Delivery, EventDeliveries } from '../../api/client/types';
import { useConsole } from '../helpers/console-browser';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { eventually } from '../helpers/sandbox-clients';

const SETTLE_MS = 45_000;
const PAGE_MS = 20_000;
const DEAD_AT_REFUSER = ['evt_dl_1', 'evt_dl_2', 'evt_dl_3', 'evt_dl_4'] as const;

let refuser: TestReceiver;
let other: TestReceiver;

const suite = useConsole({
  setUp: async () => {
    refuser = await startTestReceiver();
    other = await startTestReceiver();
    // 400: rejected, dead at once (docs/contract.md §4).
    refuser.answerByDefault(400);
    other.answerByDefault(400);
    return { env: { HANDOFF_MAX_ATTEMPTS: '3', HANDOFF_ATTEMPT_TIMEOUT_MS: '5000' }, endpointsCacheMs: 0 };
  },
  tearDown: async () => {
    await Promise.all([refuser?.close(), other?.close()]);
  },
});

beforeAll(async () => {
  for (const [name, receiver, eventTypes, owner] of [
    ['dl-refuser', refuser, ['shipment.returned'], 'globex'],
    ['dl-other', other, ['shipment.packed'], 'initech'],
  ] as const) {
    const created = await suite.api('POST', '/v1/endpoints', { name, url: receiver.url, eventTypes, owner });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
  }
  for (const id of DEAD_AT_REFUSER) await postEvent(id, 'returned');
  await postEvent('evt_dl_other', 'packed');
  for (const id of [...DEAD_AT_REFUSER, 'evt_dl_other']) await deliveryOf(id, 'dead');
  // Both receivers are fixed: what is replayed is delivered; what is not stays dead.
  refuser.answerByDefault(200);
  other.answerByDefault(200);
}, 90_000);

async function postEvent(id: string, status: string): Promise<void> {
  const answer = await suite.api('POST', '/v1/events', { id, shipmentId: `shp_${id}`, status, occurredAt: '2026-12-05T10:15:00Z' });
  expect(answer.status).toBe(202);
  expect(answer.json.accepted).toHaveLength(1);
}

/** The event's one delivery once it is in `state`. */
async function deliveryOf(eventId: string, state: Delivery['state']): Promise<Delivery> {
  return eventually(
    `${eventId} ${state}`,
    async () => {
      const answer = await suite.api('GET', `/v1/events/${eventId}`);
      const delivery = (answer.json as EventDeliveries | undefined)?.deliveries?.[0];
      return answer.status === 200 && delivery?.state === state ? delivery : undefined;
    },
    { timeoutMs: SETTLE_MS },
  );
}

/** The console opened from READY's consoleUrl, then its Dead letters page reached by its label. */
async function openDeadLetters(): Promise<Page> {
  const { page } = await suite.openConsole();
  await page.getByRole('navigation').getByRole('link', { name: 'Dead letters', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Dead letters' }).waitFor();
  return page;
}

/** The event IDs of the rows listed now (each row's header cell). */
async function listedEvents(page: Page): Promise<string[]> {
  return page.locator('table.dead tbody tr th').allInnerTexts();
}

/** Waits until the rows listed are exactly `eventIds` (in any order). */
async function untilListed(page: Page, eventIds: readonly string[]): Promise<void> {
  await eventually(`the rows ${eventIds.join(', ') || '(none)'}`, async () => (same(await listedEvents(page), eventIds) ? true : undefined), {
    timeoutMs: PAGE_MS,
    describe: async () => (await listedEvents(page)).join(', ') || '(none)',
  });
}

function same(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');
}

describe('the Dead letters page in Chromium', { timeout: 90_000 }, () => {
  it('keeps its filters in the route: endpoint, owner, reason and the time of death each narrow the list', async () => {
    const page = await openDeadLetters();

    // Act: the endpoint filter, typed and submitted with Enter.
    await page.getByLabel('Endpoint', { exact: true }).fill('dl-other');
    await page.getByLabel('Endpoint', { exact: true }).press('Enter');
    await untilListed(page, ['evt_dl_other']);
    const byEndpoint = new URL(page.url()).hash;
    // The owner and reason filters, from the address bar.
    await page.goto(`${suite.origin}/console/#/dead?owner=globex&reason=rejected`);
    await untilListed(page, DEAD_AT_REFUSER);
    const ownerShown = await page.getByLabel('Owner', { exact: true }).inputValue();
    const reasonShown = await page.getByLabel('Dead reason', { exact: true }).inputValue();
    // Died before a time long past: none.
    await page.getByLabel('Died before', { exact: true }).fill('2020-01-01T00:00');
    await page.getByRole('button', { name: 'Apply', exact: true }).click();
    await page.getByText('No dead delivery matches the filter.').waitFor({ timeout: PAGE_MS });
    const untilHash = new URLSearchParams(new URL(page.url()).hash.split('?')[1]);

    // Assess
    expect(byEndpoint).toBe('#/dead?endpoint=dl-other');
    expect(ownerShown).toBe('globex');
    expect(reasonShown).toBe('rejected');
    expect(untilHash.get('owner')).toBe('globex');
    expect(untilHash.get('reason')).toBe('rejected');
    // The reader's local 2020-01-01 00:00, kept in the route as the instant it is (UTC).
    expect(untilHash.get('until')).toBe(await page.evaluate(() => new Date('2020-01-01T00:00').toISOString()));
    expect(await page.locator('table.dead').count()).toBe(0);
  });

  it('replays the rows picked: the dialog states their count and asks a reason, then they leave the list, delivered once each', async () => {
    const page = await openDeadLetters();
    await page.getByLabel('Endpoint', { exact: true }).fill('dl-refuser');
    await page.getByLabel('Endpoint', { exact: true }).press('Enter');
    await untilListed(page, DEAD_AT_REFUSER);
    const replays: unknown[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === '/v1/replays') replays.push(request.postDataJSON());
    });

    // Act
    await page.getByRole('checkbox', { name: 'Select evt_dl_1 to dl-refuser' }).check();
    await page.getByRole('checkbox', { name: 'Select evt_dl_2 to dl-refuser' }).check();
    await page.getByRole('button', { name: 'Replay…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Replay 2 dead deliveries?' });
    await dialog.waitFor();
    const reason = dialog.getByRole('textbox', { name: 'Reason' });
    // No reason, no replay: the dialog stays, nothing is sent.
    await dialog.getByRole('button', { name: 'Replay', exact: true }).click();
    const refusedWithout = await reason.evaluate((element) => (element as unknown as { validity: { valueMissing: boolean } }).validity.valueMissing);
    await reason.fill('receiver fixed');
    await dialog.getByRole('button', { name: 'Replay', exact: true }).click();
    await dialog.waitFor({ state: 'detached', timeout: PAGE_MS });
    await untilListed(page, ['evt_dl_3', 'evt_dl_4']);
    const outcome = await page.getByRole('status').filter({ hasText: 'Replayed' }).innerText();
    const delivered = await Promise.all(['evt_dl_1', 'evt_dl_2'].map((id) => deliveryOf(id, 'delivered')));

    // Assess
    expect(refusedWithout).toBe(true);
    // One single replay per row picked, with the reason given: nothing before it was.
    expect(replays).toEqual([
      { eventId: 'evt_dl_1', endpoint: 'dl-refuser', reason: 'receiver fixed' },
      { eventId: 'evt_dl_2', endpoint: 'dl-refuser', reason: 'receiver fixed' },
    ]);
    expect(outcome).toContain('Replayed 2 of 2 dead deliveries.');
    for (const delivery of delivered) {
      expect(delivery.audit).toEqual([expect.objectContaining({ action: 'replay', operator: 'sandbox', reason: 'receiver fixed' })]);
      expect(refuser.requestsFor(delivery.eventId).map((r) => r.answer)).toEqual([400, 200]);
    }
    for (const id of ['evt_dl_3', 'evt_dl_4']) expect(refuser.requestsFor(id).map((r) => r.answer)).toEqual([400]);
  });

  it('offers "all matching the filter" only with an endpoint or an owner in the filter, saying so', async () => {
    const page = await openDeadLetters();
    await page.locator('table.dead tbody tr').first().waitFor({ timeout: PAGE_MS });
    const all = page.getByRole('checkbox', { name: 'All matching the filter' });
    const unfiltered = { disabled: await all.isDisabled(), described: await all.getAttribute('aria-describedby') };
    const why = await page.locator(`#${unfiltered.described}`).innerText();

    await page.goto(`${suite.origin}/console/#/dead?owner=initech`);
    await untilListed(page, ['evt_dl_other']);

    expect(unfiltered.disabled).toBe(true);
    expect(why).toBe('needs an endpoint or an owner in the filter');
    expect(await all.isDisabled()).toBe(false);
    expect(await all.getAttribute('aria-describedby')).toBeNull();
  });

  it('replays all matching the filter after a dry run counts them, leaving the other endpoint\'s dead delivery as it was', async () => {
    const page = await openDeadLetters();
    await page.goto(`${suite.origin}/console/#/dead?endpoint=dl-refuser`);
    await untilListed(page, ['evt_dl_3', 'evt_dl_4']);
    const dryRuns: Record<string, unknown>[] = [];
    const replays: { body: Record<string, unknown>; key: string | undefined }[] = [];
    page.on('request', (request) => {
      if (request.method() !== 'POST' || new URL(request.url()).pathname !== '/v1/replays') return;
      const body = request.postDataJSON() as Record<string, unknown>;
      if (body.dryRun === true) dryRuns.push(body);
      else replays.push({ body, key: request.headers()['idempotency-key'] });
    });

    // Act
    await page.getByRole('checkbox', { name: 'All matching the filter' }).check();
    await page.getByRole('button', { name: 'Replay…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Replay 2 dead deliveries?' });
    await dialog.waitFor({ timeout: PAGE_MS });
    const summary = await dialog.innerText();
    await dialog.getByRole('textbox', { name: 'Reason' }).fill('receiver fixed, the rest');
    await dialog.getByRole('button', { name: 'Replay', exact: true }).click();
    await dialog.waitFor({ state: 'detached', timeout: PAGE_MS });
    await page.getByText('No dead delivery matches the filter.').waitFor({ timeout: PAGE_MS });
    const delivered = await Promise.all(['evt_dl_3', 'evt_dl_4'].map((id) => deliveryOf(id, 'delivered')));
    await eventually('the delivery queue to drain', async () => (await suite.started.clients.queueDepth()) === 0, { timeoutMs: SETTLE_MS });
    const stillDead = await suite.api('GET', '/v1/dead');

    // Assess
    expect(dryRuns).toEqual([expect.objectContaining({ endpoint: 'dl-refuser', dryRun: true, deadSince: '1970-01-01T00:00:00Z' })]);
    // The replay sends the window the dry run counted, its end included: nothing that died after the count.
    expect(replays.map((r) => r.body)).toEqual([
      { endpoint: 'dl-refuser', deadSince: '1970-01-01T00:00:00Z', until: dryRuns[0]!.until, reason: 'receiver fixed, the rest', limit: 20 },
    ]);
    expect(replays[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(summary).toContain('A dry run counted 2 dead deliveries matching the filter');
    for (const delivery of delivered) {
      expect(delivery.audit).toEqual([expect.objectContaining({ action: 'replay', reason: 'receiver fixed, the rest' })]);
    }
    for (const id of DEAD_AT_REFUSER) {
      expect(refuser.requestsFor(id).map((r) => r.answer)).toEqual([400, 200]);
      expect(refuser.applied.filter((applied) => applied === id)).toHaveLength(1);
    }
    expect(stillDead.json.items.map((d: Delivery) => d.eventId)).toEqual(['evt_dl_other']);
    expect(other.requestsFor('evt_dl_other')).toHaveLength(1);
  });
});
