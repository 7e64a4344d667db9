/**
 * The console's Endpoints pages in a real headless Chromium against a real sandbox, delivering to a
 * test receiver on loopback: the list filtered by state and owner (kept in the route) and read a
 * page at a time; adding an endpoint, the API's message next to the field it names, then the secret
 * shown once (and it is the one the endpoint signs with); editing, only the fields changed sent;
 * Disable asking a reason, with the mouse and with the keyboard alone (the focus then on what it
 * did); a Disable whose answer was lost sent again with its Idempotency-Key; Rotate secret showing
 * the new secret once (an ed25519 key with its public key); Send test event reaching the receiver;
 * portal mode offering only what a portal link may do.
 */
import { createPublicKey, randomBytes, verify } from 'node:crypto';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { tabTo, useConsole, type ConsolePage, type PageOptions } from '../helpers/console-browser';
import { signedWith, startTestReceiver, type TestReceiver } from '../helpers/receiver';

let receiver: TestReceiver;
const suite = useConsole({
  setUp: async () => {
    receiver = await startTestReceiver();
    return {};
  },
  tearDown: async () => receiver?.close(),
});

function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** An endpoint made through the API, as a test's setup. */
async function endpoint(fields: Record<string, unknown>): Promise<void> {
  const created = await suite.api('POST', '/v1/endpoints', { url: `${receiver.url}/${String(fields.name)}`, eventTypes: ['shipment.returned'], ...fields });
  expect(created.status, JSON.stringify(created.json)).toBe(201);
}

/** The console, opened from READY's consoleUrl, then at `route`. */
async function openAt(route: string, url?: string, options?: PageOptions): Promise<ConsolePage> {
  const watched = await suite.openConsole(url, options);
  await watched.page.goto(`${suite.origin}/console/${route}`);
  return watched;
}

/** Waits until the endpoint's page shows it in `state`. */
async function showsState(page: Page, state: string): Promise<void> {
  await page.locator('.endpoint-summary .badge', { hasText: new RegExp(`^${state}$`) }).waitFor();
}

/** The receiver's path for an endpoint named `name` (its URL is the receiver's, then the name). */
function pathOf(name: string): string {
  return `${new URL(receiver.url).pathname}/${name}`;
}

