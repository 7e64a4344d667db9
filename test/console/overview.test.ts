/**
 * The console's Overview in a real headless Chromium against a real sandbox (the demo's two
 * endpoints, carrier-acme and notifications): each endpoint's row with its counts, the per-minute
 * chart, an update without a reload when a delivery is made after the page loaded, readable at
 * 390 px, in portal mode the owner's endpoints alone, and metrics that cannot be read said so
 * where their figures would be.
 */
import { existsSync, renameSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { metricsFileFor } from '../../sandbox/metric-sink';
import { PHONE, useConsole } from '../helpers/console-browser';

// Recovery once an hour rather than every 5 s: each run's metric document rewrites the sink's
// file, which the metrics test moves away for the length of the test.
const suite = useConsole({ setUp: async () => ({ env: { HANDOFF_RECOVERY_INTERVAL_MS: '3600000' } }) });

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
    if (states.length === 2 && states.every((state) => state === 'delivered')) return;
    if (Date.now() > deadline) throw new Error(`${id} was not delivered to both demo endpoints within 30 s (${JSON.stringify(states)})`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
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

describe('the Overview in Chromium', { timeout: 90_000 }, () => {
  it("shows the demo's endpoints with their state, health and counts, and the chart of the last hour", async () => {
    await deliver('evt_overview_1');
    await apiDelivered('carrier-acme', 1);
    await apiDelivered('notifications', 1);

    const { page } = await suite.openConsole();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await figure(page, 'carrier-acme', 'delivered-1h').waitFor();

    const rows = await page.locator('tbody tr[data-endpoint]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-endpoint')));
    expect(rows).toEqual(expect.arrayContaining(['carrier-acme', 'notifications']));
    for (const endpoint of ['carrier-acme', 'notifications']) {
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
    expect(await page.locator('p.overview-status').textContent()).toMatch(/^Updated .+ · every 10 s/);
  });

  it('updates without a reload: a delivery made after the page loaded shows in its counts and chart', async () => {
    const { page } = await suite.openConsole();
    await figure(page, 'carrier-acme', 'delivered-1h').waitFor();
    const before = await figureNumber(page, 'carrier-acme', 'delivered-1h');
    const updatedBefore = await page.locator('p.overview-status').textContent();
    // A mark on the window: a reload would lose it.
    await page.evaluate(() => {
      (globalThis as { overviewMark?: number }).overviewMark = 1;
    });

    await deliver('evt_overview_2');
    await apiDelivered('carrier-acme', before + 1);

    await expect.poll(() => figureNumber(page, 'carrier-acme', 'delivered-1h'), { timeout: 25_000, interval: 250 }).toBeGreaterThan(before);
    expect(await page.evaluate(() => (globalThis as { overviewMark?: number }).overviewMark)).toBe(1);
    expect(await page.locator('p.overview-status').textContent()).not.toBe(updatedBefore);
    const label = (await page.getByRole('img', { name: /delivered and/ }).getAttribute('aria-label')) ?? '';
    expect(Number(/(\d+) delivered/.exec(label)?.[1])).toBeGreaterThanOrEqual(before + 2);
  });

  it('reads at 390 px wide: the page does not scroll sideways (the table scrolls in its frame)', async () => {
    const { page } = await suite.openConsole(undefined, { viewport: PHONE });
    await figure(page, 'carrier-acme', 'delivered-1h').waitFor();
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
    await figure(page, 'overview-portal', 'delivered-1h').waitFor();
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
    // The sink writes 500 ms after the last document it took: nothing is pending after 600 ms without traffic.
    await new Promise((resolve) => setTimeout(resolve, 600));
    renameSync(file, `${file}.away`);
    try {
      const stats = await suite.api('GET', '/v1/stats?endpoint=carrier-acme&since=1h');
      const minutes = await suite.api('GET', '/v1/stats/minutes?since=1h');
      expect(stats.json.metricsError).toEqual(expect.any(String));
      expect(minutes.json.metricsError).toEqual(expect.any(String));

      const { page } = await suite.openConsole();
      await figure(page, 'carrier-acme', 'delivered-1h').waitFor();
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
});
