/**
 * Portal mode (docs/contract.md §17) in a real headless Chromium against a real sandbox
 * (test/helpers/console-browser.ts): two owners' endpoints, each with a dead delivery; a portal link
 * for one owner (POST /v1/portal-links with the sandbox's token) opened in the browser shows that
 * owner's endpoints alone on Overview, Endpoints and Dead letters. From the page's own session
 * (its fetch, with the portal token the page holds) the API answers 403 to the other owner's
 * endpoint and deliveries, to disabling, enabling, creating and deleting endpoints, to changing
 * more than a URL and to minting portal links: refused by the API, not merely hidden. Nothing those
 * calls asked for happened.
 *
 * The endpoints take an event type the sandbox's demo endpoints do not (returned).
 */
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Delivery, EventDeliveries } from '../../api/client/types';
import { useConsole } from '../helpers/console-browser';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { eventually } from '../helpers/sandbox-clients';

const SETTLE_MS = 45_000;
const PAGE_MS = 20_000;
const OWNER_A = 'owner-a';
const OWNER_B = 'owner-b';

let receiverA: TestReceiver;
let receiverB: TestReceiver;
/** The portal link for OWNER_A, as POST /v1/portal-links answered it. */
let link: { url: string; token: string };

const suite = useConsole({
  setUp: async () => {
    receiverA = await startTestReceiver();
    receiverB = await startTestReceiver();
    // 400: rejected, dead at once (docs/contract.md §4): each owner gets a dead delivery to list.
    receiverA.answerByDefault(400);
    receiverB.answerByDefault(400);
    return { env: { HANDOFF_MAX_ATTEMPTS: '3', HANDOFF_ATTEMPT_TIMEOUT_MS: '5000' }, endpointsCacheMs: 0 };
  },
  tearDown: async () => {
    await Promise.all([receiverA?.close(), receiverB?.close()]);
  },
});

beforeAll(async () => {
  for (const [name, receiver, owner] of [
    ['a-hooks', receiverA, OWNER_A],
    ['b-hooks', receiverB, OWNER_B],
  ] as const) {
    const created = await suite.api('POST', '/v1/endpoints', { name, url: receiver.url, eventTypes: ['shipment.returned'], owner });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
  }
  const posted = await suite.api('POST', '/v1/events', { id: 'evt_portal_1', shipmentId: 'shp_portal_1', status: 'returned', occurredAt: '2026-12-05T10:15:00Z' });
  expect(posted.status).toBe(202);
  await eventually(
    'evt_portal_1 dead at both endpoints',
    async () => {
      const answer = await suite.api('GET', '/v1/events/evt_portal_1');
      const deliveries = (answer.json as EventDeliveries | undefined)?.deliveries ?? [];
      return deliveries.length === 2 && deliveries.every((d: Delivery) => d.state === 'dead');
    },
    { timeoutMs: SETTLE_MS },
  );
  const minted = await suite.api('POST', '/v1/portal-links', { owner: OWNER_A, ttlSeconds: 600 });
  expect(minted.status).toBe(201);
  link = minted.json as { url: string; token: string };
}, 90_000);

/** The main region's text once `shown` is in it. */
async function mainTextShowing(page: Page, shown: string): Promise<string> {
  const main = page.locator('main');
  await main.getByText(shown).first().waitFor({ timeout: PAGE_MS });
  return main.innerText();
}

async function goTo(page: Page, label: string): Promise<void> {
  await page.getByRole('navigation').getByRole('link', { name: label, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: label }).waitFor();
}

