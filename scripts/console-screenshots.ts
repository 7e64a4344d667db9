/**
 * The console's screenshots for the docs (`npm run console:screenshots`): starts the sandbox (the
 * demo's two endpoints) with one more endpoint of the owner `acme-corp` on a receiver that refuses
 * some events and fails others once, lets deliveries flow for a while, then opens the console in
 * headless Chromium and writes docs/console/<page>.png:
 *
 *   overview.png      Overview, 1280x800          endpoint.png      one endpoint (partner-returns)
 *   overview-390.png  Overview, 390 px wide       lookup.png        Lookup, an event with a retry and a dead delivery
 *   endpoints.png     Endpoints                   dead-letters.png  Dead letters
 *   portal.png        portal mode, from a portal link for acme-corp
 *
 * Each page is shown once its requests are done. A rule the page breaks (a request to another
 * origin, a console error: test/helpers/chromium.ts) is printed, and the script exits 1.
 *
 * Options: --out <dir> (default docs/console), --flow-seconds <n> (default 10).
 */
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Browser } from 'playwright-core';
import { DESKTOP, launchChromium, openWatchedPage, PHONE, type ConsolePage } from '../test/helpers/chromium';
import { startSandboxProcess, type SandboxProcess } from '../test/helpers/sandbox';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OWNER = 'acme-corp';
const PARTNER = 'partner-returns';
const STATUSES = ['in_transit', 'out_for_delivery', 'delivered', 'exception'] as const;

/**
 * The partner's receiver: refuses (400, dead at once) every event whose number ends in 7, fails the
 * first attempt (503, retried) of those ending in 3, and takes the rest.
 */
