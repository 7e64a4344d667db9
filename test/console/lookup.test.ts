/**
 * The console's Lookup page in a real headless Chromium against a real sandbox
 * (test/helpers/console-browser.ts): an event ID typed into the box labelled "Event or shipment ID"
 * shows each of its deliveries, per endpoint, with the attempt timeline the API keeps (time,
 * outcome, status, duration); a shipment ID shows its events' deliveries; an ID nothing has is said
 * to be so; a dead delivery replayed from the page, with a reason, reaches its receiver exactly
 * once more (its first answer lost and Replay pressed again, the same Idempotency-Key), the page
 * following it from pending to delivered without a reload; a result whose deliveries wait (a retry
 * ten minutes away, a parked one) is not read again meanwhile; and the timeline reads at 390 px.
 *
 * The endpoints are made through the API and take event types the sandbox's demo endpoints do not
 * (packed, returned, label_created), so only this file's receivers see these events. The tests
 * share one sandbox and run in order.
 */
import type { Locator, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Delivery, EventDeliveries } from '../../api/client/types';
import { formatDuration } from '../../console/app/format';
import { PHONE, useConsole, type PageOptions } from '../helpers/console-browser';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { eventually } from '../helpers/sandbox-clients';

const SETTLE_MS = 45_000;
/** How long the page may take to show what the API has (a refresh every 3 s, and a busy machine). */
const PAGE_MS = 20_000;

let hooks: TestReceiver;
let mirror: TestReceiver;
let refuser: TestReceiver;

const suite = useConsole({
  setUp: async () => {
    hooks = await startTestReceiver();
    mirror = await startTestReceiver();
    refuser = await startTestReceiver();
    // 400: rejected, dead at once (docs/contract.md §4).
    refuser.answerByDefault(400);
    // A retry one second after a failure, so a 503 then a 200 settle within the test.
    return { env: { HANDOFF_RETRY_SCHEDULE: '1', HANDOFF_MAX_ATTEMPTS: '3', HANDOFF_ATTEMPT_TIMEOUT_MS: '5000' }, endpointsCacheMs: 0 };
  },
  tearDown: async () => {
    await Promise.all([hooks?.close(), mirror?.close(), refuser?.close()]);
  },
});

beforeAll(async () => {
  for (const [name, receiver, eventTypes] of [
    ['hooks', hooks, ['shipment.packed', 'shipment.label_created']],
    ['mirror', mirror, ['shipment.packed']],
    ['refuser', refuser, ['shipment.returned']],
  ] as const) {
    const created = await suite.api('POST', '/v1/endpoints', { name, url: receiver.url, eventTypes });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
  }
});

function shipmentEvent(id: string, status: string, shipmentId = `shp_${id}`): Record<string, unknown> {
  return { id, shipmentId, status, occurredAt: '2026-12-05T10:15:00Z', data: { carrier: 'acme' } };
}

async function postEvent(event: Record<string, unknown>): Promise<void> {
  const answer = await suite.api('POST', '/v1/events', event);
  expect(answer.status).toBe(202);
  expect(answer.json.accepted).toHaveLength(1);
}

/** The event's deliveries once every one of them is in `state`, as the API answers them. */
async function settled(eventId: string, state: Delivery['state'], count: number): Promise<readonly Delivery[]> {
  return eventually(
    `${eventId}: ${count} deliveries ${state}`,
    async () => {
      const answer = await suite.api('GET', `/v1/events/${eventId}`);
      const deliveries = (answer.json as EventDeliveries | undefined)?.deliveries ?? [];
      return answer.status === 200 && deliveries.length === count && deliveries.every((d) => d.state === state) ? deliveries : undefined;
    },
    { timeoutMs: SETTLE_MS },
  );
}