describe('portal mode in Chromium', { timeout: 90_000 }, () => {
  it("shows the link's owner's endpoints alone on Overview, Endpoints and Dead letters", async () => {
    const { page } = await suite.openConsole(link.url);
    await page.getByText(`Portal for ${OWNER_A}`).first().waitFor();

    // Act
    const overview = await mainTextShowing(page, 'a-hooks');
    await goTo(page, 'Endpoints');
    const endpoints = await mainTextShowing(page, 'a-hooks');
    await goTo(page, 'Dead letters');
    const dead = await mainTextShowing(page, 'evt_portal_1');
    const owner = await page.getByLabel('Owner', { exact: true }).inputValue();
    const rows = await page.locator('table.dead tbody tr').allInnerTexts();
    await goTo(page, 'Lookup');
    await page.getByLabel('Event or shipment ID', { exact: true }).fill('evt_portal_1');
    await page.getByLabel('Event or shipment ID', { exact: true }).press('Enter');
    const lookup = await mainTextShowing(page, 'to a-hooks');
    const panels = await page.getByRole('article').count();

    // Assess
    for (const text of [overview, endpoints, dead, lookup]) {
      expect(text).toContain('a-hooks');
      expect(text).not.toContain('b-hooks');
      expect(text).not.toContain(OWNER_B);
    }
    expect(owner).toBe(OWNER_A);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain('a-hooks');
    // The event went to both owners' endpoints: the link sees its owner's delivery alone.
    expect(panels).toBe(1);
  });

  it("replays its owner's dead delivery from the page: delivered once more to that owner's receiver alone", async () => {
    receiverA.answerByDefault(200);
    receiverB.answerByDefault(200);
    const { page } = await suite.openConsole(link.url);
    await page.getByText(`Portal for ${OWNER_A}`).first().waitFor();
    await goTo(page, 'Dead letters');
    await page.getByRole('checkbox', { name: 'Select evt_portal_1 to a-hooks' }).check();

    // Act
    await page.getByRole('button', { name: 'Replay…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Replay 1 dead delivery?' });
    await dialog.getByRole('textbox', { name: 'Reason' }).fill('our receiver is back');
    await dialog.getByRole('button', { name: 'Replay', exact: true }).click();
    await page.getByText('No dead delivery matches the filter.').waitFor({ timeout: PAGE_MS });
    await eventually('evt_portal_1 delivered to a-hooks', async () => receiverA.applied.includes('evt_portal_1'), { timeoutMs: SETTLE_MS });
    await eventually('the delivery queue to drain', async () => (await suite.started.clients.queueDepth()) === 0, { timeoutMs: SETTLE_MS });
    const event = await suite.api('GET', '/v1/events/evt_portal_1');

    // Assess
    expect(receiverA.requestsFor('evt_portal_1').map((r) => r.answer)).toEqual([400, 200]);
    expect(receiverB.requestsFor('evt_portal_1').map((r) => r.answer)).toEqual([400]);
    const states = Object.fromEntries((event.json as EventDeliveries).deliveries.map((d) => [d.endpoint, d.state]));
    expect(states).toEqual({ 'a-hooks': 'delivered', 'b-hooks': 'dead' });
  });

  it("is refused 403 by the API, from the page's own session, for another owner's endpoint and for what a portal link may not do", async () => {
    const { page } = await suite.openConsole(link.url);
    await page.getByText(`Portal for ${OWNER_A}`).first().waitFor();

    // Act: the page's own fetch, with the credential the page holds for this tab.
    const answers = await page.evaluate(async (receiverUrl) => {
      // In the page: its sessionStorage (the root tsconfig has no DOM types).
      const storage = (globalThis as unknown as { sessionStorage: { getItem(key: string): string | null } }).sessionStorage;
      const held = JSON.parse(storage.getItem('handoff.console.credential') ?? '{}') as { kind?: string; token?: string };
      const call = async (method: string, path: string, body?: unknown) => {
        const response = await fetch(path, {
          method,
          headers: { authorization: `Bearer ${held.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await response.text();
        const type = text === '' ? undefined : (JSON.parse(text) as { type?: string }).type;
        return { status: response.status, type };
      };
      return {
        kind: held.kind,
        own: await call('GET', '/v1/endpoints/a-hooks'),
        otherEndpoint: await call('GET', '/v1/endpoints/b-hooks'),
        otherDead: await call('GET', '/v1/dead?owner=owner-b'),
        otherEndpointsList: await call('GET', '/v1/endpoints?owner=owner-b'),
        otherReplay: await call('POST', '/v1/replays', { eventId: 'evt_portal_1', endpoint: 'b-hooks', reason: 'not mine' }),
        disable: await call('POST', '/v1/endpoints/a-hooks/disable', { reason: 'from a portal' }),
        enable: await call('POST', '/v1/endpoints/a-hooks/enable', {}),
        create: await call('POST', '/v1/endpoints', { name: 'a-new', url: receiverUrl, eventTypes: ['shipment.returned'], owner: 'owner-a' }),
        remove: await call('DELETE', '/v1/endpoints/a-hooks'),
        changeTypes: await call('PATCH', '/v1/endpoints/a-hooks', { eventTypes: ['shipment.packed'] }),
        mint: await call('POST', '/v1/portal-links', { owner: 'owner-a' }),
        mintOther: await call('POST', '/v1/portal-links', { owner: 'owner-b' }),
      };
    }, receiverA.url);
    const a = await suite.api('GET', '/v1/endpoints/a-hooks');
    const created = await suite.api('GET', '/v1/endpoints/a-new');
    const deadB = await suite.api('GET', '/v1/dead?endpoint=b-hooks');

    // Assess
    expect(answers.kind).toBe('portal');
    expect(answers.own.status).toBe(200);
    const refused = { status: 403, type: 'https://handoff.dev/problems/out-of-scope' };
    for (const name of ['otherEndpoint', 'otherDead', 'otherEndpointsList', 'otherReplay', 'disable', 'enable', 'create', 'remove', 'changeTypes', 'mint', 'mintOther'] as const) {
      expect({ name, ...answers[name] }).toEqual({ name, ...refused });
    }
    // Nothing those calls asked for happened.
    expect(a.status).toBe(200);
    expect(a.json).toMatchObject({ name: 'a-hooks', state: 'enabled', eventTypes: ['shipment.returned'] });
    expect(created.status).toBe(404);
    expect(deadB.json.items.map((d: Delivery) => d.eventId)).toEqual(['evt_portal_1']);
    expect(receiverB.requestsFor('evt_portal_1')).toHaveLength(1);
  });
});