async function startPartnerReceiver(): Promise<{ url: string; server: Server }> {
  const attempts = new Map<string, number>();
  const server = createServer((req, res) => {
    const id = req.headers['webhook-id'];
    const key = Array.isArray(id) ? id[0]! : (id ?? '');
    req.resume();
    req.once('end', () => {
      const seen = (attempts.get(key) ?? 0) + 1;
      attempts.set(key, seen);
      const status = key.endsWith('7') ? 400 : key.endsWith('3') && seen === 1 ? 503 : 200;
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook`, server };
}

interface Api {
  call(method: string, path: string, body?: unknown): Promise<any>;
}

function apiOf(sandbox: SandboxProcess): Api {
  const { apiUrl, apiToken } = sandbox.ready;
  return {
    async call(method, path, body) {
      const response = await fetch(`${apiUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${apiToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`);
      return text === '' ? undefined : JSON.parse(text);
    },
  };
}

/** The event ID of the first dead delivery to `endpoint` (a page of the listing may be empty and have a next). */
async function firstDead(api: Api, endpoint: string): Promise<string | undefined> {
  let cursor: string | null = null;
  for (let page = 0; page < 50; page++) {
    const query: string = new URLSearchParams({ endpoint, ...(cursor === null ? {} : { cursor }) }).toString();
    const answer = (await api.call('GET', `/v1/dead?${query}`)) as { items: { eventId: string }[]; next: string | null };
    if (answer.items[0] !== undefined) return answer.items[0].eventId;
    cursor = answer.next;
    if (cursor === null) return undefined;
  }
  return undefined;
}

/** A second's worth of events: shipments of carrier acme and another, each status in turn. */
function eventsFor(second: number): object[] {
  return Array.from({ length: 6 }, (_, i) => {
    const n = second * 6 + i;
    return {
      id: `evt_${String(n).padStart(4, '0')}`,
      shipmentId: `shp_${String(100 + (n % 9)).padStart(4, '0')}`,
      status: STATUSES[n % STATUSES.length],
      occurredAt: new Date().toISOString(),
      data: { carrier: n % 3 === 0 ? 'globex' : 'acme' },
    };
  });
}

interface Shot {
  readonly file: string;
  /** The URL holding the credential in its fragment: READY's consoleUrl, or a portal link. */
  readonly open: string;
  /** The page's route (`#/endpoints`), taken after the credential; none: the page it opens on. */
  readonly route?: string;
  readonly viewport: { readonly width: number; readonly height: number };
}

/** Opens the shot's page in a watched tab, waits for its requests to settle, and writes its file. */
async function shoot(browser: Browser, origin: string, shot: Shot, out: string, problems: string[]): Promise<void> {
  const file = join(out, shot.file);
  const watched: ConsolePage = await openWatchedPage(browser, origin, { viewport: shot.viewport });
  const { page } = watched;
  try {
    await page.goto(shot.open);
    await page.locator('main h1').first().waitFor({ timeout: 15_000 });
    if (shot.route !== undefined) {
      await page.goto(`${origin}/console/${shot.route}`);
      await page.locator('main h1').first().waitFor({ timeout: 15_000 });
    }
    await page.waitForLoadState('networkidle');
    // The chart sizes itself to its box after the first paint.
    await page.waitForTimeout(500);
    await page.screenshot({ path: file });
    process.stdout.write(`wrote ${relative(ROOT, file)}\n`);
  } finally {
    problems.push(...watched.problems().map((problem) => `${shot.file}: ${problem}`));
    await watched.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string', default: 'docs/console' }, 'flow-seconds': { type: 'string', default: '10' } } });
  const out = resolve(ROOT, values.out);
  const flowSeconds = Number(values['flow-seconds']);
  if (!Number.isInteger(flowSeconds) || flowSeconds < 1) throw new Error('--flow-seconds must be a whole number of seconds');
  mkdirSync(out, { recursive: true });

  const partner = await startPartnerReceiver();
  let sandbox: SandboxProcess | undefined;
  let browser: Browser | undefined;
  try {
    sandbox = await startSandboxProcess();
    const api = apiOf(sandbox);
    const origin = sandbox.ready.apiUrl;
    await api.call('POST', '/v1/endpoints', {
      name: PARTNER,
      url: partner.url,
      eventTypes: ['shipment.delivered', 'shipment.exception', 'shipment.out_for_delivery'],
      owner: OWNER,
      retrySchedule: [1, 2],
      maxAttempts: 3,
    });

    process.stdout.write(`sending events for ${flowSeconds} s\n`);
    for (let second = 0; second < flowSeconds; second++) {
      await api.call('POST', '/v1/events', { events: eventsFor(second) });
      await new Promise((done) => setTimeout(done, 1000));
    }
    // The retries (1 s, 2 s) and the last deliveries.
    await new Promise((done) => setTimeout(done, 5000));

    // An event the partner refused (dead) that also went to the demo's endpoints: delivered to the
    // ones and dead at the other, for Lookup.
    const lookedUp = await firstDead(api, PARTNER);
    if (lookedUp === undefined) throw new Error(`no delivery to ${PARTNER} is dead after ${flowSeconds} s of events`);
    const link = (await api.call('POST', '/v1/portal-links', { owner: OWNER, ttlSeconds: 3600 })) as { url: string };

    browser = await launchChromium();
    const problems: string[] = [];
    const operator = sandbox.ready.consoleUrl;
    const shots: Shot[] = [
      { file: 'overview.png', open: operator, viewport: DESKTOP },
      { file: 'overview-390.png', open: operator, viewport: PHONE },
      { file: 'endpoints.png', open: operator, route: '#/endpoints', viewport: DESKTOP },
      { file: 'endpoint.png', open: operator, route: `#/endpoints/${PARTNER}`, viewport: DESKTOP },
      { file: 'lookup.png', open: operator, route: `#/lookup?id=${encodeURIComponent(lookedUp)}`, viewport: DESKTOP },
      { file: 'dead-letters.png', open: operator, route: '#/dead', viewport: DESKTOP },
      { file: 'portal.png', open: link.url, viewport: DESKTOP },
    ];
    for (const shot of shots) {
      try {
        await shoot(browser, origin, shot, out, problems);
      } catch (error) {
        // A page not written yet: the others are still worth having.
        problems.push(`${shot.file}: not written: ${(error as Error).message.split('\n')[0]}`);
      }
    }

    if (problems.length > 0) {
      // The API's own account of a 500: its error lines (IDs and the error, never a request's content).
      const errors = sandbox.stderr().filter((line) => line.startsWith('api: ') && line.includes('"level":"error"'));
      process.stderr.write(`the console broke its rules:\n${[...problems, ...errors].map((line) => `  ${line}`).join('\n')}\n`);
      process.exitCode = 1;
    }
  } finally {
    await browser?.close();
    await sandbox?.stop('SIGKILL');
    partner.server.closeAllConnections();
    await new Promise((done) => partner.server.close(done));
  }
}

await main();
