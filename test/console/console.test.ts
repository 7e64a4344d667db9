/**
 * The console in a real headless Chromium against a real sandbox (test/helpers/console-browser.ts):
 * READY's consoleUrl opens it with the token taken out of the address bar, the four pages are
 * reachable by their labels with the keyboard alone, a portal link opens it in portal mode, a
 * route's query is never taken for a credential, a malformed route opens the Overview, and the
 * page asks nothing of any origin but the sandbox's (checked after every test, with console errors:
 * the harness is shown to catch both).
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { openWatchedPage, tabTo, useConsole } from '../helpers/console-browser';

const suite = useConsole();

const LABELS = ['Overview', 'Endpoints', 'Lookup', 'Dead letters'] as const;
const ROUTES: Record<(typeof LABELS)[number], string> = { Overview: '#/overview', Endpoints: '#/endpoints', Lookup: '#/lookup', 'Dead letters': '#/dead' };

/** The navigation's link with this visible label. */
function navLink(page: Page, label: string) {
  return page.getByRole('navigation').getByRole('link', { name: label, exact: true });
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
      await tabTo(page, navLink(page, label), 25);
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

  it("never takes a route's query for a credential: `#/lookup?id=…&token=…` is a lookup, the tab's credential kept", async () => {
    const { page } = await suite.openConsole();
    const held = () =>
      page.evaluate(() => {
        // In the page: its sessionStorage (the root tsconfig has no DOM types).
        const storage = (globalThis as unknown as { sessionStorage: { getItem(key: string): string | null } }).sessionStorage;
        return JSON.parse(storage.getItem('handoff.console.credential') ?? '{}') as { kind?: string; token?: string };
      });
    const before = await held();

    await page.goto(`${suite.origin}/console/#/lookup?id=evt_nothing&token=not-the-token`);
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Lookup' }).waitFor();
    await page.getByRole('heading', { name: 'Nothing found for evt_nothing' }).waitFor();

    expect(before).toEqual({ kind: 'operator', token: suite.started.sandbox.ready.apiToken });
    expect(await held()).toEqual(before);
    expect(new URL(page.url()).hash).toBe('#/lookup?id=evt_nothing&token=not-the-token');
  });

  it('opens the Overview for a route with a malformed escape, rather than failing', async () => {
    const { page } = await suite.openConsole();

    await page.goto(`${suite.origin}/console/#/endpoints/%E0%A4%A`);
    await page.reload();

    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await page.getByRole('navigation').getByRole('link', { name: 'Overview', exact: true }).getAttribute('aria-current')).toBe('page');
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

  it("is watched: the harness records a request to another origin and a console error (the rules every test is held to)", async () => {
    // A watched page of its own, not the suite's: the suite fails any test whose pages break a rule.
    const watched = await openWatchedPage(suite.browser, suite.origin);
    try {
      // A page with no Content Security Policy (about:blank): the request leaves for the network, and is stopped there.
      await watched.page.evaluate(async () => {
        await fetch('https://example.com/harness-probe').catch(() => undefined);
        console.error('a planted console error');
      });
      // The console's own page: its CSP refuses the request before it leaves, which is a console error of its own.
      await watched.page.goto(`${suite.origin}/console/`);
      await watched.page.locator('main').first().waitFor();
      await watched.page.evaluate(async () => {
        await fetch('https://example.com/csp-probe').catch(() => undefined);
      });

      const problems = watched.problems();
      expect(watched.externalRequests()).toEqual(['https://example.com/harness-probe']);
      expect(problems).toContain('request to another origin: https://example.com/harness-probe');
      expect(problems).toContain('console error: a planted console error');
      expect(problems.some((line) => line.startsWith('console error: ') && line.includes('https://example.com/csp-probe') && /Content Security Policy/.test(line))).toBe(true);
    } finally {
      await watched.close();
    }
  });
});