/** The receiver's first request for `eventId`, once it has come (within 20 s). */
async function requestFor(eventId: string) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const request = receiver.requestsFor(eventId)[0];
    if (request !== undefined) return request;
    if (Date.now() > deadline) throw new Error(`the receiver got no request for ${eventId} within 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the Endpoints pages in Chromium', { timeout: 90_000 }, () => {
  it('filters the list by state and owner, the filters kept in the route (a reload keeps them)', async () => {
    await endpoint({ name: 'filter-off', owner: 'filter-owner' });
    await endpoint({ name: 'filter-on', owner: 'filter-owner' });
    expect((await suite.api('POST', '/v1/endpoints/filter-off/disable', { reason: 'test: filtered' })).status).toBe(200);

    const { page } = await suite.openConsole();
    await page.getByRole('navigation').getByRole('link', { name: 'Endpoints' }).click();
    await page.locator('tr[data-endpoint="carrier-acme"]').waitFor();

    await page.getByLabel('State').selectOption('disabled');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL((url) => url.hash === '#/endpoints?state=disabled');
    await page.locator('tr[data-endpoint="carrier-acme"]').waitFor({ state: 'detached' });
    await page.locator('tr[data-endpoint="filter-off"]').waitFor();
    const disabled = await page.locator('tbody tr[data-endpoint]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-endpoint')));
    expect(disabled).toContain('filter-off');
    expect(disabled).not.toContain('filter-on');
    expect(await page.locator('tbody tr[data-endpoint] .badge').allTextContents()).toEqual(disabled.map(() => 'disabled'));

    // Enter in the owner box applies both filters.
    await page.getByLabel('Owner').fill('filter-owner');
    await page.getByLabel('Owner').press('Enter');
    await page.waitForURL((url) => url.hash === '#/endpoints?owner=filter-owner&state=disabled');
    await page.reload();
    await page.locator('tr[data-endpoint="filter-off"]').waitFor();
    expect(await page.locator('tbody tr[data-endpoint]').count()).toBe(1);
    expect(await page.getByLabel('Owner').inputValue()).toBe('filter-owner');
    expect(await page.getByLabel('State').inputValue()).toBe('disabled');

    await page.getByLabel('State').selectOption('enabled');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('tr[data-endpoint="filter-on"]').waitFor();
    expect(await page.locator('tbody tr[data-endpoint]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-endpoint')))).toEqual(['filter-on']);
  });

  it('reads the list a page at a time: "More" adds the next page until there is none', async () => {
    const names = Array.from({ length: 52 }, (_, i) => `paging-${String(i).padStart(2, '0')}`);
    for (const name of names) await endpoint({ name, owner: 'paging-owner' });

    const { page } = await openAt('#/endpoints?owner=paging-owner');
    await page.locator('tr[data-endpoint="paging-00"]').waitFor();
    expect(await page.locator('tbody tr[data-endpoint]').count()).toBe(50);
    const more = page.getByRole('button', { name: 'More' });
    await more.click();
    await page.locator('tr[data-endpoint="paging-51"]').waitFor();

    const shown = await page.locator('tbody tr[data-endpoint]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-endpoint')));
    expect(shown).toEqual(names);
    expect(await more.count()).toBe(0);
    expect(await page.locator('.list-count').textContent()).toBe('52 endpoints shown');
  });

  it("adds an endpoint: a bad URL gets the API's own message next to the URL field, a good one shows its secret once", async () => {
    const { page } = await openAt('#/endpoints');
    await page.getByRole('link', { name: 'Add endpoint' }).click();
    await page.waitForURL((url) => url.hash === '#/endpoints/new');
    await page.getByLabel('Name').fill('console-added');
    // No secret, and no public key: handoff generates the key pair and sets the public key from it.
    expect(await page.getByLabel(/secret|public key/i).count()).toBe(0);
    await page.getByLabel('URL').fill('ftp://example.com/hook');
    await page.getByRole('checkbox', { name: 'shipment.delivered' }).check();
    await page.getByRole('button', { name: 'Add endpoint' }).click();

    const refused = await suite.api('POST', '/v1/endpoints', { name: 'console-added', url: 'ftp://example.com/hook', eventTypes: ['shipment.delivered'] });
    expect(refused.status).toBe(400);
    const apiMessage = (refused.json.errors as { path: string; message: string }[]).find((e) => e.path === 'url')!.message;
    const urlError = page.locator('#field-url-error-0');
    await urlError.waitFor();
    expect(await urlError.textContent()).toBe(apiMessage);
    const url = page.getByLabel('URL');
    expect(await url.getAttribute('aria-invalid')).toBe('true');
    expect((await url.getAttribute('aria-describedby'))!.split(' ')).toContain('field-url-error-0');
    // No other field is faulted.
    expect(await page.locator('.field-error').count()).toBe(1);
    // The problem in full above the buttons: its title and detail, then each field's message in a list (a block of its own, not inside a paragraph).
    const note = page.locator('#form-problems [role="alert"]');
    expect(await note.evaluate((element) => element.tagName)).toBe('DIV');
    expect(await note.locator('li').allInnerTexts()).toEqual([`url ${apiMessage}`]);
    expect(await page.locator('p ul, p li').count()).toBe(0);

    await url.fill(`${receiver.url}/console-added`);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const dialog = page.getByRole('dialog', { name: /console-added is added/ });
    await dialog.waitFor();
    const secret = await dialog.getByLabel('Signing secret').inputValue();
    expect(secret).toMatch(/^whsec_/);

    await dialog.getByRole('button', { name: 'Done' }).click();
    await page.waitForURL((u) => u.hash === '#/endpoints/console-added');
    await page.locator('.endpoint-summary .badge').waitFor();
    expect(await page.content()).not.toContain(secret);

    // The secret shown is the one it signs with.
    const { json } = await suite.api('POST', '/v1/endpoints/console-added/test');
    const request = await requestFor(json.eventId);
    expect(request.path).toBe(pathOf('console-added'));
    expect(signedWith(request, secret)).toBe(true);
  });

  it('edits an endpoint: only the fields changed are sent, the URL (shown redacted) kept when left empty', async () => {
    await endpoint({ name: 'to-edit', owner: 'edit-owner', maxAttempts: 5 });
    const { page } = await openAt('#/endpoints/to-edit');
    await page.getByRole('link', { name: 'Edit', exact: true }).click();
    await page.waitForURL((u) => u.hash === '#/endpoints/to-edit/edit');
    const attempts = page.getByLabel('Max attempts');
    expect(await attempts.inputValue()).toBe('5');
    expect(await page.getByLabel('URL').inputValue()).toBe('');

    const patches: unknown[] = [];
    page.on('request', (request) => {
      if (request.method() === 'PATCH') patches.push({ path: new URL(request.url()).pathname, body: request.postDataJSON() });
    });
    await attempts.fill('7');
    await page.getByLabel('Owner').fill('');
    await page.getByLabel('Owner').press('Enter');
    await page.waitForURL((u) => u.hash === '#/endpoints/to-edit');

    const { json } = await suite.api('GET', '/v1/endpoints/to-edit');
    // One PATCH with the two fields changed: the owner emptied is unset (null), nothing else sent.
    expect(patches).toEqual([{ path: '/v1/endpoints/to-edit', body: { maxAttempts: 7, owner: null } }]);
    expect(json.settings.maxAttempts).toBe(7);
    expect(json.owner).toBeNull();
    expect(json.url).toBe(`${receiver.url}/to-edit`);
  });

  it('Disable asks a reason, and the state changes; Enable turns it back', async () => {
    await endpoint({ name: 'to-disable' });
    const { page } = await openAt('#/endpoints/to-disable');
    await page.getByRole('button', { name: 'Disable' }).click();
    const dialog = page.getByRole('dialog', { name: 'Disable to-disable' });
    await dialog.waitFor();
    await dialog.getByLabel('Reason').fill('receiver down for maintenance');
    await dialog.getByRole('button', { name: 'Disable' }).click();

    await showsState(page, 'disabled');
    expect(await dialog.count()).toBe(0);
    const { json } = await suite.api('GET', '/v1/endpoints/to-disable');
    expect(json.state).toBe('disabled');
    expect(json.stateChange.reason).toBe('receiver down for maintenance');
    expect(await page.locator('.state-change').textContent()).toContain('receiver down for maintenance');
    // Disabled, it offers Enable in Disable's place.
    expect(await page.getByRole('button', { name: 'Disable' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Enable' }).click();
    const enable = page.getByRole('dialog', { name: 'Enable to-disable' });
    await enable.getByRole('button', { name: 'Enable' }).click();
    await showsState(page, 'enabled');
    expect((await suite.api('GET', '/v1/endpoints/to-disable')).json.state).toBe('enabled');
  });

  it('reaches and uses Disable with the keyboard alone', async () => {
    await endpoint({ name: 'kbd-disable' });
    const { page } = await openAt('#/endpoints/kbd-disable');
    await page.locator('.endpoint-summary .badge').waitFor();

    await tabTo(page, page.getByRole('button', { name: 'Disable' }));
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Disable kbd-disable' });
    await dialog.waitFor();
    // The dialog takes the focus, on its reason.
    expect(await dialog.getByLabel('Reason').evaluate((element) => element.ownerDocument.activeElement === element)).toBe(true);
    await page.keyboard.type('keyboard only');
    await tabTo(page, dialog.getByRole('button', { name: 'Disable' }));
    await page.keyboard.press('Enter');

    await showsState(page, 'disabled');
    const { json } = await suite.api('GET', '/v1/endpoints/kbd-disable');
    expect(json.state).toBe('disabled');
    expect(json.stateChange.reason).toBe('keyboard only');
    // Disable's button is gone (Enable is in its place): the focus is on what the action did, not back at the page's start.
    const notice = page.locator('.endpoint-actions .notice');
    await expect.poll(() => notice.evaluate((element) => element.ownerDocument.activeElement === element), { timeout: 5000 }).toBe(true);
    expect(await notice.innerText()).toContain('kbd-disable is disabled');
    // And the keyboard goes on from there: the next stop is after the actions, not the page's first link.
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate(() => (globalThis as unknown as { document: { activeElement: { textContent: string | null } | null } }).document.activeElement?.textContent)).toBe('Remove');
  });

  it("sends a Disable whose answer was lost again with the same Idempotency-Key: the API answers as it did, acting once", async () => {
    await endpoint({ name: 'lost-answer' });
    // The lost answer's line in the browser's console: a network failure this test makes.
    const { page } = await openAt('#/endpoints/lost-answer', undefined, { allowConsoleErrors: [/net::ERR_FAILED/] });
    await page.locator('.endpoint-summary .badge').waitFor();
    const sent: { key: string | undefined; answer: unknown }[] = [];
    await page.route(
      (url) => url.pathname === '/v1/endpoints/lost-answer/disable',
      async (route) => {
        const response = await route.fetch();
        sent.push({ key: route.request().headers()['idempotency-key'], answer: await response.json() });
        // The API disabled it; the first answer is lost on its way back.
        if (sent.length === 1) await route.abort('failed');
        else await route.fulfill({ response });
      },
    );

    // Act
    await page.getByRole('button', { name: 'Disable' }).click();
    const dialog = page.getByRole('dialog', { name: 'Disable lost-answer' });
    await dialog.getByLabel('Reason').fill('receiver moving');
    await dialog.getByRole('button', { name: 'Disable' }).click();
    const failure = await dialog.getByRole('alert').innerText();
    await dialog.getByRole('button', { name: 'Disable' }).click();
    await showsState(page, 'disabled');
    await dialog.waitFor({ state: 'detached' });

    // Assess: the same request, the same key; the answer the first request's, so nothing was done twice.
    expect(failure).toContain('Failed to fetch');
    expect(sent).toHaveLength(2);
    expect(sent[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1]!.key).toBe(sent[0]!.key);
    expect(sent[1]!.answer).toEqual(sent[0]!.answer);
    expect((await suite.api('GET', '/v1/endpoints/lost-answer')).json.stateChange.reason).toBe('receiver moving');
  });

  it('Rotate secret shows the new secret once, and it is the one the endpoint signs with', async () => {
    const old = newSecret();
    await endpoint({ name: 'to-rotate', secret: old });
    const { page } = await openAt('#/endpoints/to-rotate');
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const ask = page.getByRole('dialog', { name: 'Rotate the secret of to-rotate' });
    await ask.getByLabel(/Overlap in seconds/).fill('600');
    await ask.getByRole('button', { name: 'Rotate secret' }).click();

    const shown = page.getByRole('dialog', { name: 'New signing secret of to-rotate' });
    await shown.waitFor();
    const secret = await shown.getByLabel('Signing secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(old);
    await shown.getByRole('button', { name: 'Done' }).click();
    await shown.waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(secret);
    // The endpoint read again after the rotation: the old secret's overlap shown.
    await page.getByText(/the previous one signs too until/).waitFor();

    const { json } = await suite.api('POST', '/v1/endpoints/to-rotate/test');
    const request = await requestFor(json.eventId);
    expect(signedWith(request, secret)).toBe(true);
    expect(signedWith(request, old)).toBe(true);
  });

  it("shows an ed25519 endpoint's public key, and Rotate secret its new key once with the public key the receiver verifies with", async () => {
    await endpoint({ name: 'to-rotate-ed', signature: 'ed25519' });
    const before = (await suite.api('GET', '/v1/endpoints/to-rotate-ed')).json.publicKey as string;
    const { page } = await openAt('#/endpoints/to-rotate-ed');
    const shownKey = page.locator('[data-field="publicKey"]');
    await shownKey.waitFor();
    const keyBefore = await shownKey.innerText();

    // Act
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('dialog', { name: 'Rotate the secret of to-rotate-ed' }).getByRole('button', { name: 'Rotate secret' }).click();
    const shown = page.getByRole('dialog', { name: 'New signing secret of to-rotate-ed' });
    await shown.waitFor();
    const secret = await shown.getByLabel('Signing secret').inputValue();
    const publicKey = await shown.getByLabel('Public key').inputValue();
    await shown.getByRole('button', { name: 'Done' }).click();
    await page.locator('[data-field="publicKey"]', { hasText: publicKey }).waitFor();

    // Assess
    expect(before).toMatch(/^whpk_/);
    expect(keyBefore).toBe(before);
    expect(secret).toMatch(/^whsk_/);
    expect(publicKey).toMatch(/^whpk_/);
    expect(publicKey).not.toBe(before);
    expect((await suite.api('GET', '/v1/endpoints/to-rotate-ed')).json.publicKey).toBe(publicKey);
    expect(await page.content()).not.toContain(secret);
  });

  it('Rotate secret moves an HMAC endpoint to ed25519 when that scheme is chosen: its key shown once, both signatures through the overlap', async () => {
    const old = newSecret();
    await endpoint({ name: 'to-ed25519', secret: old });
    const { page } = await openAt('#/endpoints/to-ed25519');
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const ask = page.getByRole('dialog', { name: 'Rotate the secret of to-ed25519' });
    await ask.getByLabel('Signature scheme of the new secret').selectOption('ed25519');
    await ask.getByRole('button', { name: 'Rotate secret' }).click();

    const shown = page.getByRole('dialog', { name: 'New signing secret of to-ed25519' });
    await shown.waitFor();
    const secret = await shown.getByLabel('Signing secret').inputValue();
    const publicKey = await shown.getByLabel('Public key').inputValue();
    await shown.getByRole('button', { name: 'Done' }).click();
    const { json } = await suite.api('POST', '/v1/endpoints/to-ed25519/test');
    const request = await requestFor(json.eventId);

    expect(secret).toMatch(/^whsk_/);
    expect(publicKey).toMatch(/^whpk_/);
    expect((await suite.api('GET', '/v1/endpoints/to-ed25519')).json.settings.signature).toBe('ed25519');
    // The new key signs v1a, which the public key alone verifies; the old HMAC secret still signs v1 through the overlap.
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey.slice('whpk_'.length), 'base64').toString('base64url') }, format: 'jwk' });
    const signed = Buffer.from(`${String(request.headers['webhook-id'])}.${String(request.headers['webhook-timestamp'])}.${request.body}`);
    const v1a = String(request.headers['webhook-signature']).split(' ').filter((entry) => entry.startsWith('v1a,'));
    expect(v1a.some((entry) => verify(null, signed, key, Buffer.from(entry.slice(4), 'base64')))).toBe(true);
    expect(signedWith(request, old)).toBe(true);
  });

  it('Send test event delivers to the receiver, and links to it in Lookup', async () => {
    const secret = newSecret();
    await endpoint({ name: 'to-test', secret });
    const { page } = await openAt('#/endpoints/to-test');
    await page.getByRole('button', { name: 'Send test event' }).click();

    const notice = page.locator('.endpoint-actions .notice');
    await notice.waitFor();
    const eventId = /Test event (\S+) is on the queue/.exec((await notice.textContent()) ?? '')?.[1];
    expect(eventId).toBeDefined();
    expect(await notice.getByRole('link', { name: 'Follow it in Lookup' }).getAttribute('href')).toBe(`#/lookup?id=${encodeURIComponent(eventId!)}`);

    const request = await requestFor(eventId!);
    expect(request.path).toBe(pathOf('to-test'));
    expect(signedWith(request, secret)).toBe(true);
    expect(JSON.parse(request.body).data.type).toBe('handoff.test');
  });

  it('in portal mode offers Rotate secret, Send test event and Edit (the URL alone), nothing else', async () => {
    await endpoint({ name: 'portal-own', owner: 'portal-owner' });
    const link = await suite.api('POST', '/v1/portal-links', { owner: 'portal-owner', ttlSeconds: 600 });
    const watched = await openAt('#/endpoints', link.json.url);
    const { page } = watched;
    await page.locator('tr[data-endpoint="portal-own"]').waitFor();
    expect(await page.locator('tbody tr[data-endpoint]').count()).toBe(1);
    expect(await page.getByRole('link', { name: 'Add endpoint' }).count()).toBe(0);
    expect(await page.getByLabel('Owner').count()).toBe(0);

    await page.getByRole('link', { name: 'portal-own' }).click();
    await page.locator('.endpoint-summary .badge').waitFor();
    const actions = await page.locator('.endpoint-actions .actions').locator('button, a').allTextContents();
    expect(actions).toEqual(['Rotate secret', 'Send test event', 'Edit']);

    await page.getByRole('link', { name: 'Edit', exact: true }).click();
    await page.getByLabel('URL').fill(`${receiver.url}/portal-moved`);
    expect(await page.locator('form input, form select, form textarea').count()).toBe(1);
    await page.getByRole('button', { name: 'Save URL' }).click();
    await page.waitForURL((u) => u.hash === '#/endpoints/portal-own');
    expect((await suite.api('GET', '/v1/endpoints/portal-own')).json.url).toBe(`${receiver.url}/portal-moved`);
    expect(watched.responses().filter((line) => / 40[13]$/.test(line))).toEqual([]);
  });
});
