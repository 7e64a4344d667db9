/**
 * The console in a real headless Chromium against a real sandbox (test/helpers/console-browser.ts):
 * READY's consoleUrl opens it with the token taken out of the address bar, the four pages are
 * reachable by their labels with the keyboard alone, a portal link opens it in portal mode, and the
 * page asks nothing of any origin but the sandbox's (checked after every test, with console errors).
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { useConsole } from '../helpers/console-browser';

const suite = useConsole();

const LABELS = ['Overview', 'Endpoints', 'Lookup', 'Dead letters'] as const;
const ROUTES: Record<(typeof LABELS)[number], string> = { Overview: '#/overview', Endpoints: '#/endpoints', Lookup: '#/lookup', 'Dead letters': '#/dead' };

/** The navigation's link with this visible label. */
function navLink(page: Page, label: string) {
  return page.getByRole('navigation').getByRole('link', { name: label, exact: true });
}

/**
 * Moves the keyboard focus with Tab (then Shift+Tab, the other way) until the navigation's link
 * `label` has it; fails when neither way reaches it.
 */
async function tabTo(page: Page, label: string): Promise<void> {
  const link = navLink(page, label);
  for (const key of ['Tab', 'Shift+Tab']) {
    for (let i = 0; i < 25; i++) {
      if (await link.evaluate((element) => element.ownerDocument.activeElement === element)) return;
      await page.keyboard.press(key);
    }
  }
  throw new Error(`the keyboard does not reach the navigation's "${label}"`);
}

describe('the console in Chromium, from the sandbox', { timeout: 60_000 }, () => {
  it("opens from READY's consoleUrl, takes the token out of the address bar, and shows the four pages' labels", async () => {
    const { page } = await suite.openConsole();

    const url = new URL(page.url());
    expect(url.origin).toBe(suite.origin);
    expect(url.pathname).toBe('/console/');
    expect(url.hash).toBe('#/overview');
    expect(page.url()).not.toContain(suite.started.sandbox.ready.apiToken);
    for (const label of LABELS) await expect(navLink(page, label).isVisible()).resolves.toBe(true);
  });

  it('reaches each page by its label with the keyboard alone (Tab, Enter)', async () => {
    const { page } = await suite.openConsole();
    const reached: string[] = [];

    for (const label of [...LABELS.slice(1), LABELS[0]]) {
      await tabTo(page, label);
      await page.keyboard.press('Enter');
      await page.waitForURL((url) => url.hash.startsWith(ROUTES[label]));
      reached.push(new URL(page.url()).hash);
    }

    expect(reached).toEqual(['#/endpoints', '#/lookup', '#/dead', '#/overview']);
    expect(await navLink(page, 'Overview').getAttribute('aria-current')).toBe('page');
  });

  it('keeps the credential for the tab: a reload opens the console again, the token still out of the address bar', async () => {
    const { page } = await suite.openConsole();

    await page.reload();
    await page.getByRole('navigation').waitFor();

    expect(page.url()).not.toContain(suite.started.sandbox.ready.apiToken);
    expect(await navLink(page, 'Endpoints').isVisible()).toBe(true);
  });

  it('opens a portal link (POST /v1/portal-links) in portal mode, for its owner, calling nothing a portal link may not', async () => {
    const link = await suite.api('POST', '/v1/portal-links', { owner: 'acme-corp', ttlSeconds: 600 });
    expect(link.status).toBe(201);
    expect(link.json.url).toMatch(new RegExp(`^${suite.origin.replace(/[.]/g, '\\.')}/console/#portal=`));

    const watched = await suite.openConsole(link.json.url);
    const { page } = watched;
    await page.getByText('Portal for').first().waitFor();

    expect(page.url()).not.toContain(link.json.token);
    expect(await page.getByText('Portal for').first().textContent()).toContain('acme-corp');
    // The page asks only for what the link may see: the API refuses it nothing.
    await page.waitForLoadState('networkidle');
    expect(watched.responses().filter((line) => / 40[13]$/.test(line))).toEqual([]);
  });

  it('shows how to open the console when there is no credential', async () => {
    const watched = await suite.openConsole(`${suite.origin}/console/`);

    expect(await watched.page.getByRole('navigation').count()).toBe(0);
    expect(await watched.page.getByRole('heading').first().isVisible()).toBe(true);
    expect(watched.responses().filter((line) => line.startsWith('GET /v1/'))).toEqual([]);
  });

  it('serves the console with its headers: the CSP, nosniff, no referrer, revalidated by ETag; /console redirected to /console/', async () => {
    const index = await fetch(`${suite.origin}/console/`);
    const redirect = await fetch(`${suite.origin}/console`, { redirect: 'manual' });
    const again = await fetch(`${suite.origin}/console/app.js`, { headers: { 'if-none-match': (await fetch(`${suite.origin}/console/app.js`)).headers.get('etag')! } });
    const config = await fetch(`${suite.origin}/console/config.json`);
    const unknown = await fetch(`${suite.origin}/console/nothing.js`);

    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
    expect(index.headers.get('x-content-type-options')).toBe('nosniff');
    expect(index.headers.get('referrer-policy')).toBe('no-referrer');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(redirect.status).toBe(308);
    expect(new URL(redirect.headers.get('location')!, `${suite.origin}/console`).href).toBe(`${suite.origin}/console/`);
    expect(again.status).toBe(304);
    expect(await config.json()).toEqual({});
    expect(unknown.status).toBe(404);
  });
});