/** The console opened from READY's consoleUrl, then its Lookup page reached by its label. */
async function openLookup(options?: PageOptions): Promise<Page> {
  const { page } = await suite.openConsole(undefined, options);
  await page.getByRole('navigation').getByRole('link', { name: 'Lookup', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Lookup' }).waitFor();
  return page;
}

/** Types `id` into the search box and submits it with Enter, as a person does. */
async function lookUp(page: Page, id: string): Promise<void> {
  const box = page.getByLabel('Event or shipment ID', { exact: true });
  await box.fill(id);
  await box.press('Enter');
  await page.waitForURL((url) => url.hash === `#/lookup?id=${encodeURIComponent(id)}`);
}

/** A delivery's panel: an article named by its endpoint ("to hooks"). */
function deliveryPanel(scope: Page | Locator, endpoint: string): Locator {
  return scope.getByRole('article', { name: `to ${endpoint}`, exact: true });
}

/** The attempt timeline's rows as the page shows them, with each time's machine-readable instant. */
async function timelineRows(panel: Locator): Promise<{ cells: string[]; at: string | null }[]> {
  const rows = panel.getByRole('table').locator('tbody tr');
  const out: { cells: string[]; at: string | null }[] = [];
  for (const row of await rows.all()) {
    const cells = (await row.locator('th, td').allInnerTexts()).map((text) => text.trim());
    out.push({ cells, at: await row.locator('time').getAttribute('datetime') });
  }
  return out;
}

/** The state badge a delivery panel shows. */
function stateBadge(panel: Locator): Locator {
  return panel.locator('.delivery-head .badge').first();
}

describe('the Lookup page in Chromium', { timeout: 90_000 }, () => {
  it("shows a looked-up event's deliveries per endpoint, each with its attempts' time, outcome, status and duration", async () => {
    // Prepare: hooks answers 503 once (temporary, retried a second later), then 200; mirror 200 at once.
    hooks.respondTo('evt_look_one', 503);
    await postEvent(shipmentEvent('evt_look_one', 'packed'));
    const deliveries = await settled('evt_look_one', 'delivered', 2);
    const page = await openLookup();

    // Act
    await lookUp(page, 'evt_look_one');
    const hooksPanel = deliveryPanel(page, 'hooks');
    const mirrorPanel = deliveryPanel(page, 'mirror');
    await hooksPanel.waitFor({ timeout: PAGE_MS });
    const hooksRows = await timelineRows(hooksPanel);
    const mirrorRows = await timelineRows(mirrorPanel);

    // Assess
    await expect(page.getByRole('heading', { level: 2 }).first().innerText()).resolves.toBe('Event evt_look_one');
    expect(await page.getByRole('article').count()).toBe(2);
    const expected = (endpoint: string) =>
      deliveries
        .find((d) => d.endpoint === endpoint)!
        .history.map((a) => ({ at: new Date(a.at).toISOString(), cells: [String(a.attempt), a.outcome, String(a.status), formatDuration(a.durationMs)] }));
    const shown = (rows: { cells: string[]; at: string | null }[]) =>
      rows.map(({ cells, at }) => ({ at, cells: [cells[0]!, cells[2]!, cells[3]!, cells[4]!] }));
    expect(shown(hooksRows)).toEqual(expected('hooks'));
    expect(hooksRows.map((r) => r.cells.slice(2, 4))).toEqual([
      ['temporary', '503'],
      ['accepted', '200'],
    ]);
    expect(shown(mirrorRows)).toEqual(expected('mirror'));
    expect(mirrorRows.map((r) => r.cells.slice(2, 4))).toEqual([['accepted', '200']]);
    // Each time is written out for the reader, in their locale.
    for (const row of [...hooksRows, ...mirrorRows]) expect(row.cells[1]).toMatch(/\d{1,2}:\d\d:\d\d/);
    await expect(stateBadge(hooksPanel).innerText()).resolves.toBe('delivered');
    await expect(stateBadge(mirrorPanel).innerText()).resolves.toBe('delivered');
    // No replay is offered for a delivered delivery.
    expect(await page.getByRole('button', { name: /^Replay/ }).count()).toBe(0);
  });

  it("shows a shipment's events and their deliveries for a shipment ID, and says plainly when nothing has an ID", async () => {
    // Prepare
    await postEvent(shipmentEvent('evt_look_ship_a', 'label_created', 'shp_look_two'));
    await postEvent(shipmentEvent('evt_look_ship_b', 'label_created', 'shp_look_two'));
    await settled('evt_look_ship_a', 'delivered', 1);
    await settled('evt_look_ship_b', 'delivered', 1);
    const page = await openLookup();

    // Act
    await lookUp(page, 'shp_look_two');
    await page.getByRole('heading', { name: 'Shipment shp_look_two' }).waitFor({ timeout: PAGE_MS });
    const events = await page.getByRole('heading', { level: 3 }).allInnerTexts();
    const panels = await page.getByRole('article', { name: 'to hooks', exact: true }).count();
    await lookUp(page, 'nothing_has_this_id');
    const none = page.getByRole('heading', { name: 'Nothing found for nothing_has_this_id' });
    await none.waitFor({ timeout: PAGE_MS });

    // Assess
    expect(events.sort()).toEqual(['Event evt_look_ship_a', 'Event evt_look_ship_b']);
    expect(panels).toBe(2);
    await expect(page.getByText('No event and no shipment has this ID').isVisible()).resolves.toBe(true);
    expect(await page.getByRole('article').count()).toBe(0);
  });

  it('replays a dead delivery with a reason: its receiver gets it exactly once more, a lost answer and all, and the page follows it to delivered', async () => {
    // Prepare: refuser answers 400 (dead, rejected), then is fixed.
    await postEvent(shipmentEvent('evt_look_dead', 'returned'));
    await settled('evt_look_dead', 'dead', 1);
    expect(refuser.requestsFor('evt_look_dead').map((r) => r.answer)).toEqual([400]);
    refuser.answerByDefault(200);
    const page = await openLookup({ allowConsoleErrors: [/net::ERR_FAILED/] });
    const replayRequests: { headers: Record<string, string>; body: unknown }[] = [];
    await page.route(
      (url) => url.pathname === '/v1/replays',
      async (route) => {
        replayRequests.push({ headers: route.request().headers(), body: route.request().postDataJSON() });
        const response = await route.fetch();
        // The API replayed it; the first answer is lost on its way back.
        if (replayRequests.length === 1) await route.abort('failed');
        else await route.fulfill({ response });
      },
    );
    await lookUp(page, 'evt_look_dead');
    const panel = deliveryPanel(page, 'refuser');
    await panel.waitFor({ timeout: PAGE_MS });
    await expect(stateBadge(panel).innerText()).resolves.toBe('dead');

    // Act
    await panel.getByRole('button', { name: 'Replay evt_look_dead to refuser' }).click();
    const dialog = page.getByRole('dialog', { name: 'Replay evt_look_dead to refuser?' });
    await dialog.getByRole('textbox', { name: 'Reason' }).fill('receiver fixed');
    await dialog.getByRole('button', { name: 'Replay', exact: true }).click();
    const lost = await dialog.getByRole('alert').innerText();
    await dialog.getByRole('button', { name: 'Replay', exact: true }).click();
    await dialog.waitFor({ state: 'detached', timeout: PAGE_MS });
    await panel.locator('.delivery-head .badge', { hasText: /^delivered$/ }).waitFor({ timeout: PAGE_MS });
    const rows = await timelineRows(panel);
    await eventually('the delivery queue to drain', async () => (await suite.started.clients.queueDepth()) === 0, { timeoutMs: SETTLE_MS });
    const [after] = await settled('evt_look_dead', 'delivered', 1);

    // Assess: one request refused before, one delivered after the replay: the receiver applied it once.
    expect(refuser.requestsFor('evt_look_dead').map((r) => r.answer)).toEqual([400, 200]);
    expect(refuser.applied.filter((id) => id === 'evt_look_dead')).toHaveLength(1);
    // Pressed twice, the same request with the same key: the API answered the second from the first.
    expect(lost).toContain('Failed to fetch');
    expect(replayRequests).toHaveLength(2);
    for (const request of replayRequests) expect(request.body).toEqual({ eventId: 'evt_look_dead', endpoint: 'refuser', reason: 'receiver fixed' });
    expect(replayRequests[0]!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(replayRequests[1]!.headers['idempotency-key']).toBe(replayRequests[0]!.headers['idempotency-key']);
    expect(after!.replays).toBe(1);
    expect(after!.audit).toEqual([expect.objectContaining({ action: 'replay', operator: 'sandbox', reason: 'receiver fixed' })]);
    // The page shows both attempts: the refusal, then the replay's delivery.
    expect(rows.map((r) => r.cells.slice(2, 4))).toEqual([
      ['rejected', '400'],
      ['accepted', '200'],
    ]);
    await expect(page.getByRole('status').filter({ hasText: 'Replayed evt_look_dead to refuser' }).isVisible()).resolves.toBe(true);
  });

  it('does not read a result again while its deliveries wait: a retry ten minutes away, a parked delivery', async () => {
    // Prepare: one event to two endpoints: `waiter` answered 503 (its retry in ten minutes), `sleeper` disabled (parked).
    for (const [name, receiver, extra] of [
      ['waiter', hooks, { retrySchedule: [600], maxAttempts: 3 }],
      ['sleeper', mirror, {}],
    ] as const) {
      const created = await suite.api('POST', '/v1/endpoints', { name, url: receiver.url, eventTypes: ['shipment.in_transit'], ...extra });
      expect(created.status, JSON.stringify(created.json)).toBe(201);
    }
    expect((await suite.api('POST', '/v1/endpoints/sleeper/disable', { reason: 'test: parked' })).status).toBe(200);
    hooks.respondTo('evt_look_wait', 503);
    await postEvent(shipmentEvent('evt_look_wait', 'in_transit'));
    const waiting = await eventually(
      'evt_look_wait waiting: a retry scheduled at waiter, parked at sleeper',
      async () => {
        const deliveries = ((await suite.api('GET', '/v1/events/evt_look_wait')).json as EventDeliveries | undefined)?.deliveries ?? [];
        const waiter = deliveries.find((d) => d.endpoint === 'waiter');
        const sleeper = deliveries.find((d) => d.endpoint === 'sleeper');
        // The 503 recorded (not merely the attempt begun): its retry scheduled.
        const retrying = waiter?.state === 'pending' && waiter.attempts === 1 && waiter.nextAttemptAt !== undefined;
        return retrying && sleeper?.parkedAt !== undefined ? waiter : undefined;
      },
      { timeoutMs: SETTLE_MS },
    );
    const page = await openLookup();
    const reads: number[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/v1/events/evt_look_wait') reads.push(Date.now());
    });

    // Act: looked up, then left open for longer than two of the page's shortest waits (3 s).
    await lookUp(page, 'evt_look_wait');
    await deliveryPanel(page, 'sleeper').waitFor({ timeout: PAGE_MS });
    const note = await page.locator('.refreshing').innerText();
    await new Promise((resolve) => setTimeout(resolve, 8000));

    // Assess: one read, and the page says when the next will be: at the retry's time.
    expect(waiting.nextAttemptAt! - Date.now()).toBeGreaterThan(8 * 60_000);
    expect(reads).toHaveLength(1);
    expect(note).toMatch(/^A delivery is on its way: this is read again at .+, while the tab is shown\.$/);
    await expect(stateBadge(deliveryPanel(page, 'waiter')).innerText()).resolves.toBe('pending');
    expect(await deliveryPanel(page, 'sleeper').locator('.badge', { hasText: /^parked$/ }).count()).toBe(1);
  });

  it("reads at 390 px wide: the page does not scroll sideways, and the attempt timeline fits, each time on one line", async () => {
    const { page } = await suite.openConsole(undefined, { viewport: PHONE });
    await page.goto(`${suite.origin}/console/#/lookup?id=evt_look_one`);
    const panel = deliveryPanel(page, 'hooks');
    await panel.waitFor({ timeout: PAGE_MS });

    const widths = await page.locator('html').evaluate((root) => ({ page: root.scrollWidth, view: root.clientWidth }));
    const times = await panel.locator('tbody time').evaluateAll((elements) => elements.map((element) => element.getClientRects().length));
    const titles = await panel.locator('tbody time').evaluateAll((elements) => elements.map((element) => element.getAttribute('title') ?? ''));
    const frame = await panel.locator('.attempts-wrap').evaluate((element) => ({ scroll: element.scrollWidth, client: element.clientWidth }));

    expect(widths.page).toBeLessThanOrEqual(widths.view);
    expect(times).toEqual([1, 1]);
    // The timeline fits the phone's width: its frame has nothing to scroll.
    expect(frame.scroll).toBeLessThanOrEqual(frame.client);
    // The full date and time is the time's tooltip.
    for (const title of titles) expect(title).toMatch(/\d{4}/);
  });
});
