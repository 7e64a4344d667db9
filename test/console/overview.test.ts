/**
 * The console's Overview in a real headless Chromium against a real sandbox (the demo's two
 * endpoints, carrier-acme and notifications): each endpoint's row with its counts, the per-minute
 * chart, an update without a reload when a delivery is made after the page loaded (the chart and
 * the list every 10 s, each endpoint's last hour every minute, its 24 h every 10 minutes, on the
 * page's own clock), readable at 390 px, in portal mode the owner's endpoints alone, metrics that
 * cannot be read said so where their figures would be, a list that answers slower than its refresh
 * still shown (and asked for once at a time), and thirty endpoints loaded in full on a phone.
 */
import { existsSync, renameSync } from 'node:fs';
import type { Page, Request } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { metricsFileFor } from '../../sandbox/metric-sink';
import { PHONE, useConsole, type ConsolePage } from '../helpers/console-browser';
import { eventually } from '../helpers/sandbox-clients';

// Recovery once an hour rather than every 5 s: each run's metric document rewrites the sink's
// file, which the metrics test moves away for the length of the test.
const suite = useConsole({ setUp: async () => ({ env: { HANDOFF_RECOVERY_INTERVAL_MS: '3600000' } }) });

const DEMO_ENDPOINTS = ['carrier-acme', 'notifications'] as const;
/** Deliveries this file has made to each demo endpoint (every event goes to both). */
let deliveredToEach = 0;

/** A delivered event for carrier acme: the demo routes it to both endpoints. */
function acmeDelivered(id: string) {
  return { id, shipmentId: `shp_${id}`, status: 'delivered', occurredAt: '2026-12-02T10:15:00Z', data: { carrier: 'acme' } };
}

/** Sends `id` through the API and waits until both demo endpoints have it delivered. */
async function deliver(id: string): Promise<void> {
  const sent = await suite.api('POST', '/v1/events', acmeDelivered(id));
  expect(sent.status).toBe(202);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const event = await suite.api('GET', `/v1/events/${id}`);
    const states = event.status === 200 ? (event.json.deliveries as { state: string }[]).map((d) => d.state) : [];
    if (states.length === 2 && states.every((state) => state === 'delivered')) break;
    if (Date.now() > deadline) throw new Error(`${id} was not delivered to both demo endpoints within 30 s (${JSON.stringify(states)})`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  deliveredToEach += 1;
}

/** Waits until the API's own 1 h figure for the endpoint reaches `atLeast` (the metric sink has it). */
async function apiDelivered(endpoint: string, atLeast: number): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const stats = await suite.api('GET', `/v1/stats?endpoint=${endpoint}&since=1h`);
    if (stats.json.deliveredCount >= atLeast) return stats.json.deliveredCount as number;
    if (Date.now() > deadline) throw new Error(`${endpoint}'s delivered count stayed ${stats.json.deliveredCount}, below ${atLeast}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function figure(page: Page, endpoint: string, name: string) {
  return page.locator(`tr[data-endpoint="${endpoint}"] [data-figure="${name}"]`);
}

async function figureNumber(page: Page, endpoint: string, name: string): Promise<number> {
  const text = (await figure(page, endpoint, name).textContent()) ?? '';
  return Number(text.replace(/[^\d]/g, ''));
}

/** Waits until the endpoint's row shows its last hour's and its 24 h figures ("…" until each first comes). */
async function figuresShown(page: Page, endpoint: string): Promise<void> {
  for (const name of ['delivered-1h', 'delivered-24h']) await figure(page, endpoint, name).filter({ hasNotText: '…' }).waitFor({ timeout: 20_000 });
}

/** The `since` of a `GET /v1/stats` request for one endpoint, as `endpoint since` (undefined for any other request). */
function statsAsked(request: Request): string | undefined {
  const url = new URL(request.url());
  if (url.pathname !== '/v1/stats') return undefined;
  return `${url.searchParams.get('endpoint')} ${url.searchParams.get('since')}`;
}

/** The console opened from READY's consoleUrl on a clock the test can stop and move (running until it does). */
async function openOnTestClock(): Promise<ConsolePage> {
  const watched = await suite.openPage();
  await watched.page.clock.install();
  await watched.page.goto(suite.consoleUrl);
  return watched;
}

/**
 * Stops the page's clock: no timer fires until the test moves it. (Stopped from the start, it
 * would hold back Preact's effects too, which wait for the next frame.)
 */
async function stopClock(page: Page): Promise<void> {
  // The page's clock runs on while the time is read: on a busy machine it can pass the target
  // before the pause reaches it, which Playwright refuses ("to the past"). Then read it again.
  for (let tries = 1; ; tries++) {
    try {
      await page.clock.pauseAt((await page.evaluate(() => Date.now())) + 50);
      return;
    } catch (error) {
      if (tries >= 5 || !/to the past/.test(String(error))) throw error;
    }
  }
}

describe('the Overview in Chromium', { timeout: 90_000 }, () => {
  it("shows the demo's endpoints with their state, health and counts, and the chart of the last hour", async () => {
    await deliver('evt_overview_1');
    await apiDelivered('carrier-acme', 1);
    await apiDelivered('notifications', 1);

    const { page } = await suite.openConsole();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    for (const endpoint of DEMO_ENDPOINTS) await figuresShown(page, endpoint);

    const rows = await page.locator('tbody tr[data-endpoint]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-endpoint')));
    expect(rows).toEqual(expect.arrayContaining([...DEMO_ENDPOINTS]));
    for (const endpoint of DEMO_ENDPOINTS) {
      const row = page.locator(`tr[data-endpoint="${endpoint}"]`);
      expect(await row.getByRole('link', { name: endpoint }).getAttribute('href')).toBe(`#/endpoints/${endpoint}`);
      expect(await row.locator('.badge').textContent()).toBe('enabled');
      expect(await figureNumber(page, endpoint, 'delivered-1h')).toBeGreaterThanOrEqual(1);
      expect(await figureNumber(page, endpoint, 'delivered-24h')).toBeGreaterThanOrEqual(1);
      for (const name of ['retried-1h', 'retried-24h', 'dead-1h', 'dead-24h', 'dead-now', 'parked']) {
        expect(await figure(page, endpoint, name).textContent(), `${endpoint} ${name}`).toMatch(/^\d+$/);
      }
    }
    // Every header cell names its column for a screen reader, the two header rows included.
    expect(await page.locator('table.overview-table thead th:not([scope])').count()).toBe(0);

    // The chart: an inline SVG labelled with its totals, its legend, and the minutes as a table.
    const chart = page.getByRole('img', { name: /delivered and \d+ failed attempts over the last \d+ minutes/ });
    expect(await chart.count()).toBe(1);
    const label = (await chart.getAttribute('aria-label')) ?? '';
    const delivered = Number(/(\d+) delivered/.exec(label)?.[1]);
    expect(delivered).toBeGreaterThanOrEqual(2);
    expect(await chart.locator('title').first().textContent()).toBe(label);
    expect(await chart.locator('.series-delivered rect').count()).toBeGreaterThanOrEqual(1);
    expect(await chart.locator('text.axis-title').allTextContents()).toEqual(['Time (minute started)', 'Per minute']);
    const legend = await page.locator('figcaption.legend').textContent();
    expect(legend).toContain(`Delivered (${delivered})`);
    expect(legend).toMatch(/Failed attempts \(\d+\)/);
    await page.getByText('Show as table').click();
    const minutes = await page.locator('#overview-minutes tbody tr').count();
    expect(minutes).toBeGreaterThanOrEqual(60);
    // How often each part is read, said on the page.
    expect(await page.locator('p.overview-status').textContent()).toMatch(
      /^Updated .+ · the endpoints and the chart every 10 s, each endpoint's last hour every minute, its 24 h every 10 minutes/,
    );
  });

  it("updates without a reload: the chart within 10 s, the endpoint's last hour within the minute, its 24 h not before 10 minutes", async () => {
    const { page } = await openOnTestClock();
    const asked: string[] = [];
    page.on('request', (request) => {
      const stats = statsAsked(request);
      if (stats !== undefined) asked.push(stats);
    });
    await figuresShown(page, 'carrier-acme');
    await eventually('every row to show its figures', async () => ((await page.locator('tbody td[data-figure]', { hasText: '…' }).count()) === 0 ? true : undefined), {
      timeoutMs: 20_000,
    });
    // What the first reads asked for is not this test's business: what follows them is.
    await stopClock(page);
    asked.length = 0;
    const before = await figureNumber(page, 'carrier-acme', 'delivered-1h');
    const dayBefore = await figureNumber(page, 'carrier-acme', 'delivered-24h');
    const chart = () => page.getByRole('img', { name: /delivered and/ });
    const chartBefore = Number(/(\d+) delivered/.exec((await chart().getAttribute('aria-label')) ?? '')?.[1]);
    const updatedBefore = await page.locator('p.overview-status').textContent();
    // A mark on the window: a reload would lose it.
    await page.evaluate(() => {
      (globalThis as { overviewMark?: number }).overviewMark = 1;
    });

    await deliver('evt_overview_2');
    await apiDelivered('carrier-acme', before + 1);

    // Act: 10 s on the page's clock: the list and the chart are read again, the figures are not.
    await page.clock.fastForward(10_000);
    await eventually('the chart to show the new deliveries', async () => {
      const label = (await chart().getAttribute('aria-label')) ?? '';
      return Number(/(\d+) delivered/.exec(label)?.[1]) >= chartBefore + 2 ? true : undefined;
    }, { timeoutMs: 20_000 });
    const hourAfter10s = await figureNumber(page, 'carrier-acme', 'delivered-1h');
    const askedAfter10s = [...asked];
    // A minute on the page's clock since the figures were read: the last hour is read again.
    await page.clock.fastForward(50_000);
    await expect.poll(() => figureNumber(page, 'carrier-acme', 'delivered-1h'), { timeout: 20_000, interval: 250 }).toBeGreaterThan(before);

    // Assess
    expect(hourAfter10s).toBe(before);
    expect(askedAfter10s).toEqual([]);
    expect(asked.filter((line) => line.startsWith('carrier-acme '))).toEqual(['carrier-acme 1h']);
    expect(await figureNumber(page, 'carrier-acme', 'delivered-24h')).toBe(dayBefore);
    expect(await page.evaluate(() => (globalThis as { overviewMark?: number }).overviewMark)).toBe(1);
    expect(await page.locator('p.overview-status').textContent()).not.toBe(updatedBefore);
  });

  it('reads at 390 px wide: the page does not scroll sideways (the table scrolls in its frame)', async () => {
    const { page } = await suite.openConsole(undefined, { viewport: PHONE });
    await figuresShown(page, 'carrier-acme');
    const widths = await page.locator('html').evaluate((root) => ({ page: root.scrollWidth, view: root.clientWidth }));
    expect(widths.page).toBeLessThanOrEqual(widths.view);
    const chart = await page.locator('svg.chart').boundingBox();
    expect(chart!.width).toBeLessThanOrEqual(PHONE.width);
    // Drawn at its own width, so its text keeps its size rather than shrinking with the drawing.
    expect(await page.locator('svg.chart').getAttribute('width')).toBe(String(Math.round(chart!.width)));
  });

  it("in portal mode shows the owner's endpoints alone, their chart summed, and nothing the link may not read", async () => {
    const created = await suite.api('POST', '/v1/endpoints', { name: 'overview-portal', url: 'http://127.0.0.1:9/portal', eventTypes: ['shipment.returned'], owner: 'overview-owner' });
    expect(created.status).toBe(201);
    const link = await suite.api('POST', '/v1/portal-links', { owner: 'overview-owner', ttlSeconds: 600 });

    const watched = await suite.openConsole(link.json.url);
    const { page } = watched;
    await figuresShown(page, 'overview-portal');
    await page.getByRole('img', { name: /overview-owner's endpoints/ }).waitFor();

    const rows = await page.locator('tbody tr[data-endpoint]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-endpoint')));
    expect(rows).toEqual(['overview-portal']);
    expect(await page.getByRole('heading', { level: 2, name: /overview-owner's endpoint together/ }).count()).toBe(1);
    expect(watched.responses().filter((line) => / 40[13]$/.test(line))).toEqual([]);
    expect(watched.responses()).toContain('GET /v1/stats/minutes 200');
  });

  it('says the metrics are unavailable where their figures would be, the ledger\'s counts still shown', async () => {
    // The sandbox's metric sink, moved away: the API answers metricsError (and null figures) until it is back.
    const file = metricsFileFor(suite.started.sandbox.stateFile);
    // The sink writes a burst of documents 500 ms after the first of them. Once the API's figures hold
    // every delivery this file made, the file holds the last burst: no write is pending, none will
    // come without traffic, and the file can be moved away.
    await eventually(
      'the metric sink to hold every delivery made',
      async () => {
        for (const endpoint of DEMO_ENDPOINTS) {
          const stats = await suite.api('GET', `/v1/stats?endpoint=${endpoint}&since=24h`);
          if (stats.json.deliveredCount !== deliveredToEach) return undefined;
        }
        return true;
      },
      { timeoutMs: 20_000 },
    );
    renameSync(file, `${file}.away`);
    try {
      const stats = await suite.api('GET', '/v1/stats?endpoint=carrier-acme&since=1h');
      const minutes = await suite.api('GET', '/v1/stats/minutes?since=1h');
      expect(stats.json.metricsError).toEqual(expect.any(String));
      expect(minutes.json.metricsError).toEqual(expect.any(String));

      const { page } = await suite.openConsole();
      await figuresShown(page, 'carrier-acme');
      for (const name of ['delivered-1h', 'delivered-24h', 'retried-1h', 'retried-24h', 'dead-1h', 'dead-24h']) {
        expect(await figure(page, 'carrier-acme', name).textContent(), name).toBe('n/a');
      }
      expect(await figure(page, 'carrier-acme', 'dead-now').textContent()).toMatch(/^\d+$/);
      expect(await figure(page, 'carrier-acme', 'parked').textContent()).toMatch(/^\d+$/);
      expect(await page.locator('section[aria-labelledby="endpoints-heading"] p.error').textContent()).toContain(`Metrics unavailable: ${stats.json.metricsError}`);
      expect(await page.locator('section.overview-chart p.error').textContent()).toBe(`Metrics unavailable: ${minutes.json.metricsError}`);
      expect(await page.locator('svg.chart').count()).toBe(0);
      // Nothing wrote the file meanwhile: what the page showed is the state the test made.
      expect(existsSync(file)).toBe(false);
    } finally {
      renameSync(`${file}.away`, file);
    }
  });

  it('shows its figures when the list answers slower than its 10 s refresh, asking for it once at a time', async () => {
    const { page } = await suite.openPage();
    let inFlight = 0;
    let mostInFlight = 0;
    let asked = 0;
    // The list of endpoints takes 11 s to answer: longer than the time between two reads of it.
    await page.route(
      (url) => url.pathname === '/v1/endpoints',
      async (route) => {
        asked += 1;
        mostInFlight = Math.max(mostInFlight, ++inFlight);
        try {
          await new Promise((resolve) => setTimeout(resolve, 11_000));
          await route.fulfill({ response: await route.fetch() });
        } finally {
          inFlight -= 1;
        }
      },
    );
    const opened = Date.now();

    // Act
    await page.goto(suite.consoleUrl);
    await figuresShown(page, 'carrier-acme');
    const shownAfterMs = Date.now() - opened;
    // Past the second refresh's time had the reads run on a fixed beat (at 10 s and 20 s).
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 25_000 - (Date.now() - opened))));

    // Assess
    expect(shownAfterMs).toBeLessThan(25_000);
    expect(mostInFlight).toBe(1);
    // The first read (11 s), then one 10 s after it answered: in flight at 25 s.
    expect(asked).toBeLessThanOrEqual(2);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
  });

  it('loads thirty endpoints in full on a phone: every row its figures, each asked for once', async () => {
    for (let i = 0; i < 28; i++) {
      const created = await suite.api('POST', '/v1/endpoints', { name: `crowd-${String(i).padStart(2, '0')}`, url: `http://127.0.0.1:9/crowd-${i}`, eventTypes: ['shipment.returned'], owner: 'crowd' });
      expect(created.status, JSON.stringify(created.json)).toBe(201);
    }
    const listed = (await suite.api('GET', '/v1/endpoints?limit=100')).json.items.map((e: { name: string }) => e.name) as string[];
    const watched = await suite.openPage({ viewport: PHONE });
    const { page } = watched;
    const asked: string[] = [];
    page.on('request', (request) => {
      const stats = statsAsked(request);
      if (stats !== undefined) asked.push(stats);
    });

    // Act
    await page.goto(suite.consoleUrl);
    await page.locator(`tr[data-endpoint="${listed[listed.length - 1]}"]`).waitFor();
    await eventually('every row to show its figures', async () => ((await page.locator('tbody td[data-figure]', { hasText: '…' }).count()) === 0 ? true : undefined), {
      timeoutMs: 30_000,
      describe: async () => `${await page.locator('tbody td[data-figure]', { hasText: '…' }).count()} figures still "…"`,
    });
    const rows = await page.locator('tbody tr[data-endpoint]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-endpoint')));
    const widths = await page.locator('html').evaluate((root) => ({ page: root.scrollWidth, view: root.clientWidth }));

    // Assess
    expect(listed.length).toBeGreaterThanOrEqual(30);
    expect(rows).toEqual(listed);
    for (const name of listed) {
      expect(await figure(page, name, 'delivered-1h').textContent(), name).toMatch(/^(\d+|n\/a)$/);
      expect(await figure(page, name, 'dead-now').textContent(), name).toMatch(/^≥? ?\d+$/);
    }
    // Each endpoint's last hour and 24 h once: no read started again before the one before answered.
    expect([...asked].sort()).toEqual(listed.flatMap((name) => [`${name} 1h`, `${name} 24h`]).sort());
    expect(widths.page).toBeLessThanOrEqual(widths.view);
  });
});
